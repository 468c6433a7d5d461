"""Differential check: one seeded packet trace through `symphony.model.pipeline.Pipeline` and
through the numba port (`symphony_kernel.run_trace`); every decision and the final state must
be identical.

The trace is built to reach every branch: several jobs with different parameters (marking off,
the paper's k, a k large enough that P >= 1, absolute PSN mode, a short warm-up), flows that
advance step by step with some running ahead and some lagging, steps that wrap at 2^16 and
PSNs that wrap at 2^24, FIRST packets lost (unknown p), untracked opcodes and tags, and time
gaps from sub-window to many windows.

    python -m evaluation.fabric.golden_diff --packets 1000000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evaluation.fabric import symphony_kernel as sk
from symphony.model import arithmetic as ar
from symphony.model.params import JobParams
from symphony.model.pipeline import FLOW_SLOTS, Pipeline, RocePacket, flow_slot
from symphony.packets import WRITE_FIRST, WRITE_LAST, WRITE_MIDDLE
from symphony.sizes import BMV2_TICK_NS

JOBS: dict[int, JobParams] = {
    1: JobParams(k=0.01, n_warmup=4, n_sample=8),
    2: JobParams(k=0.001, t_win_us=50.0),
    3: JobParams(k=64.0, n_warmup=2, n_sample=4, alpha_max=8),
    4: JobParams(k=0.0),
    5: JobParams(k=0.05, psn_mode="absolute", tau=0.5),
}
TICK_NS = BMV2_TICK_NS  # the golden model runs on bmv2 ticks here


def make_trace(n: int, seed: int) -> dict[str, np.ndarray]:
    """n packets from 5 jobs x 6 flows each, interleaved at random."""
    rng = np.random.default_rng(seed)
    flows = []
    for job in JOBS:
        step0 = int(rng.integers(0, 1 << 16)) if job != 1 else (1 << 16) - 3  # job 1 wraps
        for q in range(6):
            src = 0x0A000000 | (job << 8) | q
            dqpn = int(rng.integers(1, 1 << 24))
            slot, sig = flow_slot(src, dqpn)
            flows.append(
                {
                    "job": job,
                    "src": src,
                    "dqpn": dqpn,
                    "slot": slot,
                    "sig": sig,
                    "step": step0 + int(rng.integers(0, 2)),
                    "psn": int(rng.integers(0, 1 << 24)) if q else (1 << 24) - 40,
                    "idx": 0,
                    "size": int(rng.integers(20, 200)),
                    "speed": float(rng.uniform(0.3, 1.0)),
                }
            )
    cols = {
        k: np.zeros(n, dtype=np.int64)
        for k in ("tag", "src", "dqpn", "slot", "sig", "step", "opcode", "psn", "now", "coin")
    }
    now = 0
    speeds = np.array([f["speed"] for f in flows])
    picks = rng.choice(len(flows), size=n, p=speeds / speeds.sum())
    gaps = rng.choice([0, 1, 3, 40, 130, 2000], size=n, p=[0.3, 0.3, 0.2, 0.15, 0.049, 0.001])
    noise = rng.random(n)
    coins = rng.integers(0, ar.COIN_RANGE, size=n)
    for i in range(n):
        f = flows[picks[i]]
        now = (now + int(gaps[i])) & 0xFFFFFFFF
        idx = f["idx"]
        if idx == 0:
            opcode = WRITE_FIRST
        elif idx == f["size"] - 1:
            opcode = WRITE_LAST
        else:
            opcode = WRITE_MIDDLE
        r = noise[i]
        tag = f["job"]
        if r < 0.01:
            opcode = 0x11  # ACK: untracked
        elif r < 0.015:
            tag = 9  # a tag with no entry
        cols["tag"][i] = tag
        cols["src"][i] = f["src"]
        cols["dqpn"][i] = f["dqpn"]
        cols["slot"][i] = f["slot"]
        cols["sig"][i] = f["sig"]
        cols["step"][i] = f["step"] & ar.STEP_MASK
        cols["opcode"][i] = opcode
        cols["psn"][i] = f["psn"] & ar.PSN_MASK
        cols["now"][i] = now
        cols["coin"][i] = coins[i]
        if opcode == WRITE_FIRST and r > 0.98:
            cols["opcode"][i] = WRITE_MIDDLE  # its FIRST got lost: p unknown for this step
        f["psn"] += 1
        f["idx"] += 1
        if f["idx"] >= f["size"]:
            f["idx"] = 0
            f["step"] += 1
    return cols


def run_golden(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, Pipeline]:
    pl = Pipeline()
    for job, prm in JOBS.items():
        pl.install_job(job, prm.to_action_params(TICK_NS), tag=True)
    n = cols["tag"].shape[0]
    out = np.zeros((n, 4), dtype=np.int64)
    lists = {k: v.tolist() for k, v in cols.items()}
    for i in range(n):
        pkt = RocePacket(
            src=lists["src"][i],
            step=lists["step"][i],
            opcode=lists["opcode"][i],
            psn=lists["psn"][i],
            dqpn=lists["dqpn"][i],
            tag=lists["tag"][i],
        )
        d = pl.process(pkt, lists["now"][i], None)
        coin = lists["coin"][i]
        mark = d.mark if d.mark is not None else coin < d.threshold
        if d.mark is None and mark:
            pl.jobs[d.job_id].marks += 1
        out[i] = (d.job_id or 0, -1 if d.p is None else d.p, d.threshold, int(bool(mark)))
    return out, pl


def run_kernel(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    njobs = max(JOBS) + 1
    js = np.zeros((1, njobs, sk.JS_FIELDS), dtype=np.int64)
    js[:, :, sk.JS_ALPHA] = 1
    flows = np.zeros((1, FLOW_SLOTS), dtype=np.int64)
    prm = np.zeros((njobs, sk.P_FIELDS), dtype=np.int64)
    job_by_tag = np.zeros(1 << 13, dtype=np.int64)
    for job, p in JOBS.items():
        prm[job] = sk.action_row(p.to_action_params(TICK_NS))
        job_by_tag[job] = job
    n = cols["tag"].shape[0]
    out = np.zeros((n, 4), dtype=np.int64)
    sk.run_trace(
        js,
        flows,
        prm,
        job_by_tag,
        cols["tag"],
        cols["slot"],
        cols["sig"],
        cols["step"],
        cols["opcode"],
        cols["psn"],
        cols["now"],
        cols["coin"],
        out,
        *sk.golden_tables(),
    )
    return out, js, flows


def compare(n: int, seed: int) -> dict[str, int]:
    """Run both; raise AssertionError at the first difference. Returns a coverage summary."""
    cols = make_trace(n, seed)
    gold, pl = run_golden(cols)
    kern, js, flows = run_kernel(cols)
    bad = np.nonzero((gold != kern).any(axis=1))[0]
    if bad.size:
        i = int(bad[0])
        raise AssertionError(f"packet {i}: golden {gold[i].tolist()} != kernel {kern[i].tolist()}")
    for job in JOBS:
        st = pl.state(job)
        want = [
            st.step_min,
            st.psn_rec,
            st.alpha,
            st.window_packets,
            st.window_ahead_packets,
            st.win_start,
        ]
        want += [st.packets, st.marks]
        got = js[0, job, : sk.JS_MARKS + 1].tolist()
        assert want == got, f"job {job}: golden {want} != kernel {got}"
    for slot, value in pl.flows.items():
        assert flows[0, slot] == value, f"flow slot {slot}"
    assert int(np.count_nonzero(flows)) == len([v for v in pl.flows.values() if v])
    thr = gold[:, 2]
    return {
        "packets": n,
        "tracked": int((gold[:, 0] > 0).sum()),
        "unknown_p": int(((gold[:, 0] > 0) & (gold[:, 1] < 0)).sum()),
        "thr_partial": int(((thr > 0) & (thr < ar.COIN_RANGE)).sum()),
        "thr_certain": int((thr >= ar.COIN_RANGE).sum()),
        "marks": int(gold[:, 3].sum()),
        "alpha_max_seen": max(pl.state(j).alpha for j in JOBS),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    summary = compare(args.packets, args.seed)
    print(f"identical: {summary} ({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
