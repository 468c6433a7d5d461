"""The fabric table: every (setup, NIC profile, variant) of several `fabric_experiment` runs,
bmv2 and the simulator side by side, against issue 44's tolerance (the simulator's median CCT
within 10 % of bmv2's; a policy's change against the baseline within 5 points of bmv2's, with
the same sign). Runs with the switches' ACK class on (`fabric_experiment --ack-class
priority`) are measured against DCQCN alone, the baseline of the same setup and profile with
ACKs in data's queue, where the table has it: "ACK priority" is the class alone, "ACK priority +
<variant>" the class with a policy (issue 46). Beside them the simulator with the class as a
real switch serves it, ACKs taking their port's time (bmv2 gives its priority queue a rate of
its own: docs/ack_priority.md).

    python -m evaluation.hosts.fabric_table build/b44/*/ > table.md
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from evaluation.hosts.flow_compare import setup_of

CCT_TOLERANCE = 0.10  # the simulator's median CCT against bmv2's
CHANGE_TOLERANCE_PTS = 5.0  # a policy's change against the baseline, percentage points
BASELINE = "baseline"


@dataclass(frozen=True)
class Cell:
    setup: str
    profile: str
    variant: str
    seeds: list[int]
    bmv2_s: float  # median CCT over the seeds, emulated seconds
    bmv2_lo: float
    bmv2_hi: float
    sim_s: float
    bmv2_change: float  # percent against the same setup's baseline (0 for the baseline)
    sim_change: float
    ack_class: str = "data"  # the switches' queue for ACKs (fabric_experiment --ack-class)
    # the simulator with the ACK class sharing its port with data, as on a real switch
    sim_shared_s: float | None = None
    sim_shared_change: float | None = None

    @property
    def is_reference(self) -> bool:
        """DCQCN alone, the cell every change is measured against."""
        return self.variant == BASELINE and self.ack_class == "data"

    @property
    def name(self) -> str:
        if self.ack_class == "data":
            return self.variant
        return "ACK priority" + ("" if self.variant == BASELINE else f" + {self.variant}")

    @property
    def cct_off(self) -> float:
        """The simulator's median CCT against bmv2's, as a fraction."""
        return self.sim_s / self.bmv2_s - 1

    @property
    def change_off(self) -> float:
        return self.sim_change - self.bmv2_change

    @property
    def within(self) -> bool:
        ok = abs(self.cct_off) <= CCT_TOLERANCE
        if not self.is_reference:
            same_sign = (self.sim_change >= 0) == (self.bmv2_change >= 0)
            ok = ok and abs(self.change_off) <= CHANGE_TOLERANCE_PTS and same_sign
        return ok


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def cells(out: Path) -> list[Cell]:
    """The cells of one fabric_experiment output directory (complete runs only)."""
    s = setup_of(out)
    label = f"{s.leaves}x{s.spines}x{s.hosts_per_leaf}, {s.rings} ring(s), {s.chunk_packets} pkts"
    bm: dict[str, dict[int, float]] = defaultdict(dict)
    for r in _rows(out / "runs.csv"):
        if r.get("complete", "True") == "True":
            bm[r["variant"]][int(r["seed"])] = float(r["cct_s"])
    sim: dict[str, dict[int, float]] = defaultdict(dict)
    shared: dict[str, dict[int, float]] = defaultdict(dict)
    for r in _rows(out / "sim.csv"):
        sim[r["variant"]][int(r["seed"])] = float(r["sim_cct_s"])
        if r.get("sim_shared_port_cct_s"):
            shared[r["variant"]][int(r["seed"])] = float(r["sim_shared_port_cct_s"])
    if BASELINE not in bm:
        raise ValueError(f"{out}: no baseline runs")
    med = {v: statistics.median(x.values()) for v, x in bm.items()}
    # the simulator on the seeds bmv2 completed
    smed = {v: statistics.median(sim[v][k] for k in bm[v]) for v in bm}
    shmed = {
        v: statistics.median(shared[v][k] for k in bm[v])
        for v in bm
        if shared[v] and all(k in shared[v] for k in bm[v])
    }
    out_cells = []
    for v in bm:
        out_cells.append(
            Cell(
                setup=label,
                profile=s.profile,
                variant=v,
                seeds=sorted(bm[v]),
                bmv2_s=med[v],
                bmv2_lo=min(bm[v].values()),
                bmv2_hi=max(bm[v].values()),
                sim_s=smed[v],
                bmv2_change=(med[v] / med[BASELINE] - 1) * 100,
                sim_change=(smed[v] / smed[BASELINE] - 1) * 100,
                ack_class=s.ack_class,
                sim_shared_s=shmed.get(v),
                sim_shared_change=(
                    (shmed[v] / shmed[BASELINE] - 1) * 100
                    if v in shmed and BASELINE in shmed
                    else None
                ),
            )
        )
    return out_cells


def against_dcqcn_alone(all_cells: list[Cell]) -> list[Cell]:
    """The ACK class's cells with their change against the same setup and profile's DCQCN
    alone (its data-queue baseline), where the table has that; else against their own
    baseline, as each directory's summary has it."""
    ref = {(c.setup, c.profile): c for c in all_cells if c.is_reference}
    out = []
    for c in all_cells:
        b = ref.get((c.setup, c.profile))
        if c.ack_class != "data" and b is not None:
            c = replace(
                c,
                bmv2_change=(c.bmv2_s / b.bmv2_s - 1) * 100,
                sim_change=(c.sim_s / b.sim_s - 1) * 100,
                sim_shared_change=None
                if c.sim_shared_s is None
                else (c.sim_shared_s / b.sim_s - 1) * 100,
            )
        out.append(c)
    return out


def _shared(c: Cell) -> str:
    if c.sim_shared_s is None:
        return ""
    change = "" if c.sim_shared_change is None else f" ({c.sim_shared_change:+.1f} %)"
    return f"{c.sim_shared_s:.3f} s{change}"


def markdown(all_cells: list[Cell]) -> str:
    lines = [
        "| setup | profile | variant | seeds | CCT bmv2, median (range) | simulator | sim vs bmv2 "
        "| change bmv2 | change simulator | difference | within tolerance "
        "| simulator, ACKs sharing the port (change) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for c in all_cells:
        base = c.is_reference
        seeds = f"{c.seeds[0]}-{c.seeds[-1]}" if len(c.seeds) > 1 else str(c.seeds[0])
        lines.append(
            f"| {c.setup} | {c.profile} | {c.name} | {seeds} | {c.bmv2_s:.3f} s "
            f"({c.bmv2_lo:.2f}-{c.bmv2_hi:.2f}) | {c.sim_s:.3f} s | {c.cct_off * 100:+.1f} % | "
            + ("" if base else f"{c.bmv2_change:+.1f} %")
            + " | "
            + ("" if base else f"{c.sim_change:+.1f} %")
            + " | "
            + ("" if base else f"{c.change_off:+.1f} pts")
            + f" | {'yes' if c.within else '**no**'} | "
            + _shared(c)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+", help="fabric_experiment output directories")
    args = ap.parse_args(argv)
    out: list[Cell] = []
    for d in args.runs:
        try:
            out += cells(d)
        except (OSError, ValueError, KeyError) as e:
            print(f"fabric_table: {d}: {e}", file=sys.stderr)
            return 2
    print(markdown(against_dcqcn_alone(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
