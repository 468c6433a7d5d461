#!/usr/bin/env bash
# Run the PTF suite against a bmv2 this script starts (and stops again when it started it).
# Extra arguments go to ptf, e.g. `scripts/run_ptf.sh test_marking` for one file.
set -euo pipefail
cd "$(dirname "$0")/.."
. bmv2_env/env.sh
venv=${VENV:-.venv}
# The test-side packages (conformance/: packet builders, frame oracle, traces) live at the root.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p run

started=0
if ! [ -f "$SYMPHONY_RUN_DIR/switch.pid" ] || ! kill -0 "$(cat "$SYMPHONY_RUN_DIR/switch.pid")" 2>/dev/null; then
  bmv2_env/start.sh
  started=1
fi
trap '[ $started = 1 ] && bmv2_env/stop.sh >/dev/null' EXIT

ifaces=()
for ((i = 0; i < SYMPHONY_PORTS; i++)); do ifaces+=(--interface "$i@$(host_if "$i")"); done
"$venv/bin/ptf" --test-dir ptf_tests "${ifaces[@]}" \
  --test-params "build_dir='$PWD/build/bmv2';grpc_addr='$SYMPHONY_GRPC_ADDR';thrift_port=$SYMPHONY_THRIFT_PORT;device_id=$SYMPHONY_DEVICE_ID" \
  --log-file run/ptf.log "$@"
