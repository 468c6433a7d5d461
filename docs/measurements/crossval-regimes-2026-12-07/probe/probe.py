"""Probe: one scenario variant in both instruments over many seeds (issue 45 investigation).
usage: probe.py NAME --chunk-mib X --regime R --variant V --seeds A B [--ns3 BIN] [--kernel]"""

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, os.environ.get("REPO", "/work/main"))
from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import ns3_export


def cfg_of(a):
    c = xr.scenario_config(a.scenario, a.regime, a.variant)
    if a.chunk_mib:
        c = replace(c, chunk_bytes=int(a.chunk_mib * (1 << 20)))
    for kv in a.set or []:
        k, v = kv.split("=")
        c = replace(
            c, **{k: type(getattr(c, k))(v) if not isinstance(getattr(c, k), bool) else v == "1"}
        )
    return c


def ns3_one(a, seed):
    d = Path(f"/tmp/probe/{a.name}/{seed}")
    ns3_export.write(cfg_of(a), seed, d)
    out = subprocess.run(
        [
            a.ns3,
            f"--config={d / 'config.txt'}",
            f"--topo={d / 'topology.txt'}",
            f"--workload={d / 'workload.txt'}",
            f"--symphony={d / 'symphony.txt'}",
            f"--RngRun={seed}",
            "--post=schedule",
        ],
        capture_output=True,
        text=True,
    )
    (d / "ns3.out").write_text(out.stdout)
    return seed, xr.parse_driver_output(out.stdout)


def kernel_one(a, seed):
    from evaluation.fabric.sim import simulate

    r = simulate(cfg_of(a), seed)
    return seed, r.cct_max_us / 1000


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--scenario", default="table1")
    ap.add_argument("--chunk-mib", type=float, default=0)
    ap.add_argument("--regime", default="ack-priority")
    ap.add_argument("--variant", default="baseline")
    ap.add_argument("--seeds", type=int, nargs=2, default=[100, 140])
    ap.add_argument("--ns3")
    ap.add_argument("--kernel", action="store_true")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--set", action="append")
    a = ap.parse_args()
    fn = kernel_one if a.kernel else ns3_one
    inst = "kernel" if a.kernel else "ns3"
    store = Path(f"/work/ns3-work/probe/{a.name}-{inst}.jsonl")
    done = (
        {json.loads(l)["seed"] for l in store.read_text().splitlines()} if store.exists() else set()
    )
    seeds = [s for s in range(*a.seeds) if s not in done]
    with ProcessPoolExecutor(a.workers) as ex, open(store, "a") as fh:
        for seed, cct in ex.map(fn, [a] * len(seeds), seeds):
            fh.write(json.dumps({"seed": seed, "cct_ms": cct}) + "\n")
            fh.flush()
            print(inst, seed, round(cct, 3), flush=True)
