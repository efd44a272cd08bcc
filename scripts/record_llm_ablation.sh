#!/usr/bin/env bash
# Records FALAT's ablation rows with the LLM judge for more trajectories and merges them into
# tests/fixtures/llm-ablation (see its README). Start the server first:
#
#   source scripts/start_llm_server.sh
#   scripts/record_llm_ablation.sh data/who-and-when/Hand-Crafted/1.json ...
#
# Each trajectory is recorded in a process of its own (the full method, then the ablation rows,
# sharing one recording folder), two trajectories at a time (the server has two slots). A
# trajectory that finishes is appended to the manifest; one stopped half-way is not, and its
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
cat "$work"/done* 2>/dev/null >>"$fixture/manifest.txt" || true
echo "recorded: $(cat "$work"/done* 2>/dev/null | wc -l) trajectories; work folder $work" >&2
