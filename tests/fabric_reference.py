"""Recorded fabric runs: small configurations whose runs.csv rows (and a digest of every other
output of the kernel) were recorded from the kernel as it was before the speed work of issue 22,
so that a faster kernel can be proved to give the same runs bit for bit.

    python tests/fabric_reference.py            # re-record tests/data/fabric_reference.csv

Re-record only for a deliberate change of the simulation's semantics, in its own commit that
says so and bumps `evaluation.fabric.kernel.RESULTS_VERSION` (sweep stores key on it).
"""

from __future__ import annotations

import csv
import hashlib
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric.config import Background, FabricConfig
from evaluation.fabric.dcqcn import HPCC_RUN_DCQCN
from evaluation.fabric.rows import FIELDS, row
from evaluation.fabric.scenarios import Run
from evaluation.fabric.sim import FabricResult, simulate

DATA = Path(__file__).resolve().parent / "data" / "fabric_reference.csv"
# wall_s is the only column that is not a function of (config, seed)
COMPARED = tuple(f for f in FIELDS if f != "wall_s")
COLUMNS = (*FIELDS, "digest")
KB = 1 << 10
_Q = FabricConfig(hosts=16, chunk_bytes=32 * KB)


def _three(name: str, cfg: FabricConfig, seeds: tuple[int, ...]) -> list[Run]:
    return [
        Run(name, m, "", replace(cfg, mode=m), s)
        for m in ("baseline", "pq", "symphony")
        for s in seeds
    ]


def cases() -> list[Run]:
    """Every mode with PFC on and off, both logical topologies, each DCQCN profile, both ECMP
    hashes, the multipod fabric, background bursts, two jobs and the late start."""
    runs = _three("rings-pfc", _Q, (0, 1))
    runs += _three("rings-lossy", replace(_Q, pfc=False), (0,))
    runs += _three(
        "2d-ns3",
        replace(_Q, topology="2d", ecmp="ns3", splits=2, active_chunks=2, passes=2),
        (0,),
    )
    for p in ("astra-config", "hpcc-run-dcqcn", "dcqcn-paper"):
        runs += [
            Run(f"profile-{p}", m, "", replace(_Q, dcqcn=p, mode=m), 0)
            for m in ("baseline", "symphony")
        ]
    runs += _three(
        "bg-static",
        replace(_Q, routing="static", background=Background(bursts=4, duration_us=100.0)),
        (0,),
    )
    runs += _three("two-jobs", replace(_Q, jobs=2, job_start_us=(0.0, 20.0)), (0,))
    runs.append(
        Run("late", "symphony-late", "", replace(_Q, mode="symphony", late_start_us=30.0), 0)
    )
    mp = replace(
        _Q,
        hosts=32,
        topology="2d",
        fabric="multipod",
        pods=2,
        tors=2,
        spines=2,
        oversub=4.0,
        chunk_bytes=8 * KB,
    )
    runs += [Run("multipod-2d", m, "", replace(mp, mode=m), 0) for m in ("baseline", "symphony")]
    runs += [
        Run(
            "imbalance-lossy",
            m,
            "1.3",
            replace(_Q, routing="static", imbalance=1.3, pfc=False, mode=m),
            0,
        )
        for m in ("baseline", "symphony")
    ]
    # congested: drops, NACKs and timeouts; PFC pauses; RED marks with background bursts
    hot = replace(_Q, chunk_bytes=128 * KB, dcqcn="hpcc-run-dcqcn")
    small_pfc = replace(hot, switch_buffer_pkts=300, pfc_headroom_pkts=8)
    runs += _three("lossy-small-buffer", replace(hot, pfc=False, buffer_pkts=16), (0,))
    runs += _three("pfc-small-buffer", small_pfc, (0, 1))
    ctrl = replace(small_pfc, dcqcn=replace(HPCC_RUN_DCQCN, ack_queue="control"))
    runs += _three("pfc-ack-control", ctrl, (0,))
    bg = Background(bursts=4, gbps=8.0, duration_us=200.0)
    runs += _three("bg-hot", replace(hot, routing="static", background=bg), (0,))
    return runs


def digest(res: FabricResult) -> str:
    """Every output of the kernel that runs.csv does not show: all statistics, the per-flow
    begin and delivery times, the sampled series."""
    h = hashlib.sha256()
    h.update(repr(sorted(res.stats.items())).encode())
    for a in (res.flow_begin_us, res.flow_done_us, res.overlap_series, res.rx_gbps_series):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def reference_row(run: Run) -> dict[str, object]:
    res = simulate(run.cfg, run.seed)
    return {**row(run, res), "digest": digest(res)}


def load() -> list[dict[str, str]]:
    with open(DATA, newline="") as fh:
        return list(csv.DictReader(fh))


def main() -> None:
    DATA.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for run in cases():
        r = reference_row(run)
        assert r["error"] == 0, (run.scenario, run.variant, r["error"])
        rows.append(r)
        print(run.scenario, run.variant, run.seed, r["events"], r["wall_s"])
    with open(DATA, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    print("wrote", DATA)


if __name__ == "__main__":
    main()
