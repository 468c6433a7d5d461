# Shared settings of the bmv2 environment; sourced by start.sh and stop.sh. Every value can be
# overridden from the environment.
: "${SYMPHONY_PORTS:=4}"                       # switch ports 0..N-1
: "${SYMPHONY_GRPC_ADDR:=127.0.0.1:9559}"      # P4Runtime
: "${SYMPHONY_THRIFT_PORT:=9090}"              # bmv2 runtime API (registers, queues)
: "${SYMPHONY_DEVICE_ID:=0}"
: "${SYMPHONY_RUN_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/run/bmv2}"
: "${SYMPHONY_LOG_LEVEL:=warn}"                # bmv2 log level: trace debug info warn error off
: "${SYMPHONY_SWITCH:=simple_switch_grpc}"
: "${SYMPHONY_START_TIMEOUT_S:=10}"            # how long start.sh waits for both servers (a
                                               # switch under valgrind needs about a minute)
# Egress priority queues per port (simple_switch --priority-queues): data stays in priority 0,
# the ACK class (docs/ack_priority.md) uses priority 1 when a switch's config turns it on, and
# bmv2 drops a frame whose priority is not below this number. The controller's config says it
# again per switch (priority_queues), since it cannot read it from the switch.
: "${SYMPHONY_PRIORITY_QUEUES:=2}"
: "${SYMPHONY_VETH_BASE:=0}"                   # a second switch on one machine: e.g. 20
: "${SYMPHONY_MTU:=9500}"                      # veth MTU; bmv2's capture ring holds 2 MB / (MTU + ~100)
: "${SYMPHONY_INTERFACES:=}"                   # "PORT@IFNAME ...": existing interfaces as the
                                               # ports, instead of SYMPHONY_PORTS veth pairs

# Switch port i is veth(B+2i); its peer veth(B+2i+1) is where tests send and sniff (unless
# SYMPHONY_INTERFACES names the ports).
switch_if() { echo "veth$((SYMPHONY_VETH_BASE + 2 * $1))"; }
host_if() { echo "veth$((SYMPHONY_VETH_BASE + 2 * $1 + 1))"; }

# The toolchain may live under /opt/p4 when built from source.
for d in /opt/p4/bin /usr/local/bin; do
  case ":$PATH:" in *":$d:"*) ;; *) [ -d "$d" ] && PATH="$PATH:$d" ;; esac
done
export PATH

# bmv2's Thrift server listens on every interface and has no bind option; start.sh closes its
# port to everything but loopback with an nftables table of this name, stop.sh deletes it.
thrift_guard_table() { echo "symphony_thrift_${SYMPHONY_THRIFT_PORT}"; }
