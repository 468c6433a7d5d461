"""The two closed-loop experiments on bmv2: the paper's two-flow test (its Fig. 9) and a
Ring-AllReduce of 4 hosts with one slow hop. Each run allocates a fresh job through the
controller, drives the emulated hosts, reads the job's counters back through the controller and
releases the job, so runs are independent and every run starts from the contract's zero state.

Variants: "baseline" is the same program with Symphony switched off through the controller
(the job's k = 0: its state is still tracked, no packet gets a Symphony mark; queue marking
stays on); "k=..." is Symphony with that k (the paper's policy); "gateG-kK" is Symphony with
k = K behind the backlog gate G (JobParams.gate_depth: a mark leaves only from an egress queue
at least G packets deep; docs/policy-study.md).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from evaluation.fabric.dcqcn import Dcqcn
from evaluation.hosts import calibration as cal
from evaluation.hosts.calibration import Stalls
from evaluation.hosts.dcqcn import DEFAULT_PROFILE, Scaled, host_profile
from evaluation.hosts.losses import Losses, Snapshot
from evaluation.hosts.nic import RT_PRIORITY, Fabric, Host, ReceiverQP, SenderQP, StepLog
from evaluation.hosts.testbed import Testbed

PAYLOAD = 1024  # RoCE MTU 1024: 1082-byte frames on the wire (1098 with a RETH)
T_WIN_REAL_US = 100.0  # the paper's T_win
# A run's worst host lateness must stay below this fraction of the shortest scaled DCQCN period
# (the CNP interval, then the timers): docs/experiments.md, "Spoiled runs".
LATENESS_FRACTION = 0.5
# A run in which nothing was sent or received for this long, with nothing left to send, lost a
# frame it waits for (no retransmission): it ends there rather than at its time limit.
STALL_S = 1.0


@dataclass(frozen=True)
class Variant:
    name: str
    k: float  # 0 = Symphony off (baseline)
    gate_depth: int = 0  # 0 = the paper's policy


BASELINE = Variant("baseline", 0.0)


def variants(ks: list[float], gates: Sequence[tuple[int, float]] = ()) -> list[Variant]:
    """The baseline, the paper's policy at each k, and each (gate, k) of `gates`."""
    return [
        BASELINE,
        *(Variant(f"k={k:g}", k) for k in ks),
        *(Variant(f"gate{g}-k{k:g}", k, g) for g, k in gates),
    ]


def parse_gates(text: str) -> list[tuple[int, float]]:
    """``"8/0.001,4/0.01"`` -> [(8, 0.001), (4, 0.01)]: gate variants as the CLI names them."""
    out = []
    for item in filter(None, text.split(",")):
        g, slash, k = item.partition("/")
        if not slash:
            raise ValueError(f"gate variant {item!r}: expected GATE/K, e.g. 8/0.001")
        out.append((int(g), float(k)))
    return out


@dataclass(frozen=True)
class Setup:
    """What is fixed across the runs of one experiment session."""

    line_pps: float  # each emulated link: bottleneck queue rate and NIC line rate
    dcqcn: Dcqcn = field(default_factory=lambda: host_profile(DEFAULT_PROFILE))  # the NIC
    rt_priority: int = RT_PRIORITY  # the hosts' loop under SCHED_FIFO (0: normal scheduler)

    def scaled(self) -> Scaled:
        return Scaled.of(self.dcqcn, self.line_pps, PAYLOAD + 58)

    def t_win_us(self) -> float:
        return self.scaled().scaled_us(T_WIN_REAL_US)

    def lateness_limit_ms(self) -> float:
        p = self.scaled()
        return LATENESS_FRACTION * p.timer_s * 1e3

    def at(self, factor: float) -> Setup:
        """The same setup at `factor` x its link rate (the calibration's plan)."""
        return replace(self, line_pps=self.line_pps * factor)

    def settle_quiet_s(self, slowest_pps: float) -> float:
        """How long the counters must stay still before a frame still missing is taken as lost:
        many packet gaps of the slowest queue, and longer than a bmv2 stall on a busy machine."""
        return max(0.3, 20 / slowest_pps)


