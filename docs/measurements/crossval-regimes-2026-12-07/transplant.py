"""Copy the cross-validation's kernel runs into the regime map's store where a map run has the
same configuration (config hash) and seed, so `regime_map` runs only what is missing. A run's
result is a function of (config, seed, RESULTS_VERSION) alone (evaluation/fabric/sweep.py); only
its names (scenario, variant, param) differ between the two stores.

    python docs/measurements/crossval-regimes-2026-12-07/transplant.py \
        build/crossval/runs.jsonl build/regime-map/runs.jsonl --hosts 32
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from evaluation.fabric import regime_map as rm
from evaluation.fabric.sweep import run_key


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source", type=Path)
    ap.add_argument("target", type=Path)
    ap.add_argument("--hosts", type=int, nargs="+", default=[32])
    ap.add_argument("--seeds-32", type=int, default=len(rm.SEEDS[32]), help="as regime_map's")
    a = ap.parse_args()
    by_cfg: dict[tuple[str, str], dict] = {}
    for line in a.source.read_text().splitlines():
        d = json.loads(line)
        _, _, _, seed, cfg_hash, version = d["key"].split("|")
        by_cfg.setdefault((cfg_hash, seed, version), d["row"])
    have = set()
    if a.target.exists():
        have = {json.loads(x)["key"] for x in a.target.read_text().splitlines()}
    grid = rm.Grid(
        hosts=tuple(a.hosts),
        seeds={h: range(100, 100 + a.seeds_32) if h == 32 else rm.SEEDS[h] for h in a.hosts},
        layouts=rm.LAYOUTS,
        nics=rm.NICS,
        chunks=rm.CHUNKS,
        chunks_512=(8 << 20,),
        options=tuple(o.name for o in rm.OPTIONS),
    )
    n = 0
    a.target.parent.mkdir(parents=True, exist_ok=True)
    with a.target.open("a") as fh:
        for r in rm.runs(grid):
            key = run_key(r)
            _, _, _, seed, cfg_hash, version = key.split("|")
            row = by_cfg.get((cfg_hash, seed, version))
            if row is None or key in have:
                continue
            row = dict(row, scenario=r.scenario, variant=r.variant, param=r.param)
            fh.write(json.dumps({"key": key, "row": row, "series": None}) + "\n")
            n += 1
    print(f"{n} runs copied into {a.target}")


if __name__ == "__main__":
    main()
