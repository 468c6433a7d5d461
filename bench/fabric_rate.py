"""Sustainable frame rate through the bmv2 fabric: 3 hops against 1, side by side in one run.

The closed-loop experiments are only meaningful if the emulated links, not the CPU, are the
bottleneck: the link rate must stay below the rate every switch of a path sustains. This brings
up the 2 x 2 fabric (symphony_tools/fabric.py: 4 bmv2 processes, 4 hosts in namespaces), the
controller on it, a tag-mode job on every switch (so every frame runs Symphony's whole path, as
in an experiment; --no-job for plain forwarding), and offers paced RoCEv2 frames (the hosts'
own 1082-byte WRITE_MIDDLE frames, evaluation/hosts/wire.py) at stepped-up rates:

- 1hop: h0 -> h1, through leaf0 alone (the other three switches idle);
- 3hop: h0 -> h2, through leaf0, spine1, leaf1;
- ring: h0 -> h1 -> h2 -> h3 -> h0 at once, each flow at the rate (two of the four flows cross
  a spine): the load of a 4-host ring collective, 8 switch hops per round of frames.

At each rate the three patterns run one after another (their order rotating), each for
--seconds; every frame sent and not received is counted as lost, beside the drops the receiving
sockets (PACKET_STATISTICS), the fabric's veth interfaces (rx/tx_dropped) and the kernel's input
backlog (softnet_stat) saw, and placed before the first switch whose job packet counter (in its
ingress pipeline) missed it. A rate that fails (a loss, or the sender off its schedule by more
than 2 %) is tried up to --tries times (3): on a busy machine another process's burst
spoils a trial, the switch's capacity does not change. A pattern's sustainable rate is the
highest with a clean trial; the summary lists the failed trials below it. A pattern stops after
two rates in a row without a clean trial. One process, one thread, like the experiments' hosts
(evaluation/hosts/nic.py): senders paced with a catch-up of at most 8 frames, receivers drained
between sends. Needs root; uses the fabric's ports (P4Runtime 9859.., Thrift 9390..,
interfaces sf-*) and its own run directory.

    python bench/fabric_rate.py                       # -> build/bench/fabric_rate.csv
    python bench/fabric_rate.py --rates 2000,4000 --seconds 2
"""

from __future__ import annotations

import argparse
import csv
import os
import select
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance import packets as rp  # noqa: E402
from evaluation.hosts import netns, wire  # noqa: E402
from symphony.client import Client  # noqa: E402
from symphony.p4names import JOB_COUNTERS  # noqa: E402
from symphony_tools.daemon_process import ControllerProcess  # noqa: E402
from symphony_tools.fabric import Bmv2Fabric, Host, Topology, link_names  # noqa: E402
from symphony_tools.ports import free_port  # noqa: E402
from symphony_tools.testbed import simple_switch_grpc  # noqa: E402

ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
SOL_PACKET, PACKET_STATISTICS, PACKET_IGNORE_OUTGOING = 263, 6, 23
SO_RCVBUFFORCE = 33
MAX_BURST = 8  # as evaluation/hosts/nic.py: a late sender catches up by 8 frames at most
PAYLOAD = 1024
KEPT_UP = 0.98  # a step counts only if the senders offered at least this share of the rate
DEFAULT_RATES = (
    "1000,2000,3000,4000,5000,6000,7000,8000,10000,12000,14000,16000,18000,20000,24000,28000,"
    "32000,36000,40000,48000"
)
PATTERNS = {
    "1hop": [(0, 1)],
    "3hop": [(0, 2)],
    "ring": [(0, 1), (1, 2), (2, 3), (3, 0)],
}


@dataclass
class Flow:
    src: Host
    dst: Host
    frames: wire.FlowFrames
    tx: socket.socket
    rx: socket.socket
    sent: int = 0
    received: int = 0
    psn: int = 0
    first_tx: float = 0.0
    last_tx: float = 0.0