def _fabric(tb: Testbed, setup: Setup, ports: list[int], seed: int) -> Fabric:
    """The hosts behind `ports`, one event loop."""
    hosts = [Host(p, tb.env.host_if(p)) for p in ports]
    return Fabric(hosts, setup.scaled(), payload=PAYLOAD, seed=seed, rt_priority=setup.rt_priority)


def _open(tb: Testbed, fab: Fabric) -> Snapshot:
    """Open the hosts' sockets; the counters before the run."""
    assert tb.meter is not None
    fab.open()
    return tb.meter.snapshot()


def _measured(tb: Testbed, fab: Fabric, before: Snapshot, quiet_s: float) -> Losses:
    """The run's frames, once settled: where each lost one went (evaluation/hosts/losses.py)."""
    assert tb.meter is not None
    return tb.meter.settle(before, fab.drain, quiet_s=quiet_s)


def _harness_stats(fab: Fabric, losses: Losses) -> dict:
    return {
        **losses.row(),
        "send_errors": fab.send_errors,
        "unexpected_frames": fab.unexpected,
        "max_lag_ms": max((qp.max_lag for qp in fab.senders.values()), default=0.0) * 1e3,
        "realtime": fab.realtime,
        # for the calibration (calibration.Stalls); not written to the CSVs
        "_late": fab.late_log,
        "_loop_s": fab.loop_s,
        "_sends": sum(qp.sent for qp in fab.senders.values()),
    }


def _flow_stats(prefix: str, qp: SenderQP, rx: ReceiverQP, msg: StepLog) -> dict:
    return {
        f"{prefix}_start_s": msg.first_tx,
        f"{prefix}_end_s": msg.last_rx,
        f"{prefix}_fct_s": msg.last_rx - msg.first_tx,
        f"{prefix}_sent": qp.sent,
        f"{prefix}_received": rx.received,
        f"{prefix}_lost": qp.sent - rx.received,
        f"{prefix}_ce": rx.ce,
        f"{prefix}_cnps": qp.rp.cnps,
        f"{prefix}_max_lag_ms": qp.max_lag * 1e3,
        f"{prefix}_late_frac": qp.late_sends / max(qp.sent, 1),
    }


# -- Experiment 1: two flows, B one step ahead, A started late ------------------------------
def run_pair(
    tb: Testbed,
    setup: Setup,
    variant: Variant,
    *,
    offset: float,
    packets: int,
    seed: int,
    name: str,
    keep_trace: bool = False,
) -> dict:
    """Flow B (step 1, one step ahead) starts at 0; flow A (step 0, lagging) starts `offset`
    seconds later; both go from their own host through switch port 2 to host 2 (port 2's
    egress queue is the bottleneck). Returns one row of measurements."""
    tb.set_rates({0: setup.line_pps, 1: setup.line_pps, 2: setup.line_pps})
    job = tb.allocate(name, k=variant.k, gate_depth=variant.gate_depth, t_win_us=setup.t_win_us())
    fab = _fabric(tb, setup, [0, 1, 2], seed)
    try:
        before = _open(tb, fab)
        b = fab.connect("B", 1, 2, tag=job)
        a = fab.connect("A", 0, 2, tag=job)
        msgs: dict[str, StepLog] = {}

        def start_b(now: float) -> None:
            msgs["B"] = fab.post(b, step=1, packets=packets, now=now)

        def start_a(now: float) -> None:
            msgs["A"] = fab.post(a, step=0, packets=packets, now=now)

        def done(_now: float) -> bool:
            return len(msgs) == 2 and all(m.received == m.packets for m in msgs.values())

        def over(now: float) -> bool:
            return done(now) or (len(msgs) == 2 and fab.quiet_for(now) > STALL_S)

        limit = 6 * packets / setup.line_pps + offset + 5
        end = fab.run(over, timers=[(0.0, start_b), (offset, start_a)], limit_s=limit)
        losses = _measured(tb, fab, before, setup.settle_quiet_s(setup.line_pps))
        live = tb.live(name)
    finally:
        fab.close()
        tb.release(name)
    rx = {r.name: r for r in fab.receivers.values()}
    row = {
        "variant": variant.name,
        "k": variant.k,
        "gate_depth": variant.gate_depth,
        "offset_s": offset,
        "seed": seed,
        "job_id": job,
        "complete": done(end),
        "switch_packets": live.packets,
        "symphony_marks": live.marks,
        "queue_marks": live.queue_marks,
        "alpha_end": live.alpha,
        **_harness_stats(fab, losses),
    }
    for f, qp in (("A", a), ("B", b)):
        if f in msgs:
            row |= _flow_stats(f, qp, rx[f], msgs[f])
    if row["complete"]:
        row["overlap_s"] = max(
            0.0, min(row["A_end_s"], row["B_end_s"]) - max(row["A_start_s"], row["B_start_s"])
        )
    if keep_trace:
        row["_trace"] = {
            "arrivals": {f: rx[f].arrivals for f in ("A", "B")},
            "rates": {f: qp.rate_log for f, qp in (("A", a), ("B", b))},
        }
    return row


