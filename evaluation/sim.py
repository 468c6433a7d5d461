"""Packet-level, discrete-time (1 tick = 1 us) simulation of M ring all-reduce collectives whose
flows all cross one bottleneck egress port running the Symphony golden model.

Per tick: CNPs due now reach their senders, DCQCN timers run, every sender that has data and
rate tokens puts packets into the port's FIFO (or loses them to drop-tail), then the port
dequeues up to C packets. Each dequeued packet gets the queue-depth RED mark and the golden
model's Symphony decision, ORed as the switch does (`pipeline.ecn_out`); a CE packet delivered
to its receiver triggers a CNP (at most one per QP per `cnp_interval`) that reaches the sender
one RTT later.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from evaluation.dcqcn import Dcqcn, DcqcnParams
from symphony import packets as op
from symphony.model import arithmetic as ar
from symphony.model.params import JobParams, QueueParams
from symphony.model.pipeline import Pipeline, RocePacket, ecn_out
from symphony.model.tables import queue_mark_threshold
from symphony.sizes import BMV2_TICK_NS

TICK_NS = BMV2_TICK_NS  # the golden model runs on bmv2 ticks here
NOT_ECT, ECT0, CE = 0b00, 0b10, 0b11
# Background traffic: a non-RoCE-data opcode (UD SEND_ONLY), no tag and no source entry, so
# the pipeline never tracks it; Non-ECT because it is not congestion controlled.
BG_OPCODE = 0x64
BG_SRC = 0x0AFF0001
RED = QueueParams(k_min=50, k_max=100, p_max=0.2)


@dataclass(frozen=True)
class SimConfig:
    rings: int = 4  # M concurrent collectives, each its own job
    nodes: int = 8  # N nodes per ring; 2(N-1) steps
    chunk: int = 200  # S packets per node per step
    capacity: float = 8.0  # bottleneck C, packets per tick
    line_rate: float = 0.5  # per-QP NIC line rate, packets per tick
    rtt: int = 10  # ticks; CNP feedback delay and retransmission delay after a drop
    cnp_interval: int = 50  # ticks; at most one CNP per QP per interval
    buffer: int = 400  # drop-tail limit of the port, packets
    queue: QueueParams = RED  # the paper's K_min/K_max/P_max
    start_jitter: int = 50  # each node starts at a uniform offset in [0, start_jitter] ticks
    slow_frac: float = 1.0  # load imbalance: node 0 of every ring gets this fraction of line rate
    bg_rate: float = 0.0  # transient background load, fraction of C
    bg_duration: int = 0  # ticks; it starts at a uniform time in the first half of the run
    symphony: JobParams | None = None  # None: baseline, job entries not installed
    max_ticks: int = 2_000_000

    @property
    def steps(self) -> int:
        return 2 * (self.nodes - 1)


@dataclass
class Result:
    cct: int  # ticks until every ring finished its last step
    ring_cct: list[int]
    overlap_mean: float  # time-average, over each ring's lifetime, of distinct steps in flight
    overlap_max: int
    data_sent: int = 0  # transmissions, retransmissions included
    data_delivered: int = 0
    data_dropped: int = 0
    bg_sent: int = 0
    bg_delivered: int = 0
    bg_dropped: int = 0
    symphony_marks: int = 0
    queue_marks: int = 0
    cnps: int = 0
    # Symphony marks on packets whose step was not later than the job's step_min (must be 0).
    marks_not_outpacing: int = 0
    steps_done: list[list[int]] = field(default_factory=list)  # [ring][node] completed steps


class _Qp:
    """One ring node's QP to its successor: the sender side of all its steps."""

    __slots__ = (
        "cc",
        "done",
        "job",
        "node",
        "psn0",
        "retx",
        "ring",
        "sent",
        "src",
        "start_at",
        "step",
        "tokens",
    )

    def __init__(self, ring: int, node: int, cc: Dcqcn, psn0: int, start_at: int) -> None:
        self.ring, self.node, self.cc, self.psn0 = ring, node, cc, psn0
        self.job = ring + 1
        self.src = (10 << 24) | (ring << 8) | (node + 1)
        self.step = -1  # -1: not started; else the step being sent
        self.sent = 0  # next never-sent packet index of the current step
        self.retx: deque[tuple[int, int, int]] = deque()  # (ready tick, step, index)
        self.tokens = 0.0
        self.start_at = start_at
        self.done = False


