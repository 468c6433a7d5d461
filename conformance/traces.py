"""The one seeded trace generator: what a fabric does to a ring collective, as one switch sees it.

A trace is a set of jobs (tag or hosts mode, each with its own parameters: marking off, the
paper's k, k so large that P >= 1, absolute PSNs, T_win from 0 to never, warm-up and sample
guards from 0 up, alpha_max from 1 to the limit) and a packet sequence with a timestamp and a coin
per packet. Flows advance message by message, one message per step, SEND and RDMA WRITE of RC
and UC with and without immediate, at different speeds (some run ahead, some lag); steps wrap
at 2^16 and PSNs at 2^24 and the timestamp at 2^32; FIRST and LAST packets get lost, packets are
duplicated and reordered, steps jump (up to the serial comparison's ambiguous distance 2^15),
untracked opcodes and tags of no job appear, two flows may share a flow slot, and the time
between packets goes from 0 to many windows (and past 2^31 ticks, where Tofino2's split window
test takes its second branch).

Times are in switch ticks of `TICK_NS` (bmv2's microsecond); every implementation installs the
same action data (`JobSpec.action`). A trace of n packets is the prefix of the same seed's longer
traces, so a short run (the PTF suite) checks the beginning of the long run's traces.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from symphony.model import arithmetic as ar
from symphony.model import opcodes as op
from symphony.model.params import T_WIN_MAX_TICKS, JobParams, PsnMode
from symphony.model.switch_model import RocePacket
from symphony.sizes import BMV2_TICK_NS, FLOW_SLOTS, MAX_JOBS, TAG_MAX

TICK_NS = BMV2_TICK_NS
TIMESTAMP_RANGE = 1 << 32

# (first, middle, last) of a multi-packet message; a one-packet message is an ONLY opcode.
MESSAGES = (
    (op.WRITE_FIRST, op.WRITE_MIDDLE, op.WRITE_LAST),
    (op.WRITE_FIRST, op.WRITE_MIDDLE, op.WRITE_LAST_IMM),
    (op.SEND_FIRST, op.SEND_MIDDLE, op.SEND_LAST),
    (op.SEND_FIRST, op.SEND_MIDDLE, op.SEND_LAST_IMM),
)
ONLY = (op.WRITE_ONLY, op.WRITE_ONLY_IMM, op.SEND_ONLY, op.SEND_ONLY_IMM)
# Not data of RC/UC SEND or WRITE: RC READ request and response, ACK, RC reserved, UC READ (not
# a UC opcode), RD SEND, UD SEND_ONLY, CNP, XRC SEND_FIRST.
UNTRACKED = (op.READ_REQUEST, 0x0D, op.ACK, 0x1F, 0x2C, 0x40, 0x64, op.CNP, 0xA0)
assert not any(op.is_tracked_opcode(o) for o in UNTRACKED)
# ECT(0) most often, as RoCE hosts send; ECT(1), Non-ECT and CE too (SPEC 4.5).
ECN = (0b10, 0b10, 0b10, 0b01, 0b00, 0b11)

# Parameter menus: each job draws one value of each (docs/parameters.md for the ranges).
K = (0.0, 0.001, 0.01, 0.3, 2.0, 255.0)
TAU = (0.0, 3 / 256, 0.25, 0.5, 1.0)
T_WIN_TICKS = (0, 1, 50, 100, 1000, T_WIN_MAX_TICKS - 1)
N_WARMUP = (0, 2, 16, 300)
N_SAMPLE = (0, 1, 4, 32)
ALPHA_MAX = (1, 3, 8, ar.ALPHA_LIMIT)
# Ticks between packets and their weights: back to back, inside a window, about one window,
# many windows, past 2^31 ticks and a whole timestamp turn less one.
GAPS = (0, 1, 3, 40, 130, 2000, 1_000_000, 1 << 31, TIMESTAMP_RANGE - 1)
GAP_WEIGHTS = (30, 25, 15, 12, 10, 5, 2, 0.4, 0.2)
# Step jumps at a message's end (besides the usual + 1): skipped steps, up to and past 2^15.
STEP_JUMPS = (2, 7, ar.STEP_HALF - 1, ar.STEP_HALF, ar.STEP_HALF + 5)


@dataclass(frozen=True)
class JobSpec:
    """One job as the controller installs it: by tag (its Job_ID) or by its hosts' addresses."""

    job_id: int
    params: JobParams
    tag: bool
    hosts: tuple[int, ...] = ()

    @property
    def action(self) -> dict[str, int]:
        """The set_params action data every implementation installs (trace ticks)."""
        return self.params.to_action_params(TICK_NS)


