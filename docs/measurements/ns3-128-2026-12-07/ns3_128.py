"""ns-3 (HPCC's RDMA stack, our driver, built by hand outside the repository) on one 128-node
regime-map cell: the 2D ring at 128 nodes, 128 KB chunks. Is the version-6 kernel's 128-node
slowdown against kernel v3 ns-3's too? One run a line (`runs.txt` holds them):

    SYMPHONY_NS3=/path/to/symphony-driver PYTHONPATH=. python \\
        docs/measurements/ns3-128-2026-12-07/ns3_128.py windowed|rate-only 128 dcqcn|paper RUN
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from evaluation.fabric import ns3_run  # noqa: E402
from evaluation.fabric import regime_map as rm  # noqa: E402

nic, kb, opt, run = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
cfg = rm.config(rm.Regime("2d", nic, 128, kb * 1024), next(o for o in rm.OPTIONS if o.name == opt))
d = ROOT / "build" / "ns3-128" / f"{nic}-{kb}-{opt}-{run}"
r = ns3_run.run_driver(os.environ["SYMPHONY_NS3"], cfg, run, d)
print(nic, kb, opt, run, "ns-3 CCT ms", r.cct_ms, "wall", r.wall_s, flush=True)
