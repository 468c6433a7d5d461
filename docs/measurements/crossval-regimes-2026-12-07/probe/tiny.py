"""Tiny deterministic cases (no RED) on the table1 fabric, both instruments: completion per flow."""

import os
import subprocess
import sys

sys.path.insert(0, os.environ.get("REPO", "/work/main"))
import functools
import operator
from dataclasses import replace
from pathlib import Path

import numpy as np
from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import ns3_export
from evaluation.fabric.config import QueueParams
from evaluation.fabric.sim import simulate
from evaluation.fabric.topology import CustomFlows

B = "/work/ns3-work/astra-network-ns3/build/scratch/ns3-dev-symphony-driver-optimized"
case, regime = sys.argv[1], sys.argv[2]
NPK = 1049


def ring(hosts, k, t0=0, stagger_ps=0):
    fl = []
    for i, h in enumerate(hosts):
        for j in range(k):
            fl.append((h, hosts[(i + 1) % len(hosts)], 0, NPK, t0 + j * stagger_ps))
    return fl


cases = {
    "pair4": [(16, 17, 0, NPK, 0)] * 4,
    "ring8x1": ring(list(range(16, 24)), 1),
    "ring8x2": ring(list(range(16, 24)), 2),
    "ring8x3": ring(list(range(16, 24)), 3),
    "ring8x4": ring(list(range(16, 24)), 4),
    "ring8x3s": ring(list(range(16, 24)), 3, 0, 100_000_000),
    "2d": functools.reduce(
        operator.iadd, (ring(list(range(8 * t, 8 * t + 8)), 2) for t in range(4)), []
    )
    + [(h, (h + 8) % 32, 0, 263, 0) for h in range(32)],
    "2dv4": functools.reduce(
        operator.iadd, (ring(list(range(8 * t, 8 * t + 8)), 2) for t in range(4)), []
    )
    + [(h, (h + 8) % 32, 0, 263, 0) for h in range(32)] * 4,
    "tor2v": ring(list(range(16, 24)), 2) + [(h, h + 8, 0, 1049, 0) for h in range(8, 16)],
}
flows = cases[case]
spec = CustomFlows(flows, sports=[10000 + i for i in range(len(flows))])
cfg = replace(
    xr.scenario_config("table1", regime, "baseline"),
    red=QueueParams(k_min=5000, k_max=10000, p_max=0.2),
)
d = Path(f"/tmp/tiny/{case}-{regime}")
ns3_export.write(cfg, 100, d, flows=spec)
out = subprocess.run(
    [
        B,
        f"--config={d / 'config.txt'}",
        f"--topo={d / 'topology.txt'}",
        f"--workload={d / 'workload.txt'}",
        f"--symphony={d / 'symphony.txt'}",
        "--RngRun=100",
        "--post=schedule",
    ],
    capture_output=True,
    text=True,
)
nd = {}
for line in out.stdout.splitlines():
    p = line.split()
    if p[:1] == ["flow"]:
        nd[int(p[1])] = int(p[3]) / 1000
r = simulate(cfg, 100, spec)
kd = r.flow_done_us
diffs = [kd[f] - nd[f] for f in range(len(flows))]
print(
    f"{case} {regime}: ns-3 last {max(nd.values()):.2f} us, kernel {kd.max():.2f} us ({(kd.max() / max(nd.values()) - 1) * 100:+.2f} %); per flow done diff us: median {np.median(diffs):+.2f} min {min(diffs):+.2f} max {max(diffs):+.2f}"
)
