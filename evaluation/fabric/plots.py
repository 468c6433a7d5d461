"""PNG figures from build/evaluation/{runs.csv, series.npz}, one per paper figure we compare
against (docs/evaluation.md)."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from evaluation.fabric.sweep import run_key

COLORS = {"baseline": "tab:red", "pq": "tab:orange", "symphony": "tab:blue"}


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "runs.csv") as fh:
        return list(csv.DictReader(fh))


def _cdf(ax, values: list[float], label: str, color: str | None) -> None:
    v = np.sort(np.asarray(values, dtype=float))
    ax.step(v, np.arange(1, v.size + 1) / v.size, where="post", label=label, color=color)


def plot_all(out: Path) -> list[Path]:
    rows = _rows(out)
    written = []
    by: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by[r["scenario"], r["variant"], r["param"]].append(r)
    series = np.load(out / "series.npz") if (out / "series.npz").exists() else None

    # Fig. 2a / 4a: overlap over time, seed 0
    if series is not None:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for key, style in (
            ("lockstep/baseline", "k--"),
            ("ecmp/baseline", None),
            ("ecmp/pq", None),
            ("ecmp/symphony", None),
            ("late-start/symphony-late", "b--"),
            ("imbalance/baseline", ":"),
            ("transient-bg/baseline", "-."),
        ):
            if f"{key}/overlap" not in series:
                continue
            ov = series[f"{key}/overlap"][0]
            dt = float(series[f"{key}/sample_us"])
            t = np.arange(ov.size) * dt / 1000
            var = key.split("/")[1]
            kw = {"color": COLORS.get(var)} if style is None else {}
            ax.plot(t, ov, style or "-", label=key, lw=1, **kw)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("distinct steps in flight")
        ax.set_title("Step overlap over time, seed 0 (paper Fig. 2a/4a)")
        ax.legend(fontsize=7)
        written.append(_save(fig, out / "overlap_time.png"))

    # Fig. 4b / 5: CDFs over seeds of the ECMP scenarios
    for metric, fname, xlabel, title in (
        ("max_overlap", "max_overlap_cdf.png", "maximum step overlap", "paper Fig. 4b"),
        ("cct_us", "cct_cdf.png", "CCT (ms)", "paper Fig. 5"),
    ):
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
        for ax, scn in zip(axes, ("ecmp", "ecmp-128"), strict=True):
            for var in ("baseline", "pq", "symphony", "symphony-late"):
                if var == "symphony-late" and scn != "ecmp":
                    continue  # late start is a 32-node scenario of its own
                g = by.get(("late-start" if var == "symphony-late" else scn, var, ""))
                if g:
                    vals = [float(r[metric]) / (1000 if metric == "cct_us" else 1) for r in g]
                    _cdf(ax, vals, var, COLORS.get(var, "tab:cyan"))
            ax.set_xlabel(xlabel)
            ax.set_ylabel("CDF")
            ax.set_title(f"{scn} ({title})")
            ax.legend(fontsize=8)
        written.append(_save(fig, out / fname))

    # Sweeps: median CCT relative to the baseline on the same setting
    for scn, fname, xlabel, title, logx in (
        ("k-sweep", "k_sweep.png", "k", "paper Fig. 8b", True),
        (
            "imbalance",
            "imbalance_sweep.png",
            "load imbalance on one hop (x)",
            "paper Fig. 8a",
            False,
        ),
        ("chunk-sweep", "chunk_sweep.png", "chunk (KB)", "paper Fig. 8c", True),
    ):
        params = sorted(
            {p for (s, v, p) in by if s == scn and v != "baseline" and p},
            key=lambda p: float(p.rstrip("KB")),
        )
        if not params:
            continue
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for var in ("pq", "symphony"):
            xs, ys = [], []
            for p in params:
                g = by.get((scn, var, p))
                b = by.get((scn, "baseline", p)) or by.get((scn, "baseline", ""))
                if g and b:
                    xs.append(float(p.rstrip("KB")))
                    med = np.median([float(r["cct_us"]) for r in g])
                    ys.append(med / np.median([float(r["cct_us"]) for r in b]))
            if xs:
                ax.plot(xs, ys, "o-", label=var, color=COLORS[var])
        ax.axhline(1.0, color="k", lw=0.8, ls="--", label="baseline")
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("median CCT / baseline median CCT")
        ax.set_title(title)
        ax.legend(fontsize=8)
        written.append(_save(fig, out / fname))

    written += _table1(out, rows, by, series)

    # Fig. 7a: two jobs, throughput over time (seed 0)
    if series is not None and "two-jobs/baseline/rx_gbps" in series:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
        for ax, var in zip(axes, ("baseline", "symphony"), strict=True):
            rx = series[f"two-jobs/{var}/rx_gbps"]
            dt = float(series[f"two-jobs/{var}/sample_us"])
            t = np.arange(rx.shape[1]) * dt / 1000
            for j in range(rx.shape[0]):
                ax.plot(t, rx[j], lw=0.8, label=f"job {'AB'[j]}")
            ax.plot(t, rx.sum(axis=0), "k", lw=0.8, label="total")
            ax.set_title(f"two jobs, {var} (paper Fig. 7a)")
            ax.set_xlabel("time (ms)")
            ax.legend(fontsize=8)
        axes[0].set_ylabel("goodput (Gb/s)")
        written.append(_save(fig, out / "two_jobs_throughput.png"))
    return written


def _table1(out: Path, rows: list[dict[str, str]], by: dict, series) -> list[Path]:
    """The Table 1 default (paper Figs. 4a, 4b, 5): overlap over time (seed 0), and the CDFs
    of CCT (with the median link-load bound) and of the maximum overlap per variant."""
    written = []
    scns = [s for s in ("table1", "table1-128") if any(k[0] == s for k in by)]
    if not scns:
        return written
    for metric, fname, xlabel in (
        ("cct_us", "table1_cct_cdf.png", "CCT (ms)"),
        ("max_overlap", "table1_max_overlap_cdf.png", "maximum step overlap"),
    ):
        fig, axes = plt.subplots(1, len(scns), figsize=(4.8 * len(scns), 3.5), squeeze=False)
        for ax, scn in zip(axes[0], scns, strict=True):
            scale = 1000 if metric == "cct_us" else 1
            for var in ("baseline", "pq", "symphony"):
                g = by.get((scn, var, ""))
                if g:
                    _cdf(ax, [float(r[metric]) / scale for r in g], var, COLORS[var])
            if metric == "cct_us":
                bound = np.median([float(r["bound_us"]) for r in rows if r["scenario"] == scn])
                ax.axvline(bound / 1000, color="k", ls=":", lw=1, label="link-load bound")
            ax.set_xlabel(xlabel)
            ax.set_ylabel("CDF")
            ax.set_title(f"{scn} (paper Fig. {'5' if metric == 'cct_us' else '4b'})")
            ax.legend(fontsize=8)
        written.append(_save(fig, out / fname))
    if series is not None:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for var in ("baseline", "pq", "symphony"):
            key = f"{scns[0]}/{var}"
            if f"{key}/overlap" in series:
                ov = series[f"{key}/overlap"][0]
                t = np.arange(ov.size) * float(series[f"{key}/sample_us"]) / 1000
                ax.plot(t, ov, lw=1, label=var, color=COLORS[var])
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("distinct steps in flight")
        ax.set_title(f"{scns[0]}: step overlap over time, seed 0 (paper Fig. 4a)")
        ax.legend(fontsize=8)
        written.append(_save(fig, out / "table1_overlap_time.png"))
    return written


POLICY_PANELS = (
    ("lockstep", ""),
    ("table1", ""),
    ("table1-128", ""),
    ("imbalance", "1.5x"),
    ("transient-bg", ""),
    ("two-jobs", ""),
    ("random-arrivals", ""),
)


def plot_policies(out: Path, policies: list[str], results: dict, runs: list) -> list[Path]:
    """The policy study (evaluation/fabric/policy_study.py): a CCT CDF per policy in each
    scenario of POLICY_PANELS that ran, and the step overlap over time of the first seed."""
    rows = _rows(out)
    variants = ["baseline", "pq", *policies]
    colors = {
        **COLORS,
        **dict(zip(policies, ("tab:blue", "tab:green", "tab:purple"), strict=False)),
    }
    by: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        by[r["scenario"], r["param"], r["variant"]].append(float(r["cct_us"]) / 1000)
    panels = [sp for sp in POLICY_PANELS if (sp[0], sp[1], "baseline") in by]
    written = []
    if panels:
        cols = min(4, len(panels))
        nrows = -(-len(panels) // cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3.2 * nrows), squeeze=False)
        for ax, (scn, param) in zip(axes.flat, panels, strict=False):
            for var in variants:
                if by.get((scn, param, var)):
                    _cdf(ax, by[scn, param, var], var, colors.get(var))
            ax.set_title(f"{scn} {param}".strip())
            ax.set_xlabel("CCT (ms)")
            ax.set_ylabel("CDF")
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(panels) :]:
            ax.axis("off")
        written.append(_save(fig, out / "policy_cct_cdf.png"))
    # overlap over time: the runs that kept their series (the first seed of each set)
    kept = [(r, results[k]) for r in runs if (k := run_key(r)) in results and results[k].series]
    for scn in ("table1", "lockstep", "two-jobs"):
        mine = [(r, res) for r, res in kept if r.scenario == scn and not r.param]
        if not mine:
            continue
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for r, res in mine:
            ov = np.asarray(res.series["overlap"])[0]
            t = np.arange(ov.size) * float(res.series["sample_us"]) / 1000
            ax.plot(t, ov, lw=1, label=r.variant, color=colors.get(r.variant))
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("distinct steps in flight")
        ax.set_title(f"{scn}: step overlap over time, seed {mine[0][0].seed}")
        ax.legend(fontsize=8)
        written.append(_save(fig, out / f"policy_overlap_{scn}.png"))
    return written


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
