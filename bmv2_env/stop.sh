#!/usr/bin/env bash
# Stop the bmv2 started by start.sh (by its PID) and remove its veth ports (or the interfaces
# SYMPHONY_INTERFACES names). Stopping a switch that is not running is harmless.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$here/env.sh"

pidfile="$SYMPHONY_RUN_DIR/switch.pid"
if [ -f "$pidfile" ]; then
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "bmv2 stopped (pid $pid)"
  fi
  rm -f "$pidfile"
else
  echo "bmv2 not running"
fi

# The Thrift port's guard goes with the switch (start.sh installs it again).
if command -v nft >/dev/null 2>&1; then
  nft delete table inet "$(thrift_guard_table)" 2>/dev/null || true
fi

if [ "${1:-}" != "--keep-ports" ]; then
  if [ -n "$SYMPHONY_INTERFACES" ]; then
    # Deleting one end of a veth pair deletes both; a pair another switch removed is gone already.
    for spec in $SYMPHONY_INTERFACES; do
      ip link del "${spec#*@}" 2>/dev/null || true
    done
  else
    for ((i = 0; i < SYMPHONY_PORTS; i++)); do
      ip link del "$(switch_if "$i")" 2>/dev/null || true
    done
  fi
fi
exit 0
