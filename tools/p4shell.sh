#!/usr/bin/env bash
# Interactive P4Runtime shell (p4runtime-shell) against a running switch, for operators.
#
#   tools/p4shell.sh [GRPC_ADDR] [DEVICE_ID]      (defaults: 127.0.0.1:9559, 0)
#
# p4runtime-shell pins its own protobuf/grpc versions (protobuf < 3.21 in older releases), which
# clash with the controller's (finsy, protobuf 6), so it lives in its own virtualenv,
# .venv-p4shell/, created on first use. It attaches WITHOUT pushing a pipeline (no --config: it
# fetches the P4Info from the switch) and with election id 0,1, below the controller's, so it is
# a backup client: it can read tables, counters and registers (Tofino) but its writes are
# refused, and the controller stays primary. Pass ELECTION_ID=hi,lo to take over on purpose;
# the controller reconciles the switch when it is primary again.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="$here/.venv-p4shell"
addr=${1:-127.0.0.1:9559}
device=${2:-0}
election=${ELECTION_ID:-0,1}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet p4runtime-shell
fi
exec "$venv/bin/python" -m p4runtime_sh --grpc-addr "$addr" --device-id "$device" \
  --election-id "$election"
