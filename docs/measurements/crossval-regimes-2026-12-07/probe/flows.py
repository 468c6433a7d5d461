"""Flow by flow: table1 at a chunk size, a regime, RED on/off, both instruments on one seed."""

import argparse
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, os.environ.get("REPO", "/work/main"))
sys.path.insert(0, "/work/main/docs/measurements/crossval-regimes-2026-12-06/ack-priority-flows")
from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import ns3_export
from evaluation.fabric.config import QueueParams

B = "/work/ns3-work/astra-network-ns3/build/scratch/ns3-dev-symphony-driver-optimized"
ap = argparse.ArgumentParser()
ap.add_argument("--regime", default="default")
ap.add_argument("--chunk-mib", type=float, default=1)
ap.add_argument("--seed", type=int, default=100)
ap.add_argument("--no-red", action="store_true")
ap.add_argument("--ns-rounded", action="store_true")
ap.add_argument("--show", type=int, default=15)
ap.add_argument("--post", default="schedule")
ap.add_argument("--splits", type=int, default=4)
a = ap.parse_args()
if a.ns_rounded:
    import flows_vs_ns3

    flows_vs_ns3.ns_rounded()
from evaluation.fabric.sim import simulate

cfg = replace(
    xr.scenario_config("table1", a.regime, "baseline"),
    chunk_bytes=int(a.chunk_mib * (1 << 20)),
    splits=a.splits,
)
if a.no_red:
    cfg = replace(cfg, red=QueueParams(k_min=5000, k_max=10000, p_max=0.2))
d = Path(f"/tmp/flows/{a.regime}-{a.chunk_mib}-{a.seed}-{int(a.no_red)}-{a.post}-s{a.splits}")
wl = ns3_export.write(cfg, a.seed, d)
outf = d / "ns3.out"
if not outf.exists():
    out = subprocess.run(
        [
            B,
            f"--config={d / 'config.txt'}",
            f"--topo={d / 'topology.txt'}",
            f"--workload={d / 'workload.txt'}",
            f"--symphony={d / 'symphony.txt'}",
            f"--RngRun={a.seed}",
            f"--post={a.post}",
        ],
        capture_output=True,
        text=True,
    )
    outf.write_text(out.stdout)
r = simulate(cfg, a.seed)
kb, kd = r.flow_begin_us, r.flow_done_us
nb = np.full(kb.shape[0], np.nan)
nd = nb.copy()
stats = {}
for line in outf.read_text().splitlines():
    p = line.split()
    if p[:1] == ["flow"]:
        nb[int(p[1])], nd[int(p[1])] = int(p[2]) / 1000, int(p[3]) / 1000
    if p[:1] == ["stat"]:
        stats[p[1]] = p[2]
print(
    f"CCT ns-3 {np.nanmax(nd) / 1e3:.3f} ms  kernel {kd.max() / 1e3:.3f} ms  red_ce ns3 {stats.get('red_ce')} kernel {r.stats.get('queue_marks') if hasattr(r, 'stats') else '?'}"
)
order = np.argsort(nd)
same = next((i for i, f in enumerate(order) if abs(kd[f] - nd[f]) > 0.0005), len(order))
print("flows same to the ns before the first difference:", same, "of", len(order))


def row(f):
    return (
        f"flow {f} step {wl.f_step[f]} {wl.f_src[f]}->{wl.f_dst[f]} npk {wl.f_npk[f]}: begin ns3 {nb[f]:.3f} k {kb[f]:.3f}"
        f" done ns3 {nd[f]:.3f} k {kd[f]:.3f} diff {kd[f] - nd[f]:+.3f} us"
    )


for f in order[max(0, same - 3) : same + a.show]:
    print(" ", row(f))
# per step: median duration
for s in range(0, int(wl.f_step.max()) + 1, max(1, int(wl.f_step.max()) // 8)):
    m = wl.f_step == s
    print(
        f"step {s}: median took ns3 {np.nanmedian(nd[m] - nb[m]) / 1e3:.3f} k {np.median(kd[m] - kb[m]) / 1e3:.3f} ms; end ns3 {np.nanmax(nd[m]) / 1e3:.2f} k {kd[m].max() / 1e3:.2f}"
    )