@dataclass(frozen=True)
class TracePacket:
    pkt: RocePacket
    now: int  # ingress timestamp, ticks, 32 bits
    coin: int  # the switch's uniform 24-bit number for this packet's mark


@dataclass(frozen=True)
class Trace:
    seed: int
    jobs: tuple[JobSpec, ...]
    packets: tuple[TracePacket, ...]


@dataclass
class _Flow:
    """One QP's sender: its step and PSN cursors and the message it is in."""

    job_id: int
    src: int
    dqpn: int
    tag: int
    step: int
    psn: int
    speed: float
    ops: tuple[int, int, int] | int = op.WRITE_ONLY
    left: int = 0  # packets of the current message still to send
    pos: int = 0  # packets of it sent


def _params(rng: random.Random) -> JobParams:
    mode: PsnMode = "absolute" if rng.random() < 0.2 else "relative"
    return JobParams(
        k=rng.choice(K),
        tau=rng.choice(TAU),
        t_win_us=rng.choice(T_WIN_TICKS) * TICK_NS / 1000,
        n_warmup=rng.choice(N_WARMUP),
        n_sample=rng.choice(N_SAMPLE),
        alpha_max=rng.choice(ALPHA_MAX),
        psn_mode=mode,
    ).validate(TICK_NS)


def _address(rng: random.Random, taken: set[int]) -> int:
    while True:
        a = 0x0A000000 | rng.randrange(1, 1 << 24)
        if a not in taken:
            taken.add(a)
            return a


def _colliding_dqpn(rng: random.Random, src: int, slot: int) -> int | None:
    """A destination QP whose flow hashes to `slot` from `src` (crc32 alone picks the slot; the
    signature differs all but surely), or None when a bounded search finds none."""
    start = rng.randrange(1 << 24)
    prefix = src.to_bytes(4, "big")
    for i in range(1 << 19):
        dqpn = (start + i) & ar.PSN_MASK
        if ar.crc32(prefix + dqpn.to_bytes(3, "big")) % FLOW_SLOTS == slot:
            return dqpn
    return None


def _jobs_and_flows(rng: random.Random) -> tuple[list[JobSpec], list[_Flow]]:
    taken_ids: set[int] = set()
    addrs: set[int] = set()
    jobs: list[JobSpec] = []
    flows: list[_Flow] = []
    host_pool: list[int] = []  # hosts of hosts-mode jobs, for a tag-mode flow to share
    for _ in range(rng.randint(1, 4)):
        tag = rng.random() < 0.7
        # Tag mode needs a Job_ID a 13-bit tag carries; hosts mode may use the whole range.
        while (job_id := rng.randrange(1, (TAG_MAX if tag else MAX_JOBS - 1) + 1)) in taken_ids:
            pass
        taken_ids.add(job_id)
        srcs = [_address(rng, addrs) for _ in range(rng.randint(2, 4))]
        if tag and host_pool and rng.random() < 0.3:
            srcs[0] = rng.choice(host_pool)  # tagged traffic from a hosts-mode job's host
        jobs.append(JobSpec(job_id, _params(rng), tag, () if tag else tuple(srcs)))
        if not tag:
            host_pool += srcs
        step0 = rng.choice((0, 5, ar.STEP_MASK - 2, ar.STEP_MASK, rng.randrange(1 << 16)))
        for src in srcs:
            flows.append(
                _Flow(
                    job_id=job_id,
                    src=src,
                    dqpn=rng.randrange(1, 1 << 24),
                    tag=job_id if tag else (rng.randrange(1, TAG_MAX) if rng.random() < 0.1 else 0),
                    step=(step0 - rng.randint(0, 1)) & ar.STEP_MASK,
                    psn=rng.choice((0, rng.randrange(1 << 24), ar.PSN_MASK - 2)),
                    speed=rng.uniform(0.3, 1.0),
                )
            )
    if rng.random() < 0.25:  # a flow that shares another's slot (a hash collision)
        f = rng.choice(flows)
        key = f.src.to_bytes(4, "big") + f.dqpn.to_bytes(3, "big")
        dqpn = _colliding_dqpn(rng, f.src, ar.crc32(key) % FLOW_SLOTS)
        if dqpn is not None and dqpn != f.dqpn:
            flows.append(_Flow(f.job_id, f.src, dqpn, f.tag, f.step, f.psn, f.speed))
    return jobs, flows


