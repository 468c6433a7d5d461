"""Where every lost frame went, per run: the frames each bmv2 dropped (its capture, its pipeline,
each egress queue, its output), each veth pair dropped (kernel interface statistics) and each
receiving host socket dropped (PACKET_STATISTICS), and the check that they add up to the frames
the hosts sent minus the frames they received.

Generic over the testbed: a list of switches (Thrift port, switch port -> the interface bmv2
owns) and a list of veth pairs, any end of which may sit in a network namespace. The one-switch
experiment (evaluation/hosts/) and the fabric experiment (several bmv2, hosts in namespaces)
describe their testbed as a `Topology` and use the same `LossMeter`.

How each place is counted (docs/experiments.md, "Where a frame is lost"):

- **queue**: bmv2 drops a frame silently when an egress queue is full (simple_switch ignores its
  queue's push result; Thrift has no drop count). The program counts frames into each queue
  (`enqueued`, by egress port, at the end of ingress) and out of it (`dequeued`, in egress):
  their difference, once the queues are empty, is the queue's drops (p4names.PORT_COUNTERS).
- **capture**: frames the kernel delivered to the switch's interface (its `rx_packets`) that never
  entered the pipeline (`received`, by ingress port): bmv2's packet ring overflowed, i.e. bmv2
  did not keep up (its input buffer blocks when full and the ring behind it fills).
- **pipeline**: frames that entered ingress and were sent to no queue (the program dropped them).
- **output**: frames that left a queue but never reached the kernel (`dequeued` minus the
  interface's `tx_packets` and `tx_dropped`).
- **veth**: frames a veth could not hand to its peer. The kernel counts such a drop as
  `tx_dropped` on the sending end; a drop in the receiving CPU's backlog also as `rx_dropped` on
  the receiving end (the same frame twice), so each direction of a pair counts the larger of the
  two.
- **socket**: frames the receiving host's AF_PACKET socket dropped because it was full
  (`tp_drops`, read by `socket_drops`).

Only the queue drops are a result of the experiment (congestion control lost a frame to an
overflowing queue); every other place is the emulation failing to keep up, a run the harness
spoiled (`Losses.harness`).
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from symphony import p4names
from symphony.switch.thrift_registers import Bmv2Thrift

SOL_PACKET, PACKET_STATISTICS = 263, 6
IF_COUNTERS = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped")
# The places a frame can be lost, in the order a frame meets them; the report's loss columns.
PLACES = ("veth", "capture", "pipeline", "queue", "output", "socket")
RESULT_PLACES = frozenset({"queue"})  # losses that are what the experiment measures


def socket_drops(sock: socket.socket) -> int:
    """Frames the kernel dropped because this AF_PACKET socket's receive buffer was full, since
    the last call (reading PACKET_STATISTICS resets the kernel's count)."""
    _packets, drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return int(drops)


@dataclass(frozen=True, order=True)
class Iface:
    """A kernel network interface, in the root namespace or in `netns`."""

    name: str
    netns: str | None = None

    def __str__(self) -> str:
        return f"{self.netns}:{self.name}" if self.netns else self.name


@dataclass(frozen=True)
class Switch:
    """One bmv2: its Thrift server and, per switch port, the interface bmv2 captures and sends
    on (the switch's end of a veth pair)."""

    name: str
    thrift_port: int
    ports: tuple[tuple[int, Iface], ...]
    thrift_host: str = "127.0.0.1"


@dataclass(frozen=True)
class Link:
    """A veth pair: frames go a -> b and b -> a."""

    a: Iface
    b: Iface


@dataclass(frozen=True)
class Topology:
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]

    def ifaces(self) -> list[Iface]:
        found = {i for link in self.links for i in (link.a, link.b)}
        found |= {i for sw in self.switches for _p, i in sw.ports}
        return sorted(found, key=lambda i: (i.netns or "", i.name))


@dataclass(frozen=True)
class HostCounts:
    """What the hosts themselves counted over a run: every frame they sent (data and CNPs), every
    frame they read from their sockets, and their sockets' drops."""

    sent: int
    received: int
    socket_drops: int


PortCounts = dict[int, tuple[int, int, int]]  # switch port -> (received, enqueued, dequeued)


@dataclass(frozen=True)
class Snapshot:
    ifaces: dict[Iface, dict[str, int]]
    switches: dict[str, PortCounts]

    def minus(self, before: Snapshot) -> Snapshot:
        return Snapshot(
            {i: {k: v - before.ifaces[i][k] for k, v in c.items()} for i, c in self.ifaces.items()},
            {
                s: {p: _minus(c, before.switches[s][p]) for p, c in ports.items()}
                for s, ports in self.switches.items()
            },
        )


