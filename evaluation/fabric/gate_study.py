"""Scratch study (issue 21, choose-seeds only): the backlog gate G against the paper policy."""
import sys
from dataclasses import replace
from pathlib import Path
from statistics import median

sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[2] / "controller")]
from evaluation.fabric.scenarios import Run, scenario_runs  # noqa: E402
from evaluation.fabric.sweep import RunStore, run_sweep  # noqa: E402

SEEDS = range(0, int(sys.argv[1]) if len(sys.argv) > 1 else 4)
GATES = [0, 2, 4, 8, 16, 32]
KS = [0.001, 0.01, 0.1]
SCEN = sys.argv[2].split(",") if len(sys.argv) > 2 else ["lockstep", "table1", "imbalance", "transient-bg", "two-jobs"]
runs = []
for name in SCEN:
    for r in scenario_runs(name, SEEDS):
        if name == "imbalance" and r.param not in ("1.1", "1.5"):
            continue
        if r.variant == "symphony":
            for g in GATES:
                for k in KS:
                    if k != 0.01 and g not in (0, 8):
                        continue
                    cfg = replace(r.cfg, symphony=replace(r.cfg.symphony, gate_pkts=g, k=k))
                    tag = f"gate{g}" + ("" if k == 0.01 else f"/k{k:g}")
                    runs.append(Run(r.scenario, tag, r.param, cfg, r.seed))
        else:
            runs.append(r)
store = RunStore(Path("build/gate-study/runs.jsonl"))
res = run_sweep(runs, store, workers=2)
table = {}
for r, x in zip(runs, res):
    table.setdefault((r.scenario, r.param), {}).setdefault(r.variant, []).append(x.row["cct_us"] / 1e3)
for (sc, p), v in table.items():
    base = median(v["baseline"])
    cells = "  ".join(f"{k}={median(c) / base - 1:+.1%}" for k, c in v.items() if k != "baseline")
    print(f"{sc:13s} {p:5s} base {base:8.1f} ms  {cells}")
