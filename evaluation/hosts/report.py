"""Tables and plots of the closed-loop experiments, from the CSVs they wrote."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import contextlib

import matplotlib.pyplot as plt

from evaluation.hosts import calibration as cal
from evaluation.hosts import runs
from evaluation.hosts.experiments import median, overlap_series
from evaluation.hosts.losses import PLACES


def read_rows(path: Path) -> list[dict]:
    """A CSV of runs, numbers as floats, empty fields as NaN."""
    return _read(path)


def save_trace(path: Path, data: dict) -> None:
    """One run's time series (seed 0), kept beside the CSVs so a resumed experiment still
    plots the runs an earlier invocation made."""
    path.write_text(json.dumps(data, separators=(",", ":")))


def load_pair_traces(folder: Path) -> dict[tuple[str, float], dict]:
    out = {}
    for f in sorted(folder.glob("pair-*.json")):
        d = json.loads(f.read_text())
        out[(d["variant"], float(d["offset"]))] = {"arrivals": d["arrivals"], "rates": d["rates"]}
    return out


def load_ring_traces(folder: Path) -> dict[str, list[tuple[float, float, int]]]:
    out = {}
    for f in sorted(folder.glob("ring-*.json")):
        d = json.loads(f.read_text())
        out[d["variant"]] = [tuple(x) for x in d["intervals"]]
    return out


def _read(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with path.open() as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k, v in r.items():
            if v == "":
                r[k] = math.nan  # a field an incomplete run could not measure
            with contextlib.suppress(TypeError, ValueError):
                r[k] = float(v)
    return rows


def _spread(xs: list[float], scale: float = 1.0, fmt: str = "{:.0f}") -> str:
    xs = [x * scale for x in xs if isinstance(x, float) and not math.isnan(x)]
    if not xs:
        return "-"
    m = median(xs)
    return f"{fmt.format(m)} [{fmt.format(min(xs))}-{fmt.format(max(xs))}]"


def _change(new: float, ref: float) -> str:
    if math.isnan(new) or math.isnan(ref) or ref == 0:
        return "-"
    return f"{(new / ref - 1) * 100:+.1f} %"


def fig9_plots(out: Path, rows: list[dict], traces: dict, t_alone: float) -> None:
    """Timeline (per-flow goodput over time) at each offset, baseline vs each Symphony k; and
    completion times against the offset."""
    offsets = sorted({o for _v, o in traces})
    names = sorted({v for v, _o in traces}, key=lambda n: (n != "baseline", n))
    if offsets:
        fig, axes = plt.subplots(
            len(offsets),
            len(names),
            figsize=(3.2 * len(names), 2.2 * len(offsets)),
            squeeze=False,
            sharex=True,
            sharey=True,
        )
        for i, o in enumerate(offsets):
            for j, v in enumerate(names):
                ax = axes[i][j]
                tr = traces.get((v, o))
                if tr is None:
                    continue
                for f, color in (("A", "tab:blue"), ("B", "tab:orange")):
                    times = [t for t, _s, _ce in tr["arrivals"][f]]
                    if not times:
                        continue
                    width = t_alone / 40
                    nb = int(max(times) / width) + 1
                    counts = [0] * nb
                    for t in times:
                        counts[int(t / width)] += 1
                    ax.plot(
                        [(k + 0.5) * width for k in range(nb)],
                        [c / width for c in counts],
                        color=color,
                        label=f"flow {f}" + (" (lagging)" if f == "A" else " (ahead)"),
                    )
                if i == 0:
                    ax.set_title(v)
                if j == 0:
                    ax.set_ylabel(f"offset {o:g}\npkt/s")
                if i == len(offsets) - 1:
                    ax.set_xlabel("time (s, emulated)")
        axes[0][0].legend(fontsize=7)
        fig.suptitle("Experiment 1: receive rate per flow (seed 0)")
        fig.tight_layout()
        fig.savefig(out / "fig9_timeline.png", dpi=110)
        plt.close(fig)
    if not rows:
        return
    by = defaultdict(list)
    for r in rows:
        by[r["variant"]].append(r)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for v, rs in sorted(by.items(), key=lambda kv: (kv[0] != "baseline", kv[0])):
        offs = sorted({r["offset_frac"] for r in rs})
        for ax, key in zip(axes, ("A_fct_s", "B_fct_s", "overlap_s"), strict=True):
            ax.plot(
                offs,
                [median([r.get(key, math.nan) for r in rs if r["offset_frac"] == o]) for o in offs],
                marker="o",
                label=v,
            )
    for ax, t in zip(
        axes,
        ("flow A (lagging) completion", "flow B (ahead) completion", "both on the wire"),
        strict=True,
    ):
        ax.set_title(t)
        ax.set_xlabel("A's start delay / B's alone time")
        ax.set_ylabel("s (emulated), median")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "fig9_completion.png", dpi=110)
    plt.close(fig)


def ring_plots(out: Path, rows: list[dict], intervals: dict) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    for v, iv in sorted(intervals.items(), key=lambda kv: (kv[0] != "baseline", kv[0])):
        end = max(b for _a, b, _s in iv)
        series = overlap_series(iv, end)
        axes[0].step([t for t, _o in series], [o for _t, o in series], where="post", label=v)
    axes[0].set_title("step overlap over time (seed 0)")
    axes[0].set_xlabel("time (s, emulated)")
    axes[0].set_ylabel("distinct steps on the wire")
    axes[0].legend(fontsize=8)
    by = defaultdict(list)
    for r in rows:
        by[r["variant"]].append(r["cct_s"])
    names = sorted(by, key=lambda n: (n != "baseline", n))
    axes[1].boxplot([by[n] for n in names], tick_labels=names)
    bound = median([r["lockstep_bound_s"] for r in rows])
    axes[1].axhline(bound, color="gray", linestyle="--", label="lockstep bound")
    axes[1].set_title("Ring-AllReduce completion time")
    axes[1].set_ylabel("s (emulated)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "ring.png", dpi=110)
    plt.close(fig)


def summary(out: Path, meta: dict, paper: dict) -> str:
    lines = ["# Closed-loop experiments on bmv2", ""]
    lines.append(
        f"Command: `{meta['command']}`; seeds {meta['seeds']}; wall {meta.get('wall_s', 0):.0f} s."
    )
    rows = _read(out / "fig9_runs.csv")
    alone = _read(out / "fig9_alone.csv")
    spoiled = _read(out / "spoiled_runs.csv")
    lines += calibration_section(
        meta,
        {
            "exp 1": (len(alone) + len(rows), [r for r in spoiled if r["experiment"] != "exp 2"]),
            "exp 2": (len(_read(out / "ring_runs.csv")), _of(spoiled, "exp 2")),
        },
    )
    if rows:
        pm = meta["pair"]
        lines += [
            "",
            "## Experiment 1: two flows, B one step ahead (paper Fig. 9)",
            "",
            f"Link {pm['line_pps']:.0f} pkt/s = 10 Gb/s scaled by {pm['time_scale']:.0f}"
            f" (every DCQCN timer and T_win = {pm['t_win_us']:.0f} us scaled alike);"
            f" {pm['flow_packets']} packets of 1 KB per flow.",
            f"One flow alone: {_spread([r['A_fct_s'] for r in alone], 1e3)} ms (median [min-max];"
            f" its line time {1e3 * pm['flow_packets'] / pm['line_pps']:.0f} ms: a longer one says"
            " bmv2 did not keep its queue rate).",
            "",
            "Times in emulated ms, median [min-max] over the seeds; change vs baseline at the"
            " same offset.",
            "",
            "| A delay / alone | variant | A completion | B completion | both on wire |"
            " A vs base | B vs base | overlap vs base | CE on A | CE on B | CNPs A/B |"
            " Symphony marks | queue marks | queue drops | reruns |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        by = defaultdict(list)
        for r in rows:
            by[(r["offset_frac"], r["variant"])].append(r)
        for o in sorted({r["offset_frac"] for r in rows}):
            base = by.get((o, "baseline"), [])
            mb = {
                k: median([r.get(k, math.nan) for r in base])
                for k in ("A_fct_s", "B_fct_s", "overlap_s")
            }
            for v in sorted({r["variant"] for r in rows}, key=lambda n: (n != "baseline", n)):
                rs = by.get((o, v), [])
                if not rs:
                    continue
                m = {k: median([r.get(k, math.nan) for r in rs]) for k in mb}
                lines.append(
                    f"| {o:g} | {v} | {_spread([r.get('A_fct_s', math.nan) for r in rs], 1e3)}"
                    f" | {_spread([r.get('B_fct_s', math.nan) for r in rs], 1e3)}"
                    f" | {_spread([r.get('overlap_s', math.nan) for r in rs], 1e3)}"
                    f" | {_change(m['A_fct_s'], mb['A_fct_s'])}"
                    f" | {_change(m['B_fct_s'], mb['B_fct_s'])}"
                    f" | {_change(m['overlap_s'], mb['overlap_s'])}"
                    f" | {median([r.get('A_ce', math.nan) for r in rs]):.0f}"
                    f" | {median([r.get('B_ce', math.nan) for r in rs]):.0f}"
                    f" | {median([r.get('A_cnps', math.nan) for r in rs]):.0f}"
                    f"/{median([r.get('B_cnps', math.nan) for r in rs]):.0f}"
                    f" | {median([r['symphony_marks'] for r in rs]):.0f}"
                    f" | {median([r['queue_marks'] for r in rs]):.0f}"
                    f" | {_total(rs, 'lost_queue')} | {_total(rs, 'reruns')} |"
                )
        lines += [
            "",
            f"Paper (Tofino2, 1 GB flows, A 500 ms late, i.e. delay/alone ~0.5): A"
            f" {paper['A_baseline']} -> {paper['A_symphony']} ms (-12 %), B {paper['B_baseline']}"
            f" -> {paper['B_symphony']} ms (+2 %), both on wire {paper['overlap_baseline']} ->"
            f" {paper['overlap_symphony']} ms (-19.5 %).",
        ]
        lines.append(_hosts_line(rows, pm))
    ring = _read(out / "ring_runs.csv")
    if ring:
        rm = meta["ring"]
        lines += [
            "",
            "## Experiment 2: Ring-AllReduce, 4 hosts, two counter-rotating rings, one slow hop",
            "",
            f"Links {rm['line_pps']:.0f} pkt/s (scale {rm['time_scale']:.0f}), port 1 slowed"
            f" {rm['slowdown']:g}x; {rm['chunk']} packets per chunk, 6 steps per ring.",
            "",
            "| variant | CCT (ms) | vs baseline | lockstep bound (ms) | overlap mean |"
            " overlap max |"
            " Symphony marks | queue marks | CNPs | queue drops | reruns |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        by = defaultdict(list)
        for r in ring:
            by[r["variant"]].append(r)
        base = median([r["cct_s"] for r in by.get("baseline", [])])
        for v in sorted(by, key=lambda n: (n != "baseline", n)):
            rs = by[v]
            lines.append(
                f"| {v} | {_spread([r['cct_s'] for r in rs], 1e3)}"
                f" | {_change(median([r['cct_s'] for r in rs]), base)}"
                f" | {median([r['lockstep_bound_s'] for r in rs]) * 1e3:.0f}"
                f" | {_spread([r['overlap_mean'] for r in rs], fmt='{:.2f}')}"
                f" | {_spread([r['overlap_max'] for r in rs])}"
                f" | {median([r['symphony_marks'] for r in rs]):.0f}"
                f" | {median([r['queue_marks'] for r in rs]):.0f}"
                f" | {median([r['cnps'] for r in rs]):.0f}"
                f" | {_total(rs, 'lost_queue')} | {_total(rs, 'reruns')} |"
            )
        lines += ["", _hosts_line(ring, rm)]
    lines += _losses_section(out, meta)
    lines.append("")
    return "\n".join(lines)


def _total(rows: list[dict], key: str) -> str:
    xs = [r.get(key, math.nan) for r in rows]
    xs = [x for x in xs if isinstance(x, float) and not math.isnan(x)]
    return f"{sum(xs):.0f}" if xs else "-"


def _hosts_line(rows: list[dict], m: dict) -> str:
    lags = [r.get("max_lag_ms", math.nan) for r in rows]
    lag = max((x for x in lags if isinstance(x, float) and not math.isnan(x)), default=math.nan)
    limit = m.get("lateness_limit_ms", math.nan)
    return (
        f"Hosts: worst send lateness {lag:.2f} ms in the valid runs (limit {limit:.2f} ms), against"
        f" a packet gap of {1e3 / m['line_pps']:.2f} ms."
    )


def _of(rows: list[dict], experiment: str) -> list[dict]:
    return [r for r in rows if r.get("experiment") == experiment]


def calibration_section(meta: dict, attempts: dict[str, tuple[int, list[dict]]]) -> list[str]:
    """What the calibration measured and chose (calibration.py), and the spoiled attempts it
    was planned against: per experiment, valid runs and spoiled attempts (the spoiled rows)."""
    c = meta.get("calibration")
    lines = ["", "## Calibration and spoiled attempts", ""]
    if c:
        lines.append(
            f"Measured before the runs: {c['text']}. Rates used:"
            f" x{meta.get('rate_factor', 1.0):g} the planned"
            + "".join(
                f"; {name} {meta[name]['line_pps']:g} packets/s (lateness limit"
                f" {meta[name]['lateness_limit_ms']:.1f} ms)"
                for name in ("pair", "ring", "fabric")
                if isinstance(meta.get(name), dict) and "line_pps" in meta[name]
            )
            + "."
        )
    else:
        lines.append("No calibration (--calibrate-s 0): the rates as given.")
    for name, (valid, spoiled) in attempts.items():
        if not valid and not spoiled:
            continue
        per_cell: dict[str, int] = defaultdict(int)
        for r in spoiled:
            per_cell[str(r.get("cell", "?"))] += 1
        worst = sorted(per_cell.items(), key=lambda kv: -kv[1])[:5]
        predicted = (c or {}).get("predicted_spoiled", {}).get(name)
        lines.append(
            f"{name}: {valid} valid runs, {len(spoiled)} spoiled attempts: spoiled fraction"
            f" {cal.spoiled_fraction(valid, len(spoiled)):.1%}"
            + (f" (predicted {predicted:.1%})" if predicted is not None else "")
            + (
                "; spoiled per cell: "
                + ", ".join(f"{k} {n}" for k, n in worst)
                + (f" and {len(per_cell) - len(worst)} more cells" if len(per_cell) > 5 else "")
                if per_cell
                else ""
            )
            + "."
        )
    return lines


def _losses_section(out: Path, meta: dict) -> list[str]:
    """Where frames were lost, over the valid runs and over the attempts the harness spoiled
    (rerun with the same seed, docs/experiments.md)."""
    valid = [
        r for f in ("fig9_alone.csv", "fig9_runs.csv", "ring_runs.csv") for r in _read(out / f)
    ]
    spoiled = _read(out / "spoiled_runs.csv")
    if not valid and not spoiled:
        return []

    def places(rows: list[dict]) -> str:
        sums = {p: _total(rows, f"lost_{p}") for p in (*PLACES, "unattributed")}
        return ", ".join(f"{p} {n}" for p, n in sums.items())

    if not valid:
        lines = ["", "## Where frames were lost", "", "No valid run."]
        if spoiled:
            lines.append(
                f"Spoiled attempts: {len(spoiled)}; their losses by place: {places(spoiled)}."
            )
        return lines
    sent = _total(valid, "frames_sent")
    received = _total(valid, "frames_received")
    bad_sum = [r for r in valid if r.get("lost_unattributed", 0)]
    lines = [
        "",
        "## Where frames were lost",
        "",
        f"Valid runs: {len(valid)}; frames sent {sent}, received {received} (data and CNPs);"
        f" lost by place: {places(valid)}. Queue drops are a result of the congestion control;"
        " every other place is the emulation's, and a run with any is rerun.",
        "The sum check (sent - received = the losses counted at each place) "
        + (
            "held in every valid run."
            if not bad_sum
            else f"FAILED in {len(bad_sum)} valid runs (see lost_unattributed in the CSVs)."
        ),
    ]
    if spoiled:
        reasons: dict[str, int] = defaultdict(int)
        for r in spoiled:
            for kind in runs.reason_kinds(str(r.get("reason", ""))):
                reasons[kind] += 1
        lines.append(
            f"Spoiled attempts (rerun with the same seed, {_reruns_allowed(meta)}):"
            f" {len(spoiled)}; their losses by place: {places(spoiled)};"
            " reasons: " + ", ".join(f"{w} ({n})" for w, n in sorted(reasons.items())) + "."
        )
    else:
        lines.append("No attempt was spoiled: no run needed a rerun.")
    return lines


def _reruns_allowed(meta: dict) -> str:
    if meta.get("max_reruns") is not None:
        return f"at most {meta['max_reruns']} times per run"
    allowed = meta.get("attempts_allowed", {})
    return "up to " + (
        ", ".join(f"{n} attempts per cell in {e}" for e, n in allowed.items())
        or "the planned attempts per cell"
    )


def problems(out: Path, meta: dict) -> list[str]:
    """Runs that could not be made valid (every attempt spoiled by the harness), with why."""
    return list(meta.get("unresolved", []))