def _minus(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@dataclass
class Losses:
    """One run's frames: sent, received, and where the difference went."""

    sent: int
    received: int
    places: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLACES, 0))
    detail: dict[str, int] = field(default_factory=dict)  # "s1 port 2 queue" -> frames

    @property
    def lost(self) -> int:
        return self.sent - self.received

    @property
    def attributed(self) -> int:
        return sum(self.places.values())

    @property
    def unattributed(self) -> int:
        """Frames lost (or found) that no counter explains; 0 when the sum check holds."""
        return self.lost - self.attributed

    @property
    def harness(self) -> int:
        """Frames the emulation lost (every place but the switch queues)."""
        return sum(n for p, n in self.places.items() if p not in RESULT_PLACES)

    def row(self, prefix: str = "frames") -> dict[str, int]:
        """CSV columns: frames sent, received, lost per place, unattributed."""
        return {
            f"{prefix}_sent": self.sent,
            f"{prefix}_received": self.received,
            **{f"lost_{p}": n for p, n in self.places.items()},
            "lost_unattributed": self.unattributed,
            "loss_detail": json.dumps(self.detail, sort_keys=True) if self.detail else "",
        }

    def describe(self) -> str:
        parts = [f"{n} {p}" for p, n in self.places.items() if n]
        if self.unattributed:
            parts.append(f"unattributed {self.unattributed}")
        where = ", ".join(parts) or "none"
        return f"{self.lost} of {self.sent} frames lost: {where}"


def attribute(diff: Snapshot, topo: Topology, hosts: HostCounts) -> Losses:
    """The losses of one run from the counters' change over it (`after.minus(before)`)."""
    out = Losses(sent=hosts.sent, received=hosts.received)

    def add(place: str, where: str, n: int) -> None:
        out.places[place] += n
        if n:
            out.detail[f"{where} {place}"] = n

    for sw in topo.switches:
        counts = diff.switches[sw.name]
        for port, iface in sw.ports:
            received, enqueued, dequeued = counts[port]
            st = diff.ifaces[iface]
            add("capture", f"{sw.name} port {port}", st["rx_packets"] - received)
            add("queue", f"{sw.name} port {port}", enqueued - dequeued)
            add(
                "output",
                f"{sw.name} port {port}",
                dequeued - st["tx_packets"] - st["tx_dropped"],
            )
        add(
            "pipeline",
            sw.name,
            sum(c[0] for c in counts.values()) - sum(c[1] for c in counts.values()),
        )
    for link in topo.links:
        for src, dst in ((link.a, link.b), (link.b, link.a)):
            n = max(diff.ifaces[src]["tx_dropped"], diff.ifaces[dst]["rx_dropped"])
            add("veth", f"{src}->{dst}", n)
    add("socket", "hosts", hosts.socket_drops)
    return out


class LossMeter:
    """Reads the counters of a `Topology`: bmv2's per-port counters over Thrift, the kernel's
    interface statistics (sysfs, or `ip -s -j link` inside a namespace)."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self._thrift: dict[str, Bmv2Thrift] = {}

    def close(self) -> None:
        for t in self._thrift.values():
            t.close()
        self._thrift.clear()

    def __enter__(self) -> LossMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def snapshot(self) -> Snapshot:
        return Snapshot(
            read_ifaces(self.topo.ifaces()),
            {sw.name: self._switch(sw) for sw in self.topo.switches},
        )

    def _switch(self, sw: Switch) -> PortCounts:
        t = self._thrift.get(sw.name)
        if t is None:
            t = self._thrift[sw.name] = Bmv2Thrift(sw.thrift_host, sw.thrift_port)
        names = p4names.PORT_COUNTERS
        return {
            port: (
                t.counter_read(names["received"], port)[1],
                t.counter_read(names["enqueued"], port)[1],
                t.counter_read(names["dequeued"], port)[1],
            )
            for port, _i in sw.ports
        }

    def settle(
        self,
        before: Snapshot,
        drain: Callable[[], HostCounts],
        *,
        quiet_s: float = 0.3,
        limit_s: float = 5.0,
        poll_s: float = 0.01,
    ) -> Losses:
        """The run's losses once nothing is in flight. `drain` reads what the hosts' sockets
        still hold and returns the hosts' counts. A frame still in a queue looks like a queue
        drop until it leaves, so unless every frame is accounted for (nothing lost, nothing in
        flight: the usual end of a run) this waits until no counter has moved for `quiet_s`
        (longer than a packet gap of the slowest queue), at most `limit_s`."""
        start = time.monotonic()
        last: tuple[Snapshot, HostCounts] | None = None
        still_since = start
        while True:
            hosts = drain()
            snap = self.snapshot()
            losses = attribute(snap.minus(before), self.topo, hosts)
            now = time.monotonic()
            if losses.lost == 0 and not any(losses.places.values()):
                return losses
            if last is None or last != (snap, hosts):
                last, still_since = (snap, hosts), now
            elif now - still_since >= quiet_s or now - start >= limit_s:
                return losses
            time.sleep(poll_s)


def read_ifaces(ifaces: Iterable[Iface]) -> dict[Iface, dict[str, int]]:
    """IF_COUNTERS of each interface, now."""
    out: dict[Iface, dict[str, int]] = {}
    by_ns: dict[str | None, list[Iface]] = {}
    for i in ifaces:
        by_ns.setdefault(i.netns, []).append(i)
    for ns, group in by_ns.items():
        if ns is None:
            for i in group:
                base = Path("/sys/class/net") / i.name / "statistics"
                out[i] = {k: int((base / k).read_text()) for k in IF_COUNTERS}
        else:
            links = {
                d["ifname"]: d["stats64"]
                for d in json.loads(
                    subprocess.run(
                        ["ip", "-n", ns, "-s", "-j", "link", "show"],
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                )
            }
            for i in group:
                s = links[i.name]
                out[i] = {
                    "rx_packets": s["rx"]["packets"],
                    "tx_packets": s["tx"]["packets"],
                    "rx_dropped": s["rx"]["dropped"],
                    "tx_dropped": s["tx"]["dropped"],
                }
    return out
