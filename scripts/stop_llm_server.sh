#!/usr/bin/env bash
# Stops the servers started by scripts/start_llm_server.sh (by their PID files only).
venv="${FALAT_LLM_VENV:-/tmp/falat-llm-venv}"
for f in "$venv"/server-*.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null && echo "stopped $(basename "$f" .pid)"
    rm -f "$f"
done
