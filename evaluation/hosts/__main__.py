"""`python -m evaluation.hosts`: the closed-loop experiments on bmv2 (docs/experiments.md).

    python -m evaluation.hosts                 # both experiments, 5 repetitions per point
    python -m evaluation.hosts --smoke         # one short run of each, for a quick look

Starts its own bmv2 and controller (evaluation/hosts/testbed.py), needs root and `make build`.
Writes CSV, PNG plots and summary.md under --out (default build/experiments/).
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path

from tqdm import tqdm

from evaluation.hosts import experiments as ex
from evaluation.hosts import report
from evaluation.hosts.testbed import ROOT, Testbed

PAPER_FIG9 = {  # the paper's sec. 4.7, A starting 500 ms late: flow completion times, ms
    "A_baseline": 1382,
    "A_symphony": 1210,
    "B_baseline": 1399,
    "B_symphony": 1433,
    "overlap_baseline": 882,
    "overlap_symphony": 710,
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m evaluation.hosts", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", type=Path, default=ROOT / "build/experiments")
    p.add_argument("--reps", type=int, default=5, help="repetitions per point (seeds 0..reps-1)")
    p.add_argument("--line-pps", type=float, default=4000.0, help="emulated link rate, packets/s")
    p.add_argument("--flow-packets", type=int, default=10000, help="experiment 1 flow size")
    p.add_argument(
        "--offsets", default="0,0.25,0.5,0.75", help="A's start delay, in units of B's alone time"
    )
    p.add_argument("--ks", default="0.001,0.01,0.1", help="Symphony variants (k values)")
    p.add_argument(
        "--gates",
        default="8/0.001",
        help="gated Symphony variants of both experiments, GATE/K each (docs/policy-study.md)",
    )
    p.add_argument("--ring-ks", default="0.001,0.01", help="Symphony variants of experiment 2")
    p.add_argument("--ring-line-pps", type=float, default=2500.0)
    p.add_argument("--chunk", type=int, default=1200, help="experiment 2 chunk, packets per step")
    p.add_argument("--slowdown", type=float, default=1.5, help="experiment 2 slow hop factor")
    p.add_argument(
        "--queue-depth",
        type=int,
        default=1000,
        help="each egress queue's capacity in packets (flows past DCQCN's byte counter need more)",
    )
    p.add_argument("--smoke", action="store_true", help="one short run of each experiment")
    p.add_argument("--only", choices=("pair", "ring"), default=None)
    p.add_argument(
        "--report", action="store_true", help="only rewrite summary.md from --out's CSVs"
    )
    return p.parse_args(argv)


def job_name(*parts: object) -> str:
    """A controller job name (letters, digits, . _ -) for one run."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", "-".join(map(str, parts)))


def write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys and not k.startswith("_")]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.smoke:
        args.reps, args.flow_packets, args.chunk = 1, 2000, 300
        args.offsets, args.ks, args.ring_ks, args.gates = "0.5", "0.01", "0.01", ""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.report:
        return finish(out, json.loads((out / "meta.json").read_text()))
    ks = [float(k) for k in args.ks.split(",") if k]
    gates = ex.parse_gates(args.gates)
    offsets = [float(o) for o in args.offsets.split(",") if o]
    pair_setup = ex.Setup(line_pps=args.line_pps)
    ring_setup = ex.Setup(line_pps=args.ring_line_pps)
    meta = {
        "command": " ".join(["python -m evaluation.hosts", *(argv or sys.argv[1:])]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": f"{platform.machine()}, {platform.node()}",
        "seeds": list(range(args.reps)),
        "queue_depth": args.queue_depth,
        "gates": gates,
        "pair": {
            "line_pps": args.line_pps,
            "time_scale": pair_setup.scaled().scale,
            "t_win_us": pair_setup.t_win_us(),
            "flow_packets": args.flow_packets,
        },
        "ring": {
            "line_pps": args.ring_line_pps,
            "time_scale": ring_setup.scaled().scale,
            "t_win_us": ring_setup.t_win_us(),
            "chunk": args.chunk,
            "slowdown": args.slowdown,
        },
        "dcqcn": pair_setup.dcqcn.__dict__,
    }
    t_start = time.perf_counter()
    with Testbed(out / "run", queue_depth=args.queue_depth) as tb:
        if args.only in (None, "pair"):
            t_alone = args.flow_packets / args.line_pps
            alone = []
            pair_rows = []
            traces = {}
            pair_variants = ex.variants(ks, gates)
            todo = [(v, o, s) for s in range(args.reps) for o in offsets for v in pair_variants]
            for s in tqdm(range(args.reps), desc="exp 1 alone", file=sys.stderr):
                alone.append(
                    ex.run_alone(
                        tb, pair_setup, packets=args.flow_packets, seed=s, name=f"alone-{s}"
                    )
                )
            for v, o, s in tqdm(todo, desc="exp 1 pairs", file=sys.stderr):
                keep = s == 0
                row = ex.run_pair(
                    tb,
                    pair_setup,
                    v,
                    offset=o * t_alone,
                    packets=args.flow_packets,
                    seed=s,
                    name=job_name("pair", v.name, o, s),
                    keep_trace=keep,
                )
                row["offset_frac"] = o
                if keep:
                    traces[(v.name, o)] = row.pop("_trace")
                pair_rows.append(row)
            write_csv(out / "fig9_alone.csv", alone)
            write_csv(out / "fig9_runs.csv", pair_rows)
            report.fig9_plots(out, pair_rows, traces, t_alone)
            meta["pair"]["alone_fct_s"] = statistics.median(r["A_fct_s"] for r in alone)
        if args.only in (None, "ring"):
            ring_rows = []
            ring_intervals = {}
            todo_r = [
                (v, s)
                for s in range(args.reps)
                for v in ex.variants([float(k) for k in args.ring_ks.split(",") if k], gates)
            ]
            for v, s in tqdm(todo_r, desc="exp 2 ring", file=sys.stderr):
                res = ex.run_ring(
                    tb,
                    ring_setup,
                    v,
                    chunk=args.chunk,
                    slow_port=1,
                    slowdown=args.slowdown,
                    jitter_s=0.05 * args.chunk / args.ring_line_pps,
                    seed=s,
                    name=job_name("ring", v.name, s),
                )
                ring_rows.append(res.row)
                if s == 0:
                    ring_intervals[v.name] = res.intervals
            write_csv(out / "ring_runs.csv", ring_rows)
            report.ring_plots(out, ring_rows, ring_intervals)
    meta["wall_s"] = time.perf_counter() - t_start
    (out / "meta.json").write_text(json.dumps(meta, indent=2, default=str))
    return finish(out, meta)


def finish(out: Path, meta: dict) -> int:
    """summary.md from the CSVs; non-zero when a run lost packets or did not complete."""
    summary = report.summary(out, meta, PAPER_FIG9)
    (out / "summary.md").write_text(summary)
    print(summary)
    bad = report.problems(out)
    for b in bad:
        print(f"PROBLEM: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
