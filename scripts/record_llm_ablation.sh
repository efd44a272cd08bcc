#!/usr/bin/env bash
# Records FALAT's ablation rows with the LLM judge for more trajectories and merges them into
# tests/fixtures/llm-ablation (see its README). Start the server first:
#
#   source scripts/start_llm_server.sh
#   scripts/record_llm_ablation.sh data/who-and-when/Hand-Crafted/1.json ...
#
# Each trajectory is recorded in a process of its own (the full method, then the ablation rows,
# sharing one recording folder), two trajectories at a time (the server has two slots). Each
# recording folder starts as a copy of the fixture's exchanges, so only the requests the fixture
# does not hold reach the server (to re-record everything, empty exchanges.jsonl first). A
# trajectory that finishes is added to the manifest, which is then sorted as its header says
# (report part first, each part by steps, then path); one stopped half-way is not, and its
# exchanges are harmless extra lines. Then update the figures in tests/llm_ablation.rs and
# docs/METHODS.md from `falat eval` over the manifest's runs with `--replay`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${FALAT_TEST_LLM_URL:?start the server first: source scripts/start_llm_server.sh}"
fixture=tests/fixtures/llm-ablation
work=$(mktemp -d "${TMPDIR:-/tmp}/falat-record.XXXXXX")
cargo build --release --quiet
bin=target/release/falat
[ -n "${CARGO_TARGET_DIR:-}" ] && bin="$CARGO_TARGET_DIR/release/falat"

# record_one LANE FILE: records one trajectory; prints FILE when it finished.
record_one() {
    local lane=$1 file=$2 dir
    dir=$(mktemp -d "$work/run.XXXXXX")
    mkdir -p "$dir/who-and-when/$(basename "$(dirname "$file")")" "$work/lane$lane"
    [ -f "$work/lane$lane/exchanges.jsonl" ] || cp "$fixture/exchanges.jsonl" "$work/lane$lane/"
    cp "$file" "$dir/who-and-when/$(basename "$(dirname "$file")")/"
    local args=(eval "$dir/who-and-when" --judge llm --llm-url "$FALAT_TEST_LLM_URL" --model smollm2-135m
        --jobs 1 --record "$work/lane$lane" --replay "$work/lane$lane")
    "$bin" "${args[@]}" >/dev/null &&
        "$bin" "${args[@]}" --ablate hierarchy,pruning,verification,research,prior >/dev/null &&
        echo "$file" >>"$work/done$lane"
}

lane_loop() {
    local lane=$1
    shift
    for f in "$@"; do record_one "$lane" "$f" || echo "record_llm_ablation: $f failed" >&2; done
}

files=("$@")
odd=() even=()
for i in "${!files[@]}"; do
    if ((i % 2)); then odd+=("${files[$i]}"); else even+=("${files[$i]}"); fi
done
lane_loop 0 "${even[@]}" &
[ ${#odd[@]} -gt 0 ] && lane_loop 1 "${odd[@]}" &
wait

# Merge: the fixture first (its answers win), then each lane; no request bodies, one line per key.
python3 - "$fixture/exchanges.jsonl" "$work"/lane*/exchanges.jsonl <<'PY'
import json, sys
out = {}
for f in sys.argv[1:]:
    for line in open(f, encoding="utf-8"):
        r = json.loads(line)
        r.pop("request", None)
        out.setdefault(r["key"], r)
with open(sys.argv[1], "w", encoding="utf-8") as w:
    for k in sorted(out):
        w.write(json.dumps(out[k], ensure_ascii=False) + "\n")
print(f"{len(out)} exchanges", file=sys.stderr)
PY
# The manifest: the runs it had and the finished ones, report part first, each part by steps,
# then path (the part comes from falat's own split, as `falat eval --out` reports it).
cat "$work"/done* 2>/dev/null >"$work/done" || true
"$bin" eval data/who-and-when -m random --jobs 2 --out "$work/parts.jsonl" >/dev/null 2>&1
python3 - "$fixture/manifest.txt" "$work/done" "$work/parts.jsonl" <<'PY'
import json, sys
manifest, done, parts = sys.argv[1:]
lines = open(manifest, encoding="utf-8").read().splitlines()
header = [l for l in lines if l.startswith("#")]
runs = [l.strip() for l in lines if l.strip() and not l.startswith("#")]
runs += [l.strip() for l in open(done, encoding="utf-8") if l.strip()]
part = {json.loads(l)["file"]: json.loads(l)["part"] for l in open(parts, encoding="utf-8")}
steps = lambda f: len(json.load(open(f, encoding="utf-8")).get("history") or [])
runs = sorted(dict.fromkeys(runs), key=lambda f: (part.get(f) != "report", steps(f), f))
with open(manifest, "w", encoding="utf-8") as w:
    w.write("".join(h + "\n" for h in header) + "".join(f + "\n" for f in runs))
PY
echo "recorded: $(cat "$work"/done* 2>/dev/null | wc -l) trajectories; work folder $work" >&2