def simulate(cfg: SimConfig, seed: int) -> Result:
    rng = random.Random(seed)
    steps, nn, chunk = cfg.steps, cfg.nodes, cfg.chunk
    pipe = Pipeline()
    if cfg.symphony is not None:
        action = cfg.symphony.to_action_params(TICK_NS)
        for r in range(cfg.rings):
            pipe.install_job(r + 1, action, tag=True)

    qps: list[_Qp] = []
    for r in range(cfg.rings):
        for i in range(nn):
            rate = cfg.line_rate * (cfg.slow_frac if i == 0 else 1.0)
            cc = Dcqcn(DcqcnParams(line_rate=rate))
            qps.append(_Qp(r, i, cc, rng.getrandbits(24), rng.randint(0, cfg.start_jitter)))
    # delivered[ring][node][step]: packets of that flow that reached node+1.
    delivered = [[[0] * steps for _ in range(nn)] for _ in range(cfg.rings)]
    steps_done = [[0] * nn for _ in range(cfg.rings)]
    in_flight: list[dict[int, int]] = [{} for _ in range(cfg.rings)]  # step -> active flows
    ring_cct = [0] * cfg.rings
    ring_start = [min(q.start_at for q in qps if q.ring == r) for r in range(cfg.rings)]
    overlap_sum = [0] * cfg.rings
    overlap_max = 0

    total_data = cfg.rings * nn * steps * chunk
    bg_start = rng.randint(0, max(1, int(total_data / cfg.capacity / 2)))
    bg_end = bg_start + cfg.bg_duration if cfg.bg_rate > 0 else -1
    bg_tokens = 0.0

    queue: deque[tuple[int, int, int, int]] = deque()  # (qp index or -1 for background, step, k)
    cnp_due: dict[int, list[int]] = {}
    last_cnp = [-(10**9)] * len(qps)
    res = Result(cct=0, ring_cct=ring_cct, overlap_mean=0.0, overlap_max=0)
    rings_left = cfg.rings
    port_credit = 0.0
    n = len(qps)

    def can_start(q: _Qp, t: int) -> bool:
        if q.step < 0:
            return t >= q.start_at
        if q.sent < chunk or q.retx:
            return False
        # Ring data dependency: step s+1 forwards what arrived from the predecessor in step s.
        pred = (q.node - 1) % nn
        return delivered[q.ring][pred][q.step] == chunk

    t = 0
    while rings_left and t < cfg.max_ticks:
        for qi in cnp_due.pop(t, ()):
            qps[qi].cc.on_cnp(t)
        # Senders, in an order rotated every tick so no QP is always first into the FIFO.
        for j in range(n):
            qi = (j + t) % n
            q = qps[qi]
            if q.done:
                continue
            q.cc.tick(t)
            if (q.step < 0 or q.sent >= chunk) and not q.retx:
                if q.step == steps - 1 or not can_start(q, t):
                    q.tokens = 0.0
                    continue
                q.step += 1
                q.sent = 0
                fl = in_flight[q.ring]
                fl[q.step] = fl.get(q.step, 0) + 1
            q.tokens = min(q.tokens + q.cc.rc, 1.0 + q.cc.rc)
            while q.tokens >= 1.0:
                if q.retx and q.retx[0][0] <= t:
                    _, s, k = q.retx.popleft()
                elif q.sent < chunk:
                    s, k = q.step, q.sent
                    q.sent += 1
                else:
                    break
                q.tokens -= 1.0
                res.data_sent += 1
                if len(queue) >= cfg.buffer:
                    res.data_dropped += 1
                    q.retx.append((t + cfg.rtt, s, k))
                else:
                    queue.append((qi, s, k, t))
        if bg_start <= t < bg_end:
            bg_tokens += cfg.bg_rate * cfg.capacity
            while bg_tokens >= 1.0:
                bg_tokens -= 1.0
                res.bg_sent += 1
                if len(queue) >= cfg.buffer:
                    res.bg_dropped += 1
                else:
                    queue.append((-1, 0, 0, t))

        # The bottleneck port.
        port_credit = min(port_credit + cfg.capacity, cfg.capacity + 1.0)
        while port_credit >= 1.0 and queue:
            port_credit -= 1.0
            qi, s, k, _ = queue.popleft()
            depth = len(queue)
            thr = queue_mark_threshold(depth, cfg.queue)
            qmark = thr >= ar.COIN_RANGE or (thr > 0 and rng.getrandbits(24) < thr)
            if qi < 0:
                res.bg_delivered += 1
                pipe.process(RocePacket(src=BG_SRC, step=0, opcode=BG_OPCODE, psn=0, ecn=0), t)
                continue
            q = qps[qi]
            opcode = op.write_opcode(k, chunk)
            psn = (q.psn0 + s * chunk + k) & ar.PSN_MASK
            pkt = RocePacket(
                src=q.src, step=s, opcode=opcode, psn=psn, dqpn=0x100 + qi, tag=q.job, ecn=ECT0
            )
            d = pipe.process(pkt, t, coin=rng.getrandbits(24))
            smark = bool(d.mark)
            if smark:
                res.symphony_marks += 1
                if not ar.step_later(s, pipe.state(q.job).step_min):
                    res.marks_not_outpacing += 1
            if qmark:
                res.queue_marks += 1
            res.data_delivered += 1
            if ecn_out(ECT0, smark, qmark) == CE and t - last_cnp[qi] >= cfg.cnp_interval:
                last_cnp[qi] = t
                res.cnps += 1
                cnp_due.setdefault(t + cfg.rtt, []).append(qi)
            r = q.ring
            cnt = delivered[r][q.node][s] + 1
            delivered[r][q.node][s] = cnt
            if cnt == chunk:
                fl = in_flight[r]
                fl[s] -= 1
                if not fl[s]:
                    del fl[s]
                steps_done[r][q.node] += 1
                if s == steps - 1:
                    q.done = True
                    if all(x == steps for x in steps_done[r]):
                        ring_cct[r] = t + 1
                        rings_left -= 1
        if not queue:
            port_credit = min(port_credit, 1.0)

        for r in range(cfg.rings):
            if not ring_cct[r] and t >= ring_start[r]:
                o = len(in_flight[r])
                overlap_sum[r] += o
                overlap_max = max(overlap_max, o)
        t += 1

    res.cct = max(ring_cct) if not rings_left else t
    res.overlap_mean = sum(
        overlap_sum[r] / max(1, (ring_cct[r] or t) - ring_start[r]) for r in range(cfg.rings)
    ) / max(1, cfg.rings)
    res.overlap_max = overlap_max
    res.steps_done = steps_done
    return res
