#!/usr/bin/env bash
# Bring up bmv2 (simple_switch_grpc) with SYMPHONY_PORTS veth ports (or the existing interfaces
# SYMPHONY_INTERFACES names), P4Runtime and Thrift on loopback, and no program: the controller
# (or the PTF base test) pushes the pipeline over P4Runtime. Running it twice is harmless: a
# switch that already answers is left alone.
#
# P4Runtime binds to SYMPHONY_GRPC_ADDR (loopback). The Thrift runtime server (unauthenticated
# table and register writes) binds to every interface and bmv2 has no option against it, so an
# nftables rule, installed before bmv2 starts and removed by stop.sh, resets every connection
# to its port that does not come from a loopback address on the loopback interface.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=env.sh
. "$here/env.sh"

die() { echo "bmv2_env/start.sh: $*" >&2; exit 1; }

command -v "$SYMPHONY_SWITCH" >/dev/null 2>&1 ||
  die "'$SYMPHONY_SWITCH' not found on PATH (install bmv2 with its P4Runtime server: see README.md)"
[ "$(id -u)" = 0 ] || die "creating veth ports needs root"
command -v nft >/dev/null 2>&1 ||
  die "nft not found: install nftables (it closes bmv2's Thrift port to the network)"

mkdir -p "$SYMPHONY_RUN_DIR"
pidfile="$SYMPHONY_RUN_DIR/switch.pid"
logfile="$SYMPHONY_RUN_DIR/switch.log"

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "bmv2 already running (pid $(cat "$pidfile")), P4Runtime $SYMPHONY_GRPC_ADDR"
  exit 0
fi

port_up() {
  # No IPv6 on test ports: router solicitations and MLD reports would be forwarded by the
  # switch and show up as unexpected packets in the tests.
  sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1" || true
  ip link set "$1" mtu "$SYMPHONY_MTU" up
}

ifaces=()
sw_ifaces=()
if [ -n "$SYMPHONY_INTERFACES" ]; then
  # Ports named by the caller (the fabric, symphony_tools/fabric.py, made these veth ends: their
  # peers belong to other switches or to hosts' namespaces, so they are not created here).
  for spec in $SYMPHONY_INTERFACES; do
    intf=${spec#*@}
    [[ $spec == *@* && ${spec%%@*} =~ ^[0-9]+$ ]] || die "SYMPHONY_INTERFACES: '$spec' is not PORT@IFNAME"
    ip link show "$intf" >/dev/null 2>&1 || die "interface $intf (port ${spec%%@*}) does not exist"
    port_up "$intf"
    ifaces+=(-i "$spec")
    sw_ifaces+=("$intf")
  done
  port_names=$SYMPHONY_INTERFACES
else
  for ((i = 0; i < SYMPHONY_PORTS; i++)); do
    sw=$(switch_if "$i") host=$(host_if "$i")
    if ! ip link show "$sw" >/dev/null 2>&1; then
      ip link add "$sw" type veth peer name "$host"
    fi
    port_up "$sw"
    port_up "$host"
    ifaces+=(-i "$i@$sw")
    sw_ifaces+=("$sw")
  done
  port_names="0..$((SYMPHONY_PORTS - 1))"
fi
# With an offload on, libpcap sizes bmv2's capture ring for 64 KB frames: 32 of them. Off, the
# ring holds 2 MB of MTU-sized frames (offload_off.py says why).
python3 "$here/offload_off.py" "${sw_ifaces[@]}" || die "cannot turn the offloads off on ${sw_ifaces[*]}"

grpc_port=${SYMPHONY_GRPC_ADDR##*:}
for p in "$grpc_port" "$SYMPHONY_THRIFT_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    die "port $p is already taken by another process (not our switch)"
  fi
done

# Loopback only for the Thrift port, before bmv2 opens it (idempotent: the table is replaced).
guard=$(thrift_guard_table)
nft delete table inet "$guard" 2>/dev/null || true
nft -f - <<EOF || die "cannot install the nftables rule that guards Thrift port $SYMPHONY_THRIFT_PORT"
table inet $guard {
  chain input {
    type filter hook input priority -10; policy accept;
    tcp dport $SYMPHONY_THRIFT_PORT iifname != "lo" reject with tcp reset
    meta nfproto ipv4 tcp dport $SYMPHONY_THRIFT_PORT ip saddr != 127.0.0.0/8 reject with tcp reset
    meta nfproto ipv6 tcp dport $SYMPHONY_THRIFT_PORT ip6 saddr != ::1 reject with tcp reset
  }
}
EOF

nohup "$SYMPHONY_SWITCH" "${ifaces[@]}" \
  --device-id "$SYMPHONY_DEVICE_ID" \
  --thrift-port "$SYMPHONY_THRIFT_PORT" \
  --log-file "$SYMPHONY_RUN_DIR/bmv2" --log-flush --log-level "$SYMPHONY_LOG_LEVEL" \
  --no-p4 \
  -- --grpc-server-addr "$SYMPHONY_GRPC_ADDR" --priority-queues "$SYMPHONY_PRIORITY_QUEUES" \
  >"$logfile" 2>&1 &
echo $! >"$pidfile"

# Wait until both the P4Runtime and the Thrift server accept connections.
for _ in $(seq 1 $((SYMPHONY_START_TIMEOUT_S * 10))); do
  kill -0 "$(cat "$pidfile")" 2>/dev/null || {
    cat "$logfile" >&2; rm -f "$pidfile"; nft delete table inet "$guard" 2>/dev/null
    die "bmv2 exited at start"
  }
  if (exec 3<>"/dev/tcp/127.0.0.1/$grpc_port") 2>/dev/null &&
     (exec 3<>"/dev/tcp/127.0.0.1/$SYMPHONY_THRIFT_PORT") 2>/dev/null; then
    echo "bmv2 up (pid $(cat "$pidfile")): P4Runtime $SYMPHONY_GRPC_ADDR device $SYMPHONY_DEVICE_ID," \
         "Thrift $SYMPHONY_THRIFT_PORT (loopback only), ports $port_names, log $SYMPHONY_RUN_DIR/bmv2.txt"
    exit 0
  fi
  sleep 0.1
done
die "bmv2 did not answer within $SYMPHONY_START_TIMEOUT_S s (log: $logfile)"
