"""Seeded random multi-job RoCEv2 packet sequences for the differential test.

Each sequence mixes what a real fabric does to a ring collective: several jobs (tag and hosts
mode), flows at different steps, SEND and WRITE messages of RC and UC with and without
immediate, random PSN starting points (some close to the 2^24 wrap), steps close to the 2^16
wrap, duplicates, reordering, lost FIRST packets, mixed ECN codepoints, and window boundaries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from conformance import packets as rp
from symphony.model.params import JobParams

# Ops: (first, middle, last) opcodes of a message kind; ONLY kinds are single packets.
_MESSAGES = [
    (rp.WRITE_FIRST, rp.WRITE_MIDDLE, rp.WRITE_LAST),
    (rp.WRITE_FIRST, rp.WRITE_MIDDLE, rp.WRITE_LAST_IMM),
    (rp.SEND_FIRST, rp.SEND_MIDDLE, rp.SEND_LAST),
    (rp.SEND_FIRST, rp.SEND_MIDDLE, rp.SEND_LAST_IMM),
]
_ONLY = [rp.WRITE_ONLY, rp.WRITE_ONLY_IMM, rp.SEND_ONLY, rp.SEND_ONLY_IMM]
_ECN = [0b10, 0b10, 0b10, 0b01, 0b00, 0b11]

# A window boundary: the next packet closes the job's window.
CLOSE_WINDOW = "close-window"


@dataclass
class JobPlan:
    job_id: int
    tag: bool
    hosts: tuple[str, ...]
    params: JobParams


@dataclass
class Sequence:
    seed: int
    jobs: list[JobPlan] = field(default_factory=list)
    # Items: a scapy packet, or (CLOSE_WINDOW, job_id).
    items: list = field(default_factory=list)


def _params(rng: random.Random) -> JobParams:
    return JobParams(
        k=rng.choice([0.0, 0.01, 0.3, 2.0, 255.0]),
        tau=rng.choice([0.0, 0.25, 0.5, 1.0]),
        t_win_us=2_000_000_000.0,
        n_warmup=rng.choice([0, 2, 5]),
        n_sample=rng.choice([1, 4, 10]),
        alpha_max=rng.choice([1, 3, 8]),
        psn_mode=rng.choice(["relative"] * 4 + ["absolute"]),
    )


def generate(seed: int, packets: int = 60, jobs: int | None = None) -> Sequence:
    """`jobs` fixes the number of jobs (default: 1-3, drawn from the seed)."""
    rng = random.Random(seed)
    seq = Sequence(seed)
    n_jobs = rng.randint(1, 3)
    n_jobs = jobs or n_jobs
    job_ids = rng.sample(range(1, 8191), n_jobs)
    flows = []  # (job, src, qp, tag) with their own step and PSN cursors
    for j, job_id in enumerate(job_ids):
        tag = rng.random() < 0.6
        hosts = tuple(f"10.0.{j}.{10 + h}" for h in range(rng.randint(2, 3)))
        seq.jobs.append(JobPlan(job_id, tag, hosts if not tag else (), _params(rng)))
        start_step = rng.choice([0, 5, 65533])
        for h in hosts:
            flows.append(
                {
                    "job": job_id,
                    "src": h,
                    "qp": rng.randrange(1, 1 << 24),
                    "tag": job_id if tag else 0,
                    "step": (start_step - rng.randint(0, 1)) & 0xFFFF,
                    "psn": rng.choice([0, rng.randrange(1 << 24), (1 << 24) - 3]),
                    "left": 0,  # packets left in the current message
                    "kind": None,
                }
            )
    out: list = []
    while len(out) < packets:
        f = rng.choice(flows)
        if rng.random() < 0.05:
            out.append((CLOSE_WINDOW, f["job"]))
            continue
        if f["left"] == 0:  # start a message of the flow's current step
            if rng.random() < 0.2:
                f["kind"] = ("only", rng.choice(_ONLY))
                f["left"] = 1
            else:
                f["kind"] = ("multi", rng.choice(_MESSAGES))
                f["left"] = rng.randint(2, 6)
            f["pos"] = 0
        kind, ops = f["kind"]
        if kind == "only":
            op = ops
        elif f["pos"] == 0:
            op = ops[0]
        elif f["left"] == 1:
            op = ops[2]
        else:
            op = ops[1]
        if rng.random() < 0.15:
            op += rp.UC
        pkt = rp.rocev2(
            opcode=op,
            step=f["step"],
            psn=f["psn"],
            tag=f["tag"],
            src=f["src"],
            dst="10.0.1.1",
            dqpn=f["qp"],
            ecn=rng.choice(_ECN),
        )
        f["psn"] = (f["psn"] + 1) & 0xFFFFFF
        f["pos"] += 1
        f["left"] -= 1
        if f["left"] == 0:
            f["step"] = (f["step"] + 1) & 0xFFFF
        if f["pos"] == 1 and kind == "multi" and rng.random() < 0.08:
            continue  # the FIRST is lost
        out.append(pkt)
        if rng.random() < 0.07:
            out.append(pkt.copy())  # duplicate
        if rng.random() < 0.07 and len(out) >= 2 and not isinstance(out[-2], tuple):
            out[-1], out[-2] = out[-2], out[-1]  # reordering
    seq.items = out
    return seq
