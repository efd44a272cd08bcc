#!/usr/bin/env python3
# Source: the shared case "41-stress-otlp-100k-spans.gen.py" of issue 26 (falat project cases), copied
# unchanged below this note. Writes one 107 MB OTLP/JSON trace of 100,000 spans; `cargo bench --bench
# load` builds the same trace in Rust (benches/load.rs, `otlp_crawler`). Never commit its output.
"""Writes one OTLP/JSON trace with 100,000 spans (OTel GenAI semconv 1.37 attributes) to argv[1].

A long-running crawler agent: one `invoke_agent` root, 49,999 `chat` spans whose output is a
tool call, 49,999 `execute_tool fetch_page` spans, and a final `chat` span with the answer.
Each chat span carries the bounded context it was sent (system instructions + the newest tool
result) as the JSON `gen_ai.input.messages`, as a context-windowed agent does. Every 997th
fetch fails (status ERROR, `error.type`). Deterministic. Stress case for holdout/bugs."""
import json, sys

N_CALLS = 49_999
TID = "0af7651916cd43dd8448eb211c80319c"
T0 = 1760000000_000000000
S = lambda k, v: {"key": k, "value": {"stringValue": v}}
I = lambda k, v: {"key": k, "value": {"intValue": str(v)}}
ROOT = "%016x" % 1
def span(sid, parent, name, t, attrs, status=None):
    s = {"traceId": TID, "spanId": sid, "name": name, "kind": 1,
         "startTimeUnixNano": str(T0 + t * 1_000_000), "endTimeUnixNano": str(T0 + t * 1_000_000 + 400_000),
         "attributes": attrs, "status": status or {"code": 0}}
    if parent:
        s["parentSpanId"] = parent
    return s
with open(sys.argv[1], "w") as f:
    f.write('{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"site-crawler"}}]},'
            '"scopeSpans":[{"scope":{"name":"crawler.agent","version":"3.2.0"},"spans":[\n')
    f.write(json.dumps(span(ROOT, None, "invoke_agent crawler", 0, [
        S("gen_ai.operation.name", "invoke_agent"), S("gen_ai.agent.name", "crawler"), S("gen_ai.provider.name", "openai"),
        S("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Crawl docs.example.org and list every page that links to a 404."}]}]))])))
    last = None
    for k in range(N_CALLS + 1):
        cid = "call_%08d" % k
        inp = [{"role": "user", "parts": [{"type": "text", "content": "Crawl docs.example.org and list every page that links to a 404."}]}]
        if last:
            inp.append(last)
        if k < N_CALLS:
            out = [{"role": "assistant", "parts": [{"type": "tool_call", "id": cid, "name": "fetch_page",
                    "arguments": {"url": "https://docs.example.org/p/%d" % k}}], "finish_reason": "tool_call"}]
        else:
            out = [{"role": "assistant", "parts": [{"type": "text", "content": "No page links to a 404."}], "finish_reason": "stop"}]
        f.write(",\n" + json.dumps(span("%016x" % (2 * k + 2), ROOT, "chat gpt-4o-mini", 2 * k + 1, [
            S("gen_ai.operation.name", "chat"), S("gen_ai.request.model", "gpt-4o-mini"), S("gen_ai.provider.name", "openai"),
            I("gen_ai.usage.input_tokens", 220), I("gen_ai.usage.output_tokens", 18),
            S("gen_ai.system_instructions", json.dumps([{"type": "text", "content": "You crawl sites with fetch_page."}])),
            S("gen_ai.input.messages", json.dumps(inp)), S("gen_ai.output.messages", json.dumps(out))])))
        if k == N_CALLS:
            break
        bad = k % 997 == 996
        result = ("HTTP 404 Not Found: https://docs.example.org/p/%d" % k) if bad else ("200 OK, 14 links, none broken (p/%d)" % k)
        f.write(",\n" + json.dumps(span("%016x" % (2 * k + 3), ROOT, "execute_tool fetch_page", 2 * k + 2, [
            S("gen_ai.operation.name", "execute_tool"), S("gen_ai.tool.name", "fetch_page"), S("gen_ai.tool.call.id", cid),
            S("gen_ai.tool.call.arguments", json.dumps({"url": "https://docs.example.org/p/%d" % k})),
            S("gen_ai.tool.call.result", result)] + ([S("error.type", "HTTPError")] if bad else []),
            {"code": 2, "message": result} if bad else None)))
        last = {"role": "tool", "parts": [{"type": "tool_call_response", "id": cid, "response": result}]}
    f.write("\n]}]}]}\n")