def run_alone(tb: Testbed, setup: Setup, *, packets: int, seed: int, name: str) -> dict:
    """One flow alone through the bottleneck: the 'ideal' reference (its completion time)."""
    tb.set_rates({0: setup.line_pps, 2: setup.line_pps})
    job = tb.allocate(name, k=0.0, t_win_us=setup.t_win_us())
    fab = _fabric(tb, setup, [0, 2], seed)
    try:
        before = _open(tb, fab)
        a = fab.connect("A", 0, 2, tag=job)
        msg = fab.post(a, step=0, packets=packets, now=0.0)
        fab.run(
            lambda t: msg.received == msg.packets or fab.quiet_for(t) > STALL_S,
            limit_s=4 * packets / setup.line_pps + 5,
        )
        losses = _measured(tb, fab, before, setup.settle_quiet_s(setup.line_pps))
    finally:
        fab.close()
        tb.release(name)
    rx = next(iter(fab.receivers.values()))
    stats = _flow_stats("A", a, rx, msg)
    return {
        "seed": seed,
        "complete": msg.received == msg.packets,
        # Alone, the flow runs at line rate: longer than its line time means bmv2 did not keep
        # its queue rate (runs.judge spoils the run past runs.LINK_STRETCH_LIMIT).
        "link_stretch": stats["A_fct_s"] / (packets / setup.line_pps),
        **_harness_stats(fab, losses),
        **stats,
    }


# How long one attempt's loop runs, for the calibration's forecast (calibration.Demand): the
# medians of docs/experiments.md's runs at 4000 / 2500 packets/s, in units of the line time.
ALONE_LINE_TIMES = 1.0  # one flow: its line time
PAIR_LINE_TIMES = 2.2  # two flows of N packets through one port: 2 N at least, B slowed
RING_BOUND_TIMES = 1.05  # the ring: its lockstep bound (9.1 s against 8.64 s)


def pair_attempt_s(packets: int, line_pps: float) -> float:
    return PAIR_LINE_TIMES * packets / line_pps


def ring_attempt_s(chunk: int, line_pps: float, slowdown: float, nodes: int = 4) -> float:
    return RING_BOUND_TIMES * 2 * (nodes - 1) * 2 * chunk * slowdown / line_pps


def calibrate(tb: Testbed, setup: Setup, *, seconds: float, packets: int, seed: int) -> Stalls:
    """The calibration (calibration.py): baseline two-flow runs at `setup`'s rate, both flows
    from the start, until `seconds` of loop time were measured; every late send logged."""
    return cal.measure(
        lambda n: run_pair(
            tb, setup, BASELINE, offset=0.0, packets=packets, seed=seed, name=f"calibrate-{n}"
        ),
        seconds,
        setup.line_pps,
    )


# -- Experiment 2: Ring-AllReduce of 4 hosts ------------------------------------------------
@dataclass
class RingResult:
    row: dict
    intervals: list[tuple[float, float, int]]  # (first_tx, last_rx, step) of every message


def step_overlap(intervals: list[tuple[float, float, int]], t: float) -> int:
    """Distinct steps among the messages on the wire at time t (paper Fig. 2a)."""
    return len({s for a, b, s in intervals if a <= t < b})


def overlap_series(
    intervals: list[tuple[float, float, int]], end: float, points: int = 400
) -> list[tuple[float, int]]:
    return [(end * i / points, step_overlap(intervals, end * i / points)) for i in range(points)]


