#!/usr/bin/env bash
# Benchmarks against a bmv2 this script starts (and stops again when it started it).
set -euo pipefail
cd "$(dirname "$0")/.."
. bmv2_env/env.sh
venv=${VENV:-.venv}
started=0
if ! [ -f "$SYMPHONY_RUN_DIR/switch.pid" ] || ! kill -0 "$(cat "$SYMPHONY_RUN_DIR/switch.pid")" 2>/dev/null; then
  bmv2_env/start.sh
  started=1
fi
trap '[ $started = 1 ] && bmv2_env/stop.sh >/dev/null' EXIT
"$venv/bin/python" bench/bmv2_rate.py "$@"