@dataclass
class Trial:
    pattern: str
    rate: float  # per flow, frames/s
    flows: int
    sent: int = 0
    received: int = 0
    offered: float = 0.0  # per flow, what the senders managed (frames/s)
    sock_drops: int = 0
    veth_drops: int = 0
    backlog_drops: int = 0
    max_late_ms: float = 0.0
    load1: float = 0.0  # the machine's 1-minute load average at the trial's end
    # Per switch on the paths: frames that should have entered its pipeline and did not
    # (its job packet counter, counted in ingress), i.e. lost before it.
    missing: dict[str, int] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        return self.sent - self.received

    @property
    def kept_up(self) -> bool:
        return self.offered >= KEPT_UP * self.rate

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.kept_up


def veth_drops() -> int:
    total = 0
    for name in link_names():
        if name.startswith("sf-"):
            base = Path(f"/sys/class/net/{name}/statistics")
            total += int((base / "rx_dropped").read_text()) + int((base / "tx_dropped").read_text())
    return total


def backlog_drops() -> int:
    """Frames the kernel dropped machine-wide because a CPU's input backlog was full
    (/proc/net/softnet_stat's second column): where a veth's frames are queued for the peer."""
    with open("/proc/net/softnet_stat") as fh:
        return sum(int(line.split()[1], 16) for line in fh)


def sock_drops(s: socket.socket) -> int:
    """Frames the kernel dropped on this socket since the last call (the count resets)."""
    _packets, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return int(drops)


def drain(socks: list[socket.socket]) -> None:
    for s in socks:
        try:
            while s.recv(65535):
                pass
        except BlockingIOError:
            pass
        sock_drops(s)


class Counters:
    """Each switch's count of the job's frames (its ingress pipeline's job packet counter)."""

    def __init__(self, fabric: Bmv2Fabric, tag: int) -> None:
        self.fabric, self.tag = fabric, tag

    def read(self) -> dict[str, int]:
        if not self.tag:
            return {}
        return {
            sw.name: self.fabric.thrift(sw.name).counter_read(JOB_COUNTERS["packets"], self.tag)[1]
            for sw in self.fabric.topo.switches
        }


def run_trial(
    pattern: str, flows: list[Flow], rate: float, seconds: float, counters: Counters
) -> Trial:
    n = max(1, round(rate * seconds))
    c0 = counters.read()
    rx_socks = [f.rx for f in flows]
    drain(rx_socks)
    by_rx = {f.rx.fileno(): f for f in flows}  # one flow per receiving host in every pattern
    for f in flows:
        f.sent = f.received = 0
    v0, b0 = veth_drops(), backlog_drops()
    gap = 1.0 / rate
    t0 = time.perf_counter() + 0.01
    due = [t0 + i * gap / len(flows) for i in range(len(flows))]  # staggered starts
    late = 0.0
    while True:
        now = time.perf_counter()
        for i, f in enumerate(flows):
            if f.sent >= n:
                continue
            if now - due[i] > MAX_BURST * gap:  # fell behind: lose the credit, as a NIC does
                late = max(late, now - due[i])
                due[i] = now - MAX_BURST * gap
            while f.sent < n and due[i] <= now:
                f.tx.send(f.frames.build(rp.WRITE_MIDDLE, 0, f.psn))
                if f.sent == 0:
                    f.first_tx = now
                f.last_tx = now
                f.psn = (f.psn + 1) & 0xFFFFFF
                f.sent += 1
                due[i] += gap
        receive(rx_socks, by_rx)
        if all(f.sent >= n for f in flows):
            break
        wait = min(d for d, f in zip(due, flows, strict=True) if f.sent < n) - time.perf_counter()
        if wait > 0:
            r, _, _ = select.select(rx_socks, [], [], wait)
            if r:
                receive(r, by_rx)
    # The last frames: until all arrived or nothing came for a second.
    last_seen, got = time.perf_counter(), sum(f.received for f in flows)
    while got < n * len(flows) and time.perf_counter() - last_seen < 1.0:
        r, _, _ = select.select(rx_socks, [], [], 0.1)
        if r:
            receive(r, by_rx)
        now_got = sum(f.received for f in flows)
        if now_got != got:
            got, last_seen = now_got, time.perf_counter()
    t = Trial(pattern, rate, len(flows))
    t.sent = sum(f.sent for f in flows)
    t.received = sum(f.received for f in flows)
    t.offered = min(
        (f.sent - 1) / (f.last_tx - f.first_tx) if f.last_tx > f.first_tx else rate for f in flows
    )
    t.sock_drops = sum(sock_drops(s) for s in rx_socks)
    t.veth_drops = veth_drops() - v0
    t.backlog_drops = backlog_drops() - b0
    t.max_late_ms = late * 1e3
    t.load1 = os.getloadavg()[0]
    c1 = counters.read()
    if c1:
        topo = counters.fabric.topo
        expected: dict[str, int] = {}
        for f in flows:
            for sw in topo.path(f.src, f.dst):
                expected[sw] = expected.get(sw, 0) + f.sent
        t.missing = {sw: want - (c1[sw] - c0[sw]) for sw, want in expected.items()}
    return t


