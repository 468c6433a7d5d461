"""Two sets of runs of the same cells side by side: old and new median CCT per cell (scenario,
variant, param), each variant against its baseline, and whether the shift is outside the seeds'
spread.

    python -m evaluation.fabric.compare OLD/runs.csv NEW/runs.csv          # one row per cell
    python -m evaluation.fabric.compare OLD/runs.csv NEW/runs.csv --wide   # one per setting

A cell's shift is "outside the spread" when the new median lies outside the old runs'
interquartile range and the old median outside the new runs'. Two sets of seeds drawn from one
distribution are flagged so by chance too: 14 % of the time with 10 seeds a cell, 4 % with 20
(normal samples, 20,000 pairs); a table of 26 cells of 10 seeds has about three such flags with
nothing changed, so a flag asks for a look, not for a conclusion. Written for issue 32, when the
kernel's tie rule changed every run: docs/evaluation.md and docs/policy-study.md show its
output beside each regenerated table.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np

Cell = tuple[str, str, str]  # scenario, variant, param


class Shift(NamedTuple):
    cell: Cell
    seeds: int
    old_ms: float
    new_ms: float
    old_iqr: tuple[float, float]
    new_iqr: tuple[float, float]
    old_vs_base: float | None  # median / the baseline's median - 1, same scenario and param
    new_vs_base: float | None

    @property
    def shift(self) -> float:
        return self.new_ms / self.old_ms - 1

    @property
    def outside(self) -> bool:
        lo, hi = self.old_iqr
        nlo, nhi = self.new_iqr
        return not lo <= self.new_ms <= hi and not nlo <= self.old_ms <= nhi


def load(path: Path) -> dict[Cell, dict[int, float]]:
    """CCT in ms per cell and seed (a run's `error` column must be 0)."""
    cells: dict[Cell, dict[int, float]] = defaultdict(dict)
    with path.open() as f:
        for r in csv.DictReader(f):
            if r.get("error", "0") not in ("0", ""):
                continue
            cells[(r["scenario"], r["variant"], r["param"])][int(r["seed"])] = (
                float(r["cct_us"]) / 1000
            )
    return cells


def _base(cells: dict[Cell, dict[int, float]], cell: Cell, seeds: list[int]) -> float | None:
    base = cells.get((cell[0], "baseline", cell[2])) or cells.get((cell[0], "baseline", ""))
    if base is None or not all(s in base for s in seeds):
        return None
    return float(np.median([base[s] for s in seeds]))


def compare(old: dict[Cell, dict[int, float]], new: dict[Cell, dict[int, float]]) -> list[Shift]:
    """One row per cell both sets ran, on the seeds both ran."""
    rows = []
    for cell in sorted(set(old) & set(new)):
        seeds = sorted(set(old[cell]) & set(new[cell]))
        if not seeds:
            continue
        o = np.array([old[cell][s] for s in seeds])
        n = np.array([new[cell][s] for s in seeds])
        ob, nb = _base(old, cell, seeds), _base(new, cell, seeds)
        rows.append(
            Shift(
                cell=cell,
                seeds=len(seeds),
                old_ms=float(np.median(o)),
                new_ms=float(np.median(n)),
                old_iqr=(float(np.percentile(o, 25)), float(np.percentile(o, 75))),
                new_iqr=(float(np.percentile(n, 25)), float(np.percentile(n, 75))),
                old_vs_base=None if ob is None else float(np.median(o)) / ob - 1,
                new_vs_base=None if nb is None else float(np.median(n)) / nb - 1,
            )
        )
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f} %"


def markdown(rows: list[Shift]) -> str:
    out = [
        "| scenario | variant | param | seeds | old median (ms) | new median (ms) | shift | "
        "old IQR (ms) | old vs baseline | new vs baseline | outside the spread |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        sc, var, param = r.cell
        out.append(
            f"| {sc} | {var} | {param} | {r.seeds} | {r.old_ms:.1f} | {r.new_ms:.1f} | "
            f"{_pct(r.shift)} | {r.old_iqr[0]:.1f}-{r.old_iqr[1]:.1f} | "
            f"{_pct(r.old_vs_base if var != 'baseline' else None)} | "
            f"{_pct(r.new_vs_base if var != 'baseline' else None)} | "
            f"{'**yes**' if r.outside else 'no'} |"
        )
    return "\n".join(out)


def wide(rows: list[Shift]) -> str:
    """One row per (scenario, param): the baseline's median old -> new, each other variant's
    change against it old -> new; a * marks a cell whose shift is outside the seeds' spread."""
    variants = sorted({r.cell[1] for r in rows} - {"baseline"})
    by = {r.cell: r for r in rows}
    settings = sorted({(r.cell[0], r.cell[2]) for r in rows}, key=lambda k: rows_order(rows, k))
    head = "| scenario | param | seeds | baseline (ms) | " + " | ".join(variants) + " |"
    out = [head, "|---|---|---:|---:|" + "---:|" * len(variants)]
    for sc, param in settings:
        base = by.get((sc, "baseline", param))
        cells = []
        for v in variants:
            r = by.get((sc, v, param))
            if r is None or r.old_vs_base is None or r.new_vs_base is None:
                cells.append("-")
            else:
                mark = "*" if r.outside else ""
                cells.append(f"{_pct(r.old_vs_base)} -> {_pct(r.new_vs_base)}{mark}")
        seeds = max(r.seeds for r in rows if (r.cell[0], r.cell[2]) == (sc, param))
        b = (
            "-"
            if base is None
            else f"{base.old_ms:.1f} -> {base.new_ms:.1f}{'*' if base.outside else ''}"
        )
        out.append(f"| {sc} | {param} | {seeds} | {b} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def rows_order(rows: list[Shift], key: tuple[str, str]) -> int:
    """Settings in the order the input lists them."""
    return next(i for i, r in enumerate(rows) if (r.cell[0], r.cell[2]) == key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--wide", action="store_true", help="one row per (scenario, param)")
    args = ap.parse_args()
    rows = compare(load(args.old), load(args.new))
    print(wide(rows) if args.wide else markdown(rows))
    n_out = sum(r.outside for r in rows)
    print(f"\n{len(rows)} cells, {n_out} shifted outside the seeds' spread")


if __name__ == "__main__":
    main()