def run_ring(
    tb: Testbed,
    setup: Setup,
    variant: Variant,
    *,
    chunk: int,
    slow_port: int,
    slowdown: float,
    jitter_s: float,
    seed: int,
    name: str,
    nodes: int = 4,
) -> RingResult:
    """A Ring-AllReduce over `nodes` hosts as two counter-rotating rings (two channels of one
    job, each reducing half of the buffer): 2(N-1) steps per channel, one chunk per step; a
    node starts step s+1 of a channel when it has received step s of that channel from its
    predecessor. Every switch port's egress is an emulated link at line rate except
    `slow_port`, whose rate is divided by `slowdown`. Node start times are jittered uniformly
    in [0, jitter_s] (the small skews that the paper's snowball starts from)."""
    rates = {i: setup.line_pps for i in range(nodes)}
    rates[slow_port] = setup.line_pps / slowdown
    tb.set_rates(rates)
    job = tb.allocate(name, k=variant.k, gate_depth=variant.gate_depth, t_win_us=setup.t_win_us())
    rng = random.Random(seed)
    fab = _fabric(tb, setup, list(range(nodes)), seed)
    steps = 2 * (nodes - 1)
    qps: dict[tuple[int, int], SenderQP] = {}  # (channel, node) -> its QP to the successor
    try:
        before = _open(tb, fab)
        for c, d in ((0, 1), (1, -1)):
            for i in range(nodes):
                qps[c, i] = fab.connect(f"c{c}n{i}", i, (i + d) % nodes, tag=job)
        channel_of = {qp.qpn: c for (c, _i), qp in qps.items()}
        delivered = [0]
        started: set[int] = set()
        early: dict[int, list[tuple[int, int]]] = {i: [] for i in range(nodes)}

        def on_delivered(rx: ReceiverQP, msg: StepLog, now: float) -> None:
            delivered[0] += 1
            if msg.step + 1 < steps:
                c, node = channel_of[rx.sender.qpn], rx.host.port
                if node in started:
                    fab.post(qps[c, node], step=msg.step + 1, packets=chunk, now=now)
                else:  # its predecessor's data came before the node itself started
                    early[node].append((c, msg.step + 1))

        fab.on_delivered = on_delivered
        starts = {i: rng.uniform(0, jitter_s) for i in range(nodes)}

        def starter(i: int):
            def go(now: float) -> None:
                started.add(i)
                for c in (0, 1):
                    fab.post(qps[c, i], step=0, packets=chunk, now=now)
                for c, step in early[i]:
                    fab.post(qps[c, i], step=step, packets=chunk, now=now)

            return go

        total = 2 * nodes * steps
        bound = steps * 2 * chunk / rates[slow_port]
        last_start = max(starts.values())
        end = fab.run(
            lambda t: delivered[0] == total or (t > last_start and fab.quiet_for(t) > STALL_S),
            timers=[(t, starter(i)) for i, t in starts.items()],
            limit_s=4 * bound + jitter_s + 10,
        )
        losses = _measured(tb, fab, before, setup.settle_quiet_s(rates[slow_port]))
        live = tb.live(name)
    finally:
        fab.close()
        tb.release(name)
    intervals = [(m.first_tx, m.last_rx, m.step) for qp in qps.values() for m in qp.messages]
    complete = delivered[0] == total
    cct = max(b for _a, b, _s in intervals) if complete else float("nan")
    series = overlap_series(intervals, cct if complete else end)
    sent = sum(qp.sent for qp in qps.values())
    received = sum(r.received for r in fab.receivers.values())
    row = {
        "variant": variant.name,
        "k": variant.k,
        "gate_depth": variant.gate_depth,
        "seed": seed,
        "complete": complete,
        "cct_s": cct,
        "lockstep_bound_s": bound + max(starts.values()),
        "overlap_mean": sum(o for _t, o in series) / len(series),
        "overlap_max": max(o for _t, o in series),
        "sent": sent,
        "received": received,
        "lost": sent - received,
        "ce": sum(r.ce for r in fab.receivers.values()),
        "cnps": sum(r.cnps for r in fab.receivers.values()),
        "symphony_marks": live.marks,
        "queue_marks": live.queue_marks,
        "late_frac": sum(qp.late_sends for qp in qps.values()) / max(sent, 1),
        **_harness_stats(fab, losses),
    }
    return RingResult(row, intervals)


def median(xs: list[float]) -> float:
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return float("nan")
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