def receive(socks: list[socket.socket], by_rx: dict[int, Flow]) -> None:
    for s in socks:
        flow = by_rx[s.fileno()]
        for _ in range(256):
            try:
                data, addr = s.recvfrom(65535)
            except BlockingIOError:
                break
            # RoCEv2 (UDP 4791) frames that arrived (not this host's own outgoing ones).
            if addr[2] != PACKET_OUTGOING and data[36:38] == b"\x12\xb7":
                flow.received += 1


class Sockets:
    """One sending and one receiving socket per host, opened inside its namespace; the
    receiving one ignores the host's own outgoing frames, so only arrivals fill it."""

    def __init__(self, topo: Topology) -> None:
        self.tx: dict[int, socket.socket] = {}
        self.rx: dict[int, socket.socket] = {}
        for h in topo.hosts:
            self.tx[h.index] = netns.packet_socket(h.ifname, h.netns, proto=0)  # sends only
            rx = netns.packet_socket(h.ifname, h.netns, proto=ETH_P_IP)
            rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
            rx.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            rx.setblocking(False)
            self.rx[h.index] = rx

    def close(self) -> None:
        for s in [*self.tx.values(), *self.rx.values()]:
            s.close()


def open_flows(
    topo: Topology, socks: Sockets, pairs: list[tuple[int, int]], tag: int
) -> list[Flow]:
    out = []
    for k, (a, b) in enumerate(pairs):
        src, dst = topo.host(a), topo.host(b)
        tx, rx = socks.tx[a], socks.rx[b]
        frames = wire.FlowFrames(
            wire.Endpoint(src.ip, src.mac),
            wire.Endpoint(dst.ip, dst.mac),
            dqpn=0x100 + k,
            tag=tag,
            payload_len=PAYLOAD,
        )
        out.append(Flow(src, dst, frames, tx, rx, psn=1000 * k))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default=DEFAULT_RATES, help="frames/s per flow, comma-separated")
    ap.add_argument("--seconds", type=float, default=3.0, help="per trial")
    ap.add_argument("--patterns", default="1hop,3hop,ring")
    ap.add_argument("--no-job", action="store_true", help="no job: frames only forwarded")
    ap.add_argument("--queue-depth", type=int, default=1000, help="as the experiments' testbed")
    ap.add_argument("--headroom", type=float, default=2.0, help="link rate = ring rate / this")
    ap.add_argument(
        "--tries", type=int, default=3, help="trials of a rate until one is lossless, at most"
    )
    ap.add_argument("--out", type=Path, default=ROOT / "build/bench/fabric_rate.csv")
    args = ap.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    patterns = args.patterns.split(",")
    version = subprocess.run(
        [simple_switch_grpc() or "simple_switch_grpc", "--version"], capture_output=True, text=True
    ).stdout.strip()
    load0 = os.getloadavg()
    print(f"bmv2 {version}; load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; 2 cores")

    run = ROOT / "run/fabric-bench"
    fabric = Bmv2Fabric(Topology(2, 2, 2), run)
    api = f"127.0.0.1:{free_port()}"
    trials: list[Trial] = []
    with fabric:
        cfg = fabric.write_config(
            run / "controller.toml",
            api=api,
            metrics=f"127.0.0.1:{free_port()}",
            controller="reconcile_interval_s = 600\ntelemetry_interval_s = 600",
        )
        with ControllerProcess(cfg, api, run / "controller.log") as ctl:
            ctl.wait_ready([s.name for s in fabric.topo.switches])
            fabric.set_queue_depth(args.queue_depth)
            tag = 0
            if not args.no_job:
                with Client(api) as c:
                    reply = c.allocate(
                        "bench", "bench", switches=[s.name for s in fabric.topo.switches]
                    )
                    tag = reply.job.job_id
            print(f"fabric 2x2x2 up, job tag {tag or '(none)'}; {args.seconds} s per trial")
            socks = Sockets(fabric.topo)
            counters = Counters(fabric, tag)
            flows = {p: open_flows(fabric.topo, socks, PATTERNS[p], tag) for p in patterns}
            failed = dict.fromkeys(patterns, 0)
            for step, rate in enumerate(rates):
                order = patterns[step % len(patterns) :] + patterns[: step % len(patterns)]
                for p in order:
                    if failed[p] >= 2:
                        continue
                    for _try in range(args.tries):
                        t = run_trial(p, flows[p], rate, args.seconds, counters)
                        trials.append(t)
                        print(
                            f"{rate:7.0f}/s {p:5} sent {t.sent:7} lost {t.lost:6} (before "
                            + ", ".join(f"{k} {v}" for k, v in t.missing.items())
                            + f"; sockets {t.sock_drops}, veths {t.veth_drops}, "
                            f"backlog {t.backlog_drops}) offered "
                            f"{t.offered:6.0f}/s late {t.max_late_ms:5.1f} ms load {t.load1:4.1f} "
                            f"{'ok' if t.ok else 'LOSS' if t.lost else 'SENDER BEHIND'}",
                            flush=True,
                        )
                        time.sleep(0.3)
                        if t.ok:
                            break
                    failed[p] = 0 if t.ok else failed[p] + 1
                if all(failed[p] >= 2 for p in patterns):
                    break
            socks.close()
    load1 = os.getloadavg()

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "pattern",
                "rate_per_flow",
                "flows",
                "sent",
                "received",
                "lost",
                "sock_drops",
                "veth_drops",
                "backlog_drops",
                "offered_per_flow",
                "max_late_ms",
                "missing_before_switch",
                "load1",
                "ok",
            ]
        )
        for t in trials:
            w.writerow(
                [
                    t.pattern,
                    round(t.rate),
                    t.flows,
                    t.sent,
                    t.received,
                    t.lost,
                    t.sock_drops,
                    t.veth_drops,
                    t.backlog_drops,
                    round(t.offered),
                    round(t.max_late_ms, 2),
                    " ".join(f"{k}={v}" for k, v in t.missing.items()),
                    round(t.load1, 2),
                    int(t.ok),
                ]
            )

    def best(p: str) -> float:
        """The highest rate with a lossless trial (the sender on schedule)."""
        return max((t.rate for t in trials if t.pattern == p and t.ok), default=0.0)

    print(f"\nload average at the end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    sustained = {p: best(p) for p in patterns}
    for p in patterns:
        ts = [t for t in trials if t.pattern == p and t.rate <= sustained[p]]
        bad = [t for t in ts if not t.ok]
        never = sorted({t.rate for t in bad} - {t.rate for t in ts if t.ok})
        print(
            f"sustainable ({p}): {sustained[p]:,.0f} frames/s per flow; at or below it "
            f"{len(bad)} of {len(ts)} trials failed ({sum(t.lost for t in bad)} frames lost, "
            f"{sum(not t.kept_up for t in bad)} with the sender behind)"
            + (f", no clean trial at {', '.join(f'{r:.0f}' for r in never)}" if never else "")
        )
    if sustained.get("1hop") and "3hop" in sustained:
        print(f"ratio 3hop / 1hop = {sustained['3hop'] / sustained['1hop']:.2f}")
    if sustained.get("ring"):
        link = sustained["ring"] / args.headroom
        print(
            f"emulated link rate at {args.headroom:g}x headroom below the ring's: {link:,.0f} "
            "frames/s"
        )
    print(f"CSV: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
