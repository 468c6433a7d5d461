"""`python -m evaluation.hosts`: the closed-loop experiments on bmv2 (docs/experiments.md).

    python -m evaluation.hosts                 # both experiments, 5 repetitions per point
    python -m evaluation.hosts --smoke         # one short run of each, for a quick look

Starts its own bmv2 and controller (evaluation/hosts/testbed.py), needs root and `make build`.
Writes CSV, PNG plots and summary.md under --out (default build/experiments/). Each valid run
is appended to its CSV as it ends; run the same command again and it resumes (runs already in
the CSVs are skipped), `--fresh` discards them. A run the harness spoiled is redone with the same
seed (evaluation/hosts/runs.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from evaluation.hosts import calibration as cal
from evaluation.hosts import experiments as ex
from evaluation.hosts import report, runs
from evaluation.hosts.nic import RT_PRIORITY
from evaluation.hosts.testbed import ROOT, SWITCH_RT_PRIORITY, Testbed

PAPER_FIG9 = {  # the paper's sec. 4.7, A starting 500 ms late: flow completion times, ms
    "A_baseline": 1382,
    "A_symphony": 1210,
    "B_baseline": 1399,
    "B_symphony": 1433,
    "overlap_baseline": 882,
    "overlap_symphony": 710,
}


PROG = "python -m evaluation.hosts"
CALIBRATION_SEED = 1000  # the calibration's runs: a seed no reported run uses
RESULT_FILES = (
    "fig9_alone.csv",
    "fig9_runs.csv",
    "ring_runs.csv",
    "spoiled_runs.csv",
    "traces",
    "meta.json",
    "summary.md",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m evaluation.hosts", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default build/experiments, build/experiments-smoke with --smoke)",
    )
    p.add_argument("--reps", type=int, default=5, help="repetitions per point (seeds 0..reps-1)")
    p.add_argument(
        "--line-pps",
        type=float,
        default=4000.0,
        help="emulated link rate, packets/s: the planned one (the calibration may lower it)",
    )
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
    p.add_argument(
        "--max-reruns",
        type=int,
        default=None,
        help="how often a run the harness spoiled is redone (same seed) before giving up"
        " (default: as the calibration plans, at least 3)",
    )
    p.add_argument(
        "--calibrate-s",
        type=float,
        default=cal.CALIBRATE_S,
        help="seconds of traffic the calibration measures before the runs (0: none, run at the"
        " given rates; docs/experiments.md, Calibration)",
    )
    p.add_argument(
        "--rt-priority",
        type=int,
        default=RT_PRIORITY,
        help="SCHED_FIFO priority of the hosts' loop while a run lasts (0: normal scheduler)",
    )
    p.add_argument(
        "--switch-rt-priority",
        type=int,
        default=SWITCH_RT_PRIORITY,
        help="SCHED_FIFO priority of bmv2's threads, below the hosts' (0: normal scheduler)",
    )
    p.add_argument(
        "--fresh", action="store_true", help="discard the runs already in --out and start over"
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


def settings_of(args: argparse.Namespace, factor: float = 1.0) -> dict[str, Any]:
    """Everything that changes the result of one run: runs made with other settings cannot be
    mixed with this invocation's (the lists of variants, offsets and seeds may differ).
    `factor`: the calibration's rate factor (every emulated rate is that times the planned)."""
    pair = ex.Setup(line_pps=args.line_pps).at(factor)
    ring = ex.Setup(line_pps=args.ring_line_pps).at(factor)
    return {
        "queue_depth": args.queue_depth,
        "rate_factor": factor,
        "pair": {"line_pps": pair.line_pps, "flow_packets": args.flow_packets},
        "ring": {"line_pps": ring.line_pps, "chunk": args.chunk, "slowdown": args.slowdown},
        "dcqcn": pair.dcqcn.__dict__,
        "lateness_limit_ms": {
            "pair": round(pair.lateness_limit_ms(), 6),
            "ring": round(ring.lateness_limit_ms(), 6),
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.smoke:
        args.reps, args.flow_packets, args.chunk = 1, 2000, 300
        args.offsets, args.ks, args.ring_ks, args.gates = "0.5", "0.01", "0.01", ""
    default_out = "build/experiments-smoke" if args.smoke else "build/experiments"
    out: Path = args.out or ROOT / default_out
    out.mkdir(parents=True, exist_ok=True)
    if args.report:
        return finish(out, json.loads((out / "meta.json").read_text()))
    ks = [float(k) for k in args.ks.split(",") if k]
    gates = ex.parse_gates(args.gates)
    offsets = [float(o) for o in args.offsets.split(",") if o]
    ring_ks = [float(k) for k in args.ring_ks.split(",") if k]
    stored = runs.stored_settings(out, RESULT_FILES) if not args.fresh else None
    factor = float(stored.get("rate_factor", 1.0)) if stored is not None else None
    if factor is not None and not runs.open_or_explain(  # resuming: the runs there fix the rates
        out, settings_of(args, factor), fresh=False, files=RESULT_FILES, prog=PROG
    ):
        return 2
    meta_path = out / "meta.json"  # a resumed invocation's record goes on, a fresh one starts anew
    old_meta = (
        json.loads(meta_path.read_text()) if stored is not None and meta_path.is_file() else {}
    )
    t_start = time.perf_counter()
    wall_before = old_meta.get("wall_s", 0.0)
    with Testbed(
        out / "run", queue_depth=args.queue_depth, rt_priority=args.switch_rt_priority
    ) as tb:
        planned = {"pair": args.line_pps, "ring": args.ring_line_pps}
        demands = [
            d
            for d in (
                cal.Demand(
                    "exp 1",
                    args.reps * (1 + len(offsets) * len(ex.variants(ks, gates))),
                    ex.pair_attempt_s(args.flow_packets, args.line_pps),
                    ex.Setup(args.line_pps).lateness_limit_ms(),
                ),
                cal.Demand(
                    "exp 2",
                    args.reps * len(ex.variants(ring_ks, gates)),
                    ex.ring_attempt_s(args.chunk, args.ring_line_pps, args.slowdown),
                    ex.Setup(args.ring_line_pps).lateness_limit_ms(),
                ),
            )
            if args.only is None or d.name == {"pair": "exp 1", "ring": "exp 2"}[args.only]
        ]
        calibration = calibrate(args, tb, demands, factor)
        if calibration is not None:
            print(f"calibration: {calibration['text']}", file=sys.stderr)
            if calibration["refused"]:
                print(f"{PROG}: {calibration['refused']}", file=sys.stderr)
                (out / "calibration.json").write_text(json.dumps(calibration, indent=2))
                return 2
            factor = calibration["factor"]
        factor = 1.0 if factor is None else factor
        if stored is None:
            runs.open_or_explain(
                out, settings_of(args, factor), fresh=True, files=RESULT_FILES, prog=PROG
            )
        pair_setup = ex.Setup(line_pps=args.line_pps, rt_priority=args.rt_priority).at(factor)
        ring_setup = ex.Setup(line_pps=args.ring_line_pps, rt_priority=args.rt_priority).at(factor)
        meta = {
            "command": " ".join(["python -m evaluation.hosts", *(argv or sys.argv[1:])]),
            "started": old_meta.get("started", time.strftime("%Y-%m-%d %H:%M:%S")),
            "machine": f"{platform.machine()}, {platform.node()}, {os.cpu_count()} cores",
            "seeds": list(range(args.reps)),
            "queue_depth": args.queue_depth,
            "gates": gates,
            "max_reruns": args.max_reruns,  # None: planned (runs.Cells)
            "rt_priority": args.rt_priority,
            "switch_rt_priority": args.switch_rt_priority,
            "rate_factor": factor,
            "planned_line_pps": planned,
            "calibration": calibration or old_meta.get("calibration"),
            "pair": {
                "line_pps": pair_setup.line_pps,
                "time_scale": pair_setup.scaled().scale,
                "t_win_us": pair_setup.t_win_us(),
                "lateness_limit_ms": pair_setup.lateness_limit_ms(),
                "flow_packets": args.flow_packets,
            },
            "ring": {
                "line_pps": ring_setup.line_pps,
                "time_scale": ring_setup.scaled().scale,
                "t_win_us": ring_setup.t_win_us(),
                "lateness_limit_ms": ring_setup.lateness_limit_ms(),
                "chunk": args.chunk,
                "slowdown": args.slowdown,
            },
            "dcqcn": pair_setup.dcqcn.__dict__,
        }
        traces = out / "traces"
        traces.mkdir(exist_ok=True)
        cells = runs.Cells(out, args.max_reruns)
        forecast = (calibration or {}).get("predicted_spoiled", {})
        for d in demands:
            for name in (d.name, f"{d.name} alone"):
                cells.expect(name, d.cells, forecast.get(d.name, 0.0))

        def save_meta() -> None:
            """meta.json after every run: an interrupted invocation's time still counts."""
            meta["wall_s"] = wall_before + time.perf_counter() - t_start
            meta["unresolved"] = cells.unresolved
            meta["attempts_allowed"] = {e: cells.attempts(e) for e in cells.tally}
            (out / "meta.json").write_text(json.dumps(meta, indent=2, default=str))

        meta["switch_realtime"] = tb.realtime
        try:
            if args.only in (None, "pair"):
                t_alone = args.flow_packets / pair_setup.line_pps
                limit = pair_setup.lateness_limit_ms()
                alone = runs.RunLog(out / "fig9_alone.csv", ("seed",))
                todo_alone = [s for s in range(args.reps) if not alone.done(seed=s)]
                for s in tqdm(todo_alone, desc="exp 1 alone", file=sys.stderr):

                    def one_alone(n: int, s: int = s) -> dict:
                        name = job_name("alone", s, *(["r", n] if n else []))
                        return ex.run_alone(
                            tb, pair_setup, packets=args.flow_packets, seed=s, name=name
                        )

                    row = cells.run("exp 1 alone", f"seed {s}", one_alone, limit)
                    if row is not None:
                        alone.append(row)
                    save_meta()
                pairs = runs.RunLog(out / "fig9_runs.csv", ("variant", "offset_frac", "seed"))
                todo = [
                    (v, o, s)
                    for s in range(args.reps)
                    for o in offsets
                    for v in ex.variants(ks, gates)
                    if not pairs.done(variant=v.name, offset_frac=o, seed=s)
                ]
                for v, o, s in tqdm(todo, desc="exp 1 pairs", file=sys.stderr):

                    def one_pair(n: int, v: ex.Variant = v, o: float = o, s: int = s) -> dict:
                        row = ex.run_pair(
                            tb,
                            pair_setup,
                            v,
                            offset=o * t_alone,
                            packets=args.flow_packets,
                            seed=s,
                            name=job_name("pair", v.name, o, s, *(["r", n] if n else [])),
                            keep_trace=s == 0,
                        )
                        row["offset_frac"] = o
                        return row

                    row = cells.run("exp 1", f"{v.name} offset {o:g} seed {s}", one_pair, limit)
                    if row is not None:
                        if "_trace" in row:
                            report.save_trace(
                                traces / f"pair-{v.name}-{o:g}.json",
                                {"variant": v.name, "offset": o, **row.pop("_trace")},
                            )
                        pairs.append(row)
                    save_meta()
                report.fig9_plots(
                    out, report.read_rows(pairs.path), report.load_pair_traces(traces), t_alone
                )
                alone_rows = report.read_rows(alone.path)
                if alone_rows:
                    fcts = [r["A_fct_s"] for r in alone_rows]
                    meta["pair"]["alone_fct_s"] = statistics.median(fcts)
            if args.only in (None, "ring"):
                limit = ring_setup.lateness_limit_ms()
                rings = runs.RunLog(out / "ring_runs.csv", ("variant", "seed"))
                todo_r = [
                    (v, s)
                    for s in range(args.reps)
                    for v in ex.variants(ring_ks, gates)
                    if not rings.done(variant=v.name, seed=s)
                ]
                for v, s in tqdm(todo_r, desc="exp 2 ring", file=sys.stderr):

                    def one_ring(n: int, v: ex.Variant = v, s: int = s) -> dict:
                        res = ex.run_ring(
                            tb,
                            ring_setup,
                            v,
                            chunk=args.chunk,
                            slow_port=1,
                            slowdown=args.slowdown,
                            jitter_s=0.05 * args.chunk / ring_setup.line_pps,
                            seed=s,
                            name=job_name("ring", v.name, s, *(["r", n] if n else [])),
                        )
                        return {**res.row, "_intervals": res.intervals}

                    row = cells.run("exp 2", f"{v.name} seed {s}", one_ring, limit)
                    if row is not None:
                        intervals = row.pop("_intervals")
                        if s == 0:
                            report.save_trace(
                                traces / f"ring-{v.name}.json",
                                {"variant": v.name, "intervals": intervals},
                            )
                        rings.append(row)
                    save_meta()
                if rings.rows:
                    report.ring_plots(
                        out, report.read_rows(rings.path), report.load_ring_traces(traces)
                    )
        except runs.TooManySpoiled as e:
            cells.unresolved.append(str(e))
    save_meta()
    return finish(out, meta)


def calibrate(
    args: argparse.Namespace, tb: Testbed, demands: list[cal.Demand], factor: float | None
) -> dict[str, Any] | None:
    """Measure the machine at the planned rates and plan the rate factor and the attempts per
    cell (calibration.py); with `factor` (resuming) only that factor is considered. None
    with --calibrate-s 0."""
    if args.calibrate_s <= 0:
        return None
    setup = ex.Setup(line_pps=args.line_pps * (factor or 1.0), rt_priority=args.rt_priority)
    if factor is not None:  # measured at the stored rate: forecasts relative to it
        demands = [
            replace(d, attempt_s=d.attempt_s / factor, limit_ms=d.limit_ms / factor)
            for d in demands
        ]
    stalls, p = cal.measure_and_plan(
        lambda: ex.calibrate(
            tb,
            setup,
            seconds=args.calibrate_s,
            packets=round(2 * setup.line_pps),
            seed=CALIBRATION_SEED,
        ),
        lambda st: cal.plan(st, demands, factors=(1.0,) if factor is not None else cal.FACTORS),
    )
    return cal.record(stalls, p, (factor or 1.0) * p.factor)


def finish(out: Path, meta: dict) -> int:
    """summary.md from the CSVs; non-zero when a run could not be made valid (the reasons)."""
    summary = report.summary(out, meta, PAPER_FIG9)
    (out / "summary.md").write_text(summary)
    print(summary)
    bad = report.problems(out, meta)
    for b in bad:
        print(f"PROBLEM: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
