"""Sustainable frame rate through the bmv2 fabric: 3 hops against 1, side by side in one run.

The closed-loop experiments are only meaningful if the emulated links, not the CPU, are the
bottleneck: the link rate must stay below the rate every switch of a path sustains. This brings up
the 2 x 2 fabric (symphony_tools/fabric.py: 4 bmv2 processes, 4 hosts in namespaces), the controller
on it, a tag-mode job on every switch (so every frame runs Symphony's whole path, as in an
experiment; --no-job for plain forwarding), and offers paced RoCEv2 frames (the hosts' own 1082-byte
WRITE_MIDDLE frames, evaluation/hosts/wire.py) at stepped-up rates:

- 1hop: h0 -> h1, through leaf0 alone (the other three switches idle);
- 3hop: h0 -> h2, through leaf0, a spine, leaf1;
- ring: h0 -> h1 -> h2 -> h3 -> h0 at once, each flow at the rate (two of the four flows cross
  a spine): the load of a 4-host ring collective, 8 switch hops per round of frames.

The spine a flow crosses is the one its leaf's ECMP group hashes it to (Topology.path; the bench
prints each). At each rate the three patterns run one after another (their order rotating), each for
--seconds; every frame sent and not received is counted as lost and placed by the experiments' loss
meter (evaluation/hosts/losses.py: veth, a switch's capture, pipeline, queue or output, the
receiving socket; the sum checked). A rate that fails (a loss, or the sender off its schedule by
more than 2 %) is tried up to --tries times (3): on a busy machine another process's burst spoils a
trial, the switch's capacity does not change. A pattern's sustainable rate is the highest with a
clean trial; the summary lists the failed trials below it. A pattern stops after two rates in a row
without a clean trial. One process, one thread, like the experiments' hosts
(evaluation/hosts/nic.py): senders paced with a catch-up of at most 8 frames, receivers drained
between sends; the loop and the switches under SCHED_FIFO at the experiments' priorities
(--rt-priority, --switch-rt-priority; 0 for the normal scheduler). Needs root; uses the fabric's
ports (P4Runtime 9859.., Thrift 9390.., interfaces sf-*) and its own run directory.

    python bench/fabric_rate.py                       # -> build/bench/fabric_rate.csv
    python bench/fabric_rate.py --rates 2000,4000 --seconds 2
"""

from __future__ import annotations

import argparse
import csv
import os
import select
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance import packets as rp  # noqa: E402
from evaluation.hosts import losses, netns, wire  # noqa: E402
from evaluation.hosts.fabric_losses import loss_topology  # noqa: E402
from evaluation.hosts.nic import RT_PRIORITY  # noqa: E402
from evaluation.hosts.testbed import SWITCH_RT_PRIORITY  # noqa: E402
from symphony.client import Client  # noqa: E402
from symphony_tools.daemon_process import ControllerProcess  # noqa: E402
from symphony_tools.fabric import Bmv2Fabric, Host, Topology  # noqa: E402
from symphony_tools.ports import free_port  # noqa: E402
from symphony_tools.testbed import simple_switch_grpc  # noqa: E402

ETH_P_IP = 0x0800
PACKET_OUTGOING = 4
SOL_PACKET, PACKET_IGNORE_OUTGOING = 263, 23
ROCEV2_PORT = 4791
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
    offered: float = 0.0  # per flow, what the senders managed (frames/s)
    max_late_ms: float = 0.0
    load1: float = 0.0  # the machine's 1-minute load average at the trial's end
    # Every frame sent and not received, by place (evaluation/hosts/losses.py).
    losses: losses.Losses = field(default_factory=lambda: losses.Losses(0, 0))

    @property
    def lost(self) -> int:
        return self.losses.lost

    @property
    def kept_up(self) -> bool:
        return self.offered >= KEPT_UP * self.rate

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.kept_up

    @property
    def verdict(self) -> str:
        return "ok" if self.ok else "LOSS" if self.lost else "SENDER BEHIND"


def drain(socks: list[socket.socket]) -> None:
    for s in socks:
        try:
            while s.recv(65535):
                pass
        except BlockingIOError:
            pass
        losses.socket_drops(s)