def _next_opcode(rng: random.Random, f: _Flow) -> int:
    """The flow's next data opcode; starts a message (one per step) when the last one ended."""
    if f.left == 0:
        r = rng.random()
        if r < 0.2:
            f.ops, f.left = rng.choice(ONLY), 1
        else:
            # Short messages, and long ones whose PSNs pass the warm-up and reach far.
            f.ops, f.left = (
                rng.choice(MESSAGES),
                rng.randint(2, 8) if r < 0.6 else rng.randint(20, 400),
            )
        f.pos = 0
        if rng.random() < 0.15:
            f.ops = f.ops + op.UC if isinstance(f.ops, int) else tuple(o + op.UC for o in f.ops)
    if isinstance(f.ops, int):
        return f.ops
    if f.pos == 0:
        return f.ops[0]
    return f.ops[2] if f.left == 1 else f.ops[1]


def generate(seed: int, packets: int) -> Trace:
    """`packets` packets of 1-4 jobs, from `seed` alone."""
    rng = random.Random(seed)
    jobs, flows = _jobs_and_flows(rng)
    installed = {j.job_id for j in jobs}
    weights = [f.speed for f in flows]
    now = rng.choice((0, rng.randrange(TIMESTAMP_RANGE), TIMESTAMP_RANGE - 500))
    out: list[TracePacket] = []
    while len(out) < packets:
        f = rng.choices(flows, weights)[0]
        now = (now + rng.choices(GAPS, GAP_WEIGHTS)[0]) % TIMESTAMP_RANGE
        coin = rng.randrange(ar.COIN_RANGE)
        ecn = rng.choice(ECN)
        tag = f.tag
        if rng.random() < 0.02:
            while (tag := rng.randrange(1, TAG_MAX + 1)) in installed:
                pass  # a tag no job has: classified by the source, if at all
        if rng.random() < 0.03:
            pkt = RocePacket(f.src, f.step, rng.choice(UNTRACKED), f.psn, f.dqpn, tag, ecn)
            out.append(TracePacket(pkt, now, coin))
            continue
        opcode = _next_opcode(rng, f)
        pkt = RocePacket(f.src, f.step, opcode, f.psn, f.dqpn, tag, ecn)
        first, last = f.pos == 0, f.left == 1
        f.psn = (f.psn + 1) & ar.PSN_MASK
        f.pos += 1
        f.left -= 1
        if f.left == 0:
            jump = rng.choice(STEP_JUMPS) if rng.random() < 0.01 else 1
            f.step = (f.step + jump) & ar.STEP_MASK
        if (first or last) and rng.random() < 0.04:
            continue  # lost: p unknown for the rest of the step, or the step never completes
        out.append(TracePacket(pkt, now, coin))
        if rng.random() < 0.03:
            out.append(TracePacket(pkt, now, rng.randrange(ar.COIN_RANGE)))  # duplicate
        if rng.random() < 0.03 and len(out) >= 2:
            # Reordered: the two packets swap, the timestamps stay in arrival order.
            a, b = out[-2], out[-1]
            out[-2], out[-1] = TracePacket(b.pkt, a.now, a.coin), TracePacket(a.pkt, b.now, b.coin)
    return Trace(seed, tuple(jobs), tuple(out[:packets]))


def trace_set(traces: int, packets: int, first_seed: int = 0) -> list[Trace]:
    """`traces` traces of `packets // traces` packets each (the remainder to the first ones)."""
    per, extra = divmod(packets, traces)
    return [generate(first_seed + i, per + (1 if i < extra else 0)) for i in range(traces)]
