"""The kernel on a cross-validation cell with ns-3's time arithmetic (every frame's transmission
time in whole ns, `ns3_export.whole_ns_transmissions`), seeds 100-139: one CCT (ms) a line.

    PYTHONPATH=. python docs/measurements/crossval-regimes-2026-12-07/whole_ns.py baseline default
    PYTHONPATH=. python docs/measurements/crossval-regimes-2026-12-07/whole_ns.py baseline \
        ack-priority ecmp-8MiB                  # another scenario (default table1)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import ns3_export
from evaluation.fabric.sim import simulate

ns3_export.whole_ns_transmissions()
variant, regime = sys.argv[1], sys.argv[2]
scenario = sys.argv[3] if len(sys.argv) > 3 else "table1"
cfg = xr.scenario_config(scenario, regime, variant)
for seed in range(100, 140):
    print(seed, round(float(simulate(cfg, seed).cct_us[0]) / 1e3, 1), flush=True)