def run_trial(
    pattern: str, flows: list[Flow], rate: float, seconds: float, meter: losses.LossMeter
) -> Trial:
    n = max(1, round(rate * seconds))
    rx_socks = [f.rx for f in flows]
    drain(rx_socks)
    by_rx = {f.rx.fileno(): f for f in flows}  # one flow per receiving host in every pattern
    for f in flows:
        f.sent = f.received = 0
    before = meter.snapshot()
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
    drops = 0

    def counts() -> losses.HostCounts:
        """The meter's view of the hosts: what they sent, read and their sockets dropped."""
        nonlocal drops
        receive(rx_socks, by_rx)
        drops += sum(losses.socket_drops(s) for s in rx_socks)
        return losses.HostCounts(sum(f.sent for f in flows), sum(f.received for f in flows), drops)

    t = Trial(pattern, rate, len(flows))
    # Until every frame is accounted for, or no counter moved for 0.3 s (the queues drained).
    t.losses = meter.settle(before, counts)
    t.offered = min(
        (f.sent - 1) / (f.last_tx - f.first_tx) if f.last_tx > f.first_tx else rate for f in flows
    )
    t.max_late_ms = late * 1e3
    t.load1 = os.getloadavg()[0]
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


def realtime(priority: int) -> bool:
    """This (the hosts') thread under SCHED_FIFO at `priority` (0: back to normal), as the
    experiments run their hosts' loop (evaluation/hosts/nic.py)."""
    policy = os.SCHED_FIFO if priority > 0 else os.SCHED_OTHER
    try:
        os.sched_setscheduler(0, policy, os.sched_param(priority))
    except OSError:
        return False
    return priority > 0


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
    ap.add_argument(
        "--rt-priority",
        type=int,
        default=RT_PRIORITY,
        help="the hosts' loop under SCHED_FIFO at this priority, as the experiments (0: normal)",
    )
    ap.add_argument(
        "--switch-rt-priority",
        type=int,
        default=SWITCH_RT_PRIORITY,
        help="every bmv2 thread under SCHED_FIFO at this priority, as the experiments (0: normal)",
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
            switch_rt = fabric.set_realtime(args.switch_rt_priority)
            tag = 0
            if not args.no_job:
                with Client(api) as c:
                    reply = c.allocate(
                        "bench", "bench", switches=[s.name for s in fabric.topo.switches]
                    )
                    tag = reply.job.job_id
            hosts_rt = realtime(args.rt_priority)
            print(
                f"fabric 2x2x2 up, job tag {tag or '(none)'}; {args.seconds} s per trial; "
                f"SCHED_FIFO: switches {args.switch_rt_priority if switch_rt else 'no'}, "
                f"hosts {args.rt_priority if hosts_rt else 'no'}"
            )
            socks = Sockets(fabric.topo)
            meter = losses.LossMeter(loss_topology(fabric.topo))
            flows = {p: open_flows(fabric.topo, socks, PATTERNS[p], tag) for p in patterns}
            for p, fl in flows.items():
                print(
                    f"  {p}: "
                    + "; ".join(
                        f"{f.src.name} -> {f.dst.name} via "
                        + ", ".join(fabric.topo.path(f.src, f.dst, 17, 0, ROCEV2_PORT))
                        for f in fl
                    )
                )
            failed = dict.fromkeys(patterns, 0)
            for step, rate in enumerate(rates):
                order = patterns[step % len(patterns) :] + patterns[: step % len(patterns)]
                for p in order:
                    if failed[p] >= 2:
                        continue
                    for _try in range(args.tries):
                        t = run_trial(p, flows[p], rate, args.seconds, meter)
                        trials.append(t)
                        where = (
                            " (" + ", ".join(f"{k} {v}" for k, v in t.losses.detail.items()) + ")"
                            if t.losses.detail
                            else ""
                        )
                        print(
                            f"{rate:7.0f}/s {p:5} offered {t.offered:6.0f}/s late "
                            f"{t.max_late_ms:5.1f} ms load {t.load1:4.1f} {t.verdict:13} "
                            f"{t.losses.describe()}{where}",
                            flush=True,
                        )
                        time.sleep(0.3)
                        if t.ok:
                            break
                    failed[p] = 0 if t.ok else failed[p] + 1
                if all(failed[p] >= 2 for p in patterns):
                    break
            if hosts_rt:
                realtime(0)
            meter.close()
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
                "offered_per_flow",
                "max_late_ms",
                "load1",
                "ok",
                "frames_sent",
                "frames_received",
                *(f"lost_{p}" for p in losses.PLACES),
                "lost_unattributed",
                "loss_detail",
            ]
        )
        for t in trials:
            row = t.losses.row()
            w.writerow(
                [
                    t.pattern,
                    round(t.rate),
                    t.flows,
                    round(t.offered),
                    round(t.max_late_ms, 2),
                    round(t.load1, 2),
                    int(t.ok),
                    row["frames_sent"],
                    row["frames_received"],
                    *(row[f"lost_{p}"] for p in losses.PLACES),
                    row["lost_unattributed"],
                    row["loss_detail"],
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
