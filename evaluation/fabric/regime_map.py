"""The regime map (issue 46): for a fabric's regime (collective layout, NIC, scale, chunk), what
each deployment does to the collective's completion against DCQCN alone with ACKs behind data,
and which of them an operator should deploy.

    python -m evaluation.fabric.regime_map --out build/regime-map                  # local pool
    python -m evaluation.fabric.regime_map --cluster local        # a Dask LocalCluster
    python -m evaluation.fabric.regime_map --cluster tcp://sched:8786   # Dask workers anywhere

A regime is a layout (`2d`: Table 1's 2D ring, Astra-Sim's collective; `rings`: the multi-1D-ring
ECMP scenario, 4 rings), a NIC (`windowed`: HPCC's config with its window, the paper's;
`rate-only`: the same NIC without the window, HAS_WIN 0 and VAR_WIN 0, the regime ns-3 checked),
a scale (32 and 128 nodes on Table 1's fabric; 512 on the multipod fabric, 2D ring only) and a
chunk (128 KB, 1 MiB, 8 MiB). A deployment (`OPTIONS`) is what the switches do: nothing, ACKs
in a priority class, PQ (the paper's strict priority for lagging flows, a comparison: our data
plane has no PQ), Symphony with the shipped policy or the paper's, and the class with each.
Every deployment of a regime runs the same seeds; a cell is its median CCT over the median of
DCQCN alone's, with a 90 % interval from resampling both (seeded). A cell whose regime the
simulator was not shown to match ns-3 in (`crossval_regimes`) carries that status instead of
standing as a finding. docs/regime-map.md has the choices and the results.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric.config import LONG_RUN_MAX_MS, FabricConfig
from evaluation.fabric.kernel import ERR_TIMEOUT
from evaluation.fabric.policy_study import POLICIES
from evaluation.fabric.rows import FIELDS
from evaluation.fabric.scenarios import TABLE1, Run, scenario_runs
from evaluation.fabric.sweep import Result, RunStore, local_cluster, run_key, run_sweep

KB, MiB = 1 << 10, 1 << 20
LAYOUTS = ("2d", "rings")
NICS = ("windowed", "rate-only")
CHUNKS = (128 * KB, MiB, 8 * MiB)
# (NIC, ACK queue) -> the cross-validation's regime of the same NIC and queue
XVAL_REGIME = {
    ("windowed", "data"): "default",
    ("rate-only", "data"): "no-window",
    ("windowed", "priority"): "ack-priority",
    ("rate-only", "priority"): "both",
}
# (layout, hosts, chunk) -> the cross-validation's scenario of the same collective
XVAL_SCENARIO = {("2d", 32, 8 * MiB): "table1", ("rings", 32, 8 * MiB): "ecmp-8MiB"}
XVAL_SCENARIO[("rings", 32, MiB)] = "ecmp-1MiB"
XVAL_SCENARIO[("2d", 32, MiB)] = "table1-1MiB"


@dataclass(frozen=True)
class Option:
    """A deployment: what the switches run (`mode`: DCQCN alone, PQ or Symphony with `policy`)
    and the queue ACKs and CNPs take."""

    name: str
    label: str
    mode: str  # baseline | pq | symphony
    policy: str = ""  # policy_study.POLICIES key, Symphony only
    ack: str = "data"
    # what it needs of a switch, simplest first: 0 nothing, 1 a parser rule and a strict-priority
    # queue (no state), 2 per-job state and the controller, 3 both
    needs: int = 0
    shipped: bool = True  # False: a comparison our data plane does not ship (PQ)


OPTIONS = (
    Option("dcqcn", "DCQCN alone", "baseline"),
    Option("ack", "ACK priority", "baseline", ack="priority", needs=1),
    Option("pq", "PQ", "pq", needs=2, shipped=False),
    Option("shipped", "Symphony (shipped)", "symphony", "gate8-k0.001", needs=2),
    Option("paper", "Symphony (paper's)", "symphony", "paper", needs=2),
    Option("ack+shipped", "ACK priority + shipped", "symphony", "gate8-k0.001", "priority", 3),
    Option("ack+paper", "ACK priority + paper's", "symphony", "paper", "priority", 3),
)
BY_NAME = {o.name: o for o in OPTIONS}
REFERENCE = "dcqcn"


@dataclass(frozen=True)
class Regime:
    layout: str
    nic: str
    hosts: int
    chunk_bytes: int

    @property
    def name(self) -> str:
        return f"{self.layout}/{self.nic}/{self.hosts}/{chunk_label(self.chunk_bytes)}"


def chunk_label(b: int) -> str:
    return f"{b // MiB} MiB" if b >= MiB else f"{b // KB} KB"


def base(regime: Regime) -> FabricConfig:
    """The regime's fabric and collective with the windowed NIC, ACKs behind data, DCQCN alone:
    the 32-node cells are exactly the cross-validation's scenarios (`crossval_regimes`)."""
    if regime.layout == "2d":
        cfg = replace(TABLE1, hosts=regime.hosts)
        if regime.hosts > 128:
            cfg = replace(cfg, fabric="multipod", oversub=8.0)  # Table 1: 1:8 at 512 nodes
    elif regime.layout == "rings":
        if regime.hosts not in (32, 128):
            raise ValueError("the rings layout runs at 32 and 128 nodes (4 rings)")
        cfg = scenario_runs("ecmp" if regime.hosts == 32 else "ecmp-128", range(1))[0].cfg
    else:
        raise ValueError(f"unknown layout {regime.layout!r}; known: {', '.join(LAYOUTS)}")
    return replace(cfg, chunk_bytes=regime.chunk_bytes)


def config(regime: Regime, option: Option) -> FabricConfig:
    cfg = base(regime)
    xreg = XVAL_REGIME[(regime.nic, option.ack)]
    d = xr.REGIMES[xreg](cfg.cc)
    cfg = replace(cfg, dcqcn=replace(d, name=f"{d.name}+{xreg}"))
    if option.mode == "symphony":
        return POLICIES[option.policy].apply(cfg)
    return replace(cfg, mode=option.mode)


@dataclass(frozen=True)
class Grid:
    """Which regimes run, on which seeds. Held-out seeds only: nothing here is chosen on them."""

    hosts: tuple[int, ...] = (32, 128)
    seeds: dict[int, range] | None = None  # per scale; default SEEDS
    layouts: tuple[str, ...] = LAYOUTS
    nics: tuple[str, ...] = NICS
    chunks: tuple[int, ...] = CHUNKS
    # 512 nodes: the Table 1 chunk (a run there is about 30 CPU-minutes; docs/regime-map.md)
    chunks_512: tuple[int, ...] = (8 * MiB,)
    options: tuple[str, ...] = tuple(o.name for o in OPTIONS)

    def regimes(self) -> list[Regime]:
        out = []
        for h in self.hosts:
            for lay in self.layouts:
                if h > 128 and lay != "2d":
                    continue  # 512: Table 1's 2D ring on the multipod fabric only
                for nic in self.nics:
                    for c in self.chunks_512 if h > 128 else self.chunks:
                        out.append(Regime(lay, nic, h, c))
        return out

    def seeds_of(self, hosts: int) -> range:
        return (self.seeds or SEEDS)[hosts]


# Held-out seeds per scale. 32 nodes: the cross-validation's 40 (crossval --regime-seeds), so the
# map's checked cells are its runs; with ten, the 2D ring's 1 MiB advice changed between kernel
# versions 4 and 5 (docs/regime-map.md). 128 and 512: what the machine's time allowed.
SEEDS = {32: range(100, 140), 128: range(100, 103), 512: range(100, 101)}


def runs(grid: Grid) -> list[Run]:
    out = []
    for reg in grid.regimes():
        for name in grid.options:
            cfg = config(reg, BY_NAME[name])
            param = f"{reg.nic}/{chunk_label(reg.chunk_bytes)}"
            out += [
                Run(f"map-{reg.layout}-{reg.hosts}", name, param, cfg, s)
                for s in grid.seeds_of(reg.hosts)
            ]
    return out


def _regime_of(run: Run) -> Regime:
    layout, hosts = run.scenario.removeprefix("map-").rsplit("-", 1)
    nic = run.param.split("/")[0]
    return Regime(layout, nic, int(hosts), run.cfg.chunk_bytes)


@dataclass(frozen=True)
class Cell:
    regime: Regime
    option: Option
    seeds: list[int]
    cct_ms: list[float]
    bound_ms: float  # the link-load bound (median over seeds; the same paths in every option)
    change: float  # median CCT over DCQCN alone's, -1, in %
    interval: tuple[float, float]  # its 90 % interval, resampling both (%)
    status: str  # validated | differs | unresolved | unchecked

    @property
    def median_ms(self) -> float:
        return statistics.median(self.cct_ms)

    @property
    def resolved_faster(self) -> bool:
        return self.interval[1] < 0

    @property
    def resolved_slower(self) -> bool:
        return self.interval[0] > 0


STATUS_ORDER = ("validated", "unresolved", "differs", "unchecked")


def _xval_status(
    regime: Regime, ack: str, variant: str, kernel: dict[tuple[str, str, str], list[float]]
) -> str:
    """How the cross-validation judged this regime and variant: `kernel` is this map's own
    runs of the cross-validation's cells (the same configurations and seeds)."""
    s = XVAL_SCENARIO.get((regime.layout, regime.hosts, regime.chunk_bytes))
    if s is None:
        return "unchecked"
    j = xr.judge(s, XVAL_REGIME[(regime.nic, ack)], variant, kernel, np.random.default_rng(0))
    if j is None:
        return "unchecked"
    return {"yes": "validated", "sampling": "unresolved", "no": "differs"}[j.verdict]


def cell_status(
    regime: Regime, option: Option, kernel: dict[tuple[str, str, str], list[float]]
) -> str:
    """The worst status of the regimes a cell compares: DCQCN alone's with ACKs behind data and
    the option's (its ACK queue). Symphony's cells take the paper's policy's judgement (ns-3 ran
    the paper's policy; the shipped one differs only in the table's parameters, which the port
    was proven equal on), PQ's that of DCQCN alone (ns-3 did not run PQ: its own rule is not
    checked)."""
    variant = "symphony" if option.mode == "symphony" else "baseline"
    st = [
        _xval_status(regime, "data", "baseline", kernel),
        _xval_status(regime, option.ack, "baseline", kernel),
        _xval_status(regime, option.ack, variant, kernel),
    ]
    return max(st, key=STATUS_ORDER.index)


def _kernel_of_xval(cells: dict[tuple[Regime, str], list[float]]) -> dict:
    """This map's runs in the cross-validation's keys (scenario, regime, variant)."""
    out: dict[tuple[str, str, str], list[float]] = {}
    for (reg, name), ccts in cells.items():
        s = XVAL_SCENARIO.get((reg.layout, reg.hosts, reg.chunk_bytes))
        o = BY_NAME[name]
        if s is None or o.mode == "pq" or (o.mode == "symphony" and o.policy != "paper"):
            continue
        out[
            (s, XVAL_REGIME[(reg.nic, o.ack)], "symphony" if o.mode == "symphony" else "baseline")
        ] = ccts
    return out


BOOT = 4000

# A run's simulated-time cap is its config's `max_ms` (20 s), part of its key. A run that hits
# it (the kernel's ERR_TIMEOUT) is run again under LONG_RUN_MAX_MS, as a run of its own key, and
# the map reports that one: the stores keep every run already made. (First hit: the 2D ring at
# 128 nodes, rate-only NIC, 8 MiB, ACK priority, seed 100, kernel version 6.)


def capped(row: dict[str, object]) -> bool:
    """Whether a run's row says it stopped at its simulated-time cap."""
    return bool(int(row.get("error") or 0) & ERR_TIMEOUT)  # type: ignore[call-overload]


def uncapped(run: Run) -> Run:
    """The run again under LONG_RUN_MAX_MS."""
    return replace(run, cfg=replace(run.cfg, max_ms=LONG_RUN_MAX_MS))


def _ccts(
    results: Iterable[tuple[Run, dict[str, object]]],
) -> tuple[dict[tuple[Regime, str], dict[int, float]], dict[Regime, list[float]]]:
    """CCT (ms) per (regime, option) and seed; the bound (ms) per regime, over seeds."""
    ccts: dict[tuple[Regime, str], dict[int, float]] = {}
    bounds: dict[Regime, list[float]] = {}
    for run, row in results:
        if row.get("error"):
            raise RuntimeError(f"{run.scenario} {run.variant} seed {run.seed}: {row['error']}")
        reg = _regime_of(run)
        ccts.setdefault((reg, run.variant), {})[run.seed] = float(row["cct_us"]) / 1e3  # type: ignore[arg-type]
        if run.variant == REFERENCE:
            bounds.setdefault(reg, []).append(float(row["bound_us"]) / 1e3)  # type: ignore[arg-type]
    return ccts, bounds


def xval_kernel(results: Iterable[tuple[Run, dict[str, object]]]) -> dict:
    """The map's runs of the cross-validation's cells, keyed as `crossval_regimes` keys them."""
    ccts, _ = _ccts(results)
    return _kernel_of_xval({k: [v[s] for s in sorted(v)] for k, v in ccts.items()})


def cells(results: Iterable[tuple[Run, dict[str, object]]]) -> list[Cell]:
    """Every (regime, option) with runs, in OPTIONS order within each regime."""
    ccts, bounds = _ccts(results)
    lists = {k: [v[s] for s in sorted(v)] for k, v in ccts.items()}
    kernel = _kernel_of_xval(lists)
    rng = np.random.default_rng(0)
    out = []
    for reg in sorted(bounds, key=_regime_order):
        ref = lists[(reg, REFERENCE)]
        ref_boot = xr.bootstrap_medians(rng, ref)
        for o in OPTIONS:
            xs = lists.get((reg, o.name))
            if xs is None:
                continue
            change = (statistics.median(xs) / statistics.median(ref) - 1) * 100
            boot = (xr.bootstrap_medians(rng, xs) / ref_boot - 1) * 100
            lo, hi = np.percentile(boot, [5, 95])
            out.append(
                Cell(
                    reg,
                    o,
                    sorted(ccts[(reg, o.name)]),
                    xs,
                    statistics.median(bounds[reg]),
                    change,
                    (float(lo), float(hi)),
                    cell_status(reg, o, kernel),
                )
            )
    return out


def _regime_order(r: Regime) -> tuple[int, int, int, int]:
    return (LAYOUTS.index(r.layout), r.hosts, NICS.index(r.nic), r.chunk_bytes)


@dataclass(frozen=True)
class Advice:
    """What to deploy in one regime (`advise`)."""

    deploy: str  # an option's name
    symphony_helps: bool  # a shipped Symphony option is resolved faster than DCQCN alone
    ack_as_good: bool  # ACK priority alone is not resolved slower than the best Symphony option
    validated: bool  # every cell the advice rests on is validated against ns-3


def advise(regime_cells: list[Cell]) -> Advice:
    """The rule (docs/regime-map.md): among the shipped options resolved faster than DCQCN alone
    (90 % interval below 0), the fastest median; then the simplest (fewest `needs`) option whose
    CCT is not resolved slower than it (so a simpler switch wins a tie the seeds cannot break).
    Nothing resolved faster: deploy nothing."""
    by = {c.option.name: c for c in regime_cells}
    faster = [c for c in regime_cells if c.option.shipped and c.resolved_faster]
    sym = [c for c in regime_cells if c.option.mode == "symphony"]
    best_sym = min(sym, key=lambda c: c.median_ms) if sym else None
    ack = by.get("ack")
    ack_as_good = bool(ack and best_sym and not _slower(ack, best_sym))
    helps = any(c.option.mode == "symphony" for c in faster)
    if not faster:
        choice = by[REFERENCE]
    else:
        best = min(faster, key=lambda c: c.median_ms)
        ties = [c for c in faster if not _slower(c, best)]
        choice = min(ties, key=lambda c: (c.option.needs, c.median_ms))
    rests_on = {choice.option.name, REFERENCE} | ({"ack"} if ack else set())
    validated = all(by[n].status == "validated" for n in rests_on if n in by)
    return Advice(choice.option.name, helps, ack_as_good, validated)


def _slower(a: Cell, b: Cell) -> bool:
    """a resolved slower than b: the 90 % interval of a's median over b's lies above 0 (the
    same seeds, resampled together, rng seeded by the pair)."""
    rng = np.random.default_rng(0)
    n = len(a.cct_ms)
    if n != len(b.cct_ms):
        raise ValueError("cells of one regime run the same seeds")
    idx = rng.integers(0, n, size=(BOOT, n))
    ratio = np.median(np.asarray(a.cct_ms)[idx], axis=1) / np.median(
        np.asarray(b.cct_ms)[idx], axis=1
    )
    return float(np.percentile(ratio, 5)) > 1.0


COLOUR_LIMIT = 50.0
MARK = {"validated": "", "unresolved": "?", "differs": "†", "unchecked": "*"}


def table(all_cells: list[Cell]) -> str:
    """Markdown, one row per regime: DCQCN alone's median and the bound, each option's change."""
    head = (
        "| layout | NIC | nodes | chunk | seeds | DCQCN alone ms [min, max] | bound ms | "
        + " | ".join(o.label for o in OPTIONS)
        + " | deploy |"
    )
    lines = [head, "|---|---|---:|---|---|---:|---:|" + "---:|" * len(OPTIONS) + "---|"]
    for reg, group in _by_regime(all_cells):
        by = {c.option.name: c for c in group}
        ref = by[REFERENCE]
        s = ref.seeds
        cols = []
        for o in OPTIONS:
            c = by.get(o.name)
            if c is None:
                cols.append("-")
            elif o.name == REFERENCE:
                cols.append(f"0{MARK[c.status]}")
            else:
                lo, hi = c.interval
                cols.append(f"{c.change:+.1f} % [{lo:+.0f}, {hi:+.0f}]{MARK[c.status]}")
        a = advise(group)
        deploy = BY_NAME[a.deploy].label + ("" if a.validated else " (unvalidated)")
        lines.append(
            f"| {reg.layout} | {reg.nic} | {reg.hosts} | {chunk_label(reg.chunk_bytes)} |"
            f" {s[0]}-{s[-1]} | {ref.median_ms:.1f} [{min(ref.cct_ms):.1f},"
            f" {max(ref.cct_ms):.1f}] | {ref.bound_ms:.1f} | " + " | ".join(cols) + f" | {deploy} |"
        )
    lines.append(
        "\nChange of the median CCT against DCQCN alone (ACKs behind data) on the same seeds,"
        " [90 % interval]. Against ns-3 (`crossval_regimes`): no mark validated; ? not resolved"
        " by the runs; † differs; * not checked."
    )
    return "\n".join(lines) + "\n"


SHORT = {
    "dcqcn": "nothing",
    "ack": "ACK priority",
    "shipped": "Symphony",
    "paper": "Symphony (paper's)",
    "ack+shipped": "ACK priority + Symphony",
    "ack+paper": "ACK priority + Symphony (paper's)",
}


def glance(all_cells: list[Cell]) -> str:
    """The README's table: per layout and NIC (rows) and scale and chunk (columns), what to
    deploy (`advise`) with its change against DCQCN alone, and the shipped Symphony's and ACK
    priority's changes beside it (S, A). Marks as in `table`."""
    groups = _by_regime(all_cells)
    cols = sorted({(r.hosts, r.chunk_bytes) for r, _ in groups})
    rows = sorted(
        {(r.layout, r.nic) for r, _ in groups},
        key=lambda x: (LAYOUTS.index(x[0]), NICS.index(x[1])),
    )
    by = {r: g for r, g in groups}
    head = "| layout, NIC | " + " | ".join(f"{h} nodes, {chunk_label(c)}" for h, c in cols) + " |"
    lines = [head, "|---|" + "---|" * len(cols)]
    for lay, nic in rows:
        out = []
        for h, c in cols:
            g = by.get(Regime(lay, nic, h, c))
            if g is None:
                out.append("not run")
                continue
            a = advise(g)
            cell = {x.option.name: x for x in g}
            pick = cell[a.deploy]
            text = SHORT[a.deploy] + ("" if a.deploy == REFERENCE else f" {pick.change:+.0f} %")
            extra = [
                f"{k} {cell[n].change:+.0f}{MARK[cell[n].status]}"
                for k, n in (("S", "shipped"), ("A", "ack"))
                if n in cell and n != a.deploy
            ]
            mark = "" if a.validated else " (unvalidated)"
            out.append(f"**{text}**{mark}" + (f" ({', '.join(extra)})" if extra else ""))
        label = f"{'2D ring (Table 1)' if lay == '2d' else '4 rings (ECMP)'}, {nic}"
        lines.append(f"| {label} | " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def _by_regime(all_cells: list[Cell]) -> list[tuple[Regime, list[Cell]]]:
    out: dict[Regime, list[Cell]] = {}
    for c in all_cells:
        out.setdefault(c.regime, []).append(c)
    return sorted(out.items(), key=lambda kv: _regime_order(kv[0]))


CSV_FIELDS = (
    "layout",
    "nic",
    "hosts",
    "chunk_kb",
    "option",
    "seeds",
    "median_ms",
    "min_ms",
    "max_ms",
    "bound_ms",
    "change_pct",
    "change_lo_pct",
    "change_hi_pct",
    "validation",
    "deploy",
)


def write_csv(all_cells: list[Cell], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        w.writeheader()
        for reg, group in _by_regime(all_cells):
            deploy = advise(group).deploy
            for c in group:
                w.writerow(
                    {
                        "layout": reg.layout,
                        "nic": reg.nic,
                        "hosts": reg.hosts,
                        "chunk_kb": reg.chunk_bytes // KB,
                        "option": c.option.name,
                        "seeds": " ".join(map(str, c.seeds)),
                        "median_ms": round(c.median_ms, 3),
                        "min_ms": round(min(c.cct_ms), 3),
                        "max_ms": round(max(c.cct_ms), 3),
                        "bound_ms": round(c.bound_ms, 3),
                        "change_pct": round(c.change, 2),
                        "change_lo_pct": round(c.interval[0], 2),
                        "change_hi_pct": round(c.interval[1], 2),
                        "validation": c.status,
                        "deploy": int(c.option.name == deploy),
                    }
                )


def plot(all_cells: list[Cell], out: Path) -> list[Path]:
    """A heat map per layout: regimes down, options across, the change in colour (green
    faster), the advice boxed, cells not validated against ns-3 hatched with their mark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Rectangle

    paths = []
    groups = _by_regime(all_cells)
    for layout in LAYOUTS:
        rows = [(r, g) for r, g in groups if r.layout == layout]
        if not rows:
            continue
        opts = [o for o in OPTIONS if o.name != REFERENCE]
        data = np.full((len(rows), len(opts)), np.nan)
        for i, (_, g) in enumerate(rows):
            by = {c.option.name: c for c in g}
            for j, o in enumerate(opts):
                if o.name in by:
                    data[i, j] = by[o.name].change
        # the colour saturates at +-COLOUR_LIMIT %: a policy that doubles the CCT is as red as
        # one that adds half, and the differences near 0 stay visible
        fig, ax = plt.subplots(figsize=(1.45 * len(opts) + 3.2, 0.42 * len(rows) + 1.8))
        norm = TwoSlopeNorm(0.0, -COLOUR_LIMIT, COLOUR_LIMIT)
        im = ax.imshow(np.clip(data, -COLOUR_LIMIT, COLOUR_LIMIT), cmap="RdYlGn_r", norm=norm,
                       aspect="auto")  # fmt: skip
        for i, (_, g) in enumerate(rows):
            by = {c.option.name: c for c in g}
            a = advise(g)
            for j, o in enumerate(opts):
                c = by.get(o.name)
                if c is None:
                    continue
                sig = "" if (c.resolved_faster or c.resolved_slower) else "~"
                ax.text(
                    j, i, f"{sig}{c.change:+.0f}{MARK[c.status]}", ha="center", va="center",
                    fontsize=7,
                )  # fmt: skip
                if c.status != "validated":
                    ax.add_patch(
                        Rectangle(
                            (j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", lw=0,
                            edgecolor="grey", alpha=0.5,
                        )
                    )  # fmt: skip
                if o.name == a.deploy:
                    ax.add_patch(
                        Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2.2, edgecolor="black")
                    )
        ax.set_xticks(range(len(opts)))
        ax.set_xticklabels([o.label for o in opts], rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(
            [
                f"{r.nic}, {r.hosts} nodes, {chunk_label(r.chunk_bytes)}"
                f" ({g[0].bound_ms and statistics.median(g[0].cct_ms) / g[0].bound_ms:.1f}x bound)"
                for r, g in rows
            ],
            fontsize=8,
        )
        ax.set_title(
            f"{layout}: CCT change (%) against DCQCN alone, ACKs behind data\n"
            "boxed: deploy; ~ not resolved by the seeds; hatched: not validated against ns-3"
            " (? unresolved, † differs, * unchecked)",
            fontsize=8,
        )
        fig.colorbar(im, ax=ax, label="median CCT change (%)", extend="both")
        fig.tight_layout()
        p = out / f"regime-map-{layout}.png"
        fig.savefig(p, dpi=130)
        plt.close(fig)
        paths.append(p)
    return paths


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[32, 128], choices=(32, 128, 512))
    ap.add_argument("--seeds-32", type=int, default=len(SEEDS[32]))
    ap.add_argument("--seeds-128", type=int, default=len(SEEDS[128]))
    ap.add_argument("--seeds-512", type=int, default=len(SEEDS[512]))
    ap.add_argument("--first-seed", type=int, default=100, help="held out: nothing chosen here")
    ap.add_argument("--layout", action="append", choices=LAYOUTS)
    ap.add_argument("--nic", action="append", choices=NICS)
    ap.add_argument("--chunk-kb", type=int, action="append", help="chunks (default 128 1024 8192)")
    ap.add_argument(
        "--chunk-kb-512", type=int, action="append", help="chunks at 512 nodes (default 8192)"
    )
    ap.add_argument("--option", action="append", choices=[o.name for o in OPTIONS])
    ap.add_argument("--jobs", type=int, default=2, help="local worker processes")
    ap.add_argument(
        "--cluster",
        metavar="ADDR",
        help="a Dask scheduler (docs/evaluation.md), or `local`: a Dask LocalCluster of --jobs "
        "worker processes on this machine (default: a local process pool, no Dask)",
    )
    ap.add_argument("--out", type=Path, default=Path("build/regime-map"))
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: the tables from what the store holds, leaving out every cell a seed "
        "of is missing (and every regime DCQCN alone's runs are incomplete in)",
    )
    args = ap.parse_args(argv)
    f = args.first_seed
    counts = {32: args.seeds_32, 128: args.seeds_128, 512: args.seeds_512}
    options = tuple(args.option or [o.name for o in OPTIONS])
    if REFERENCE not in options:
        ap.error(f"--option: the map measures against {REFERENCE!r}; include it")
    grid = Grid(
        hosts=tuple(args.hosts),
        seeds={h: range(f, f + n) for h, n in counts.items()},
        layouts=tuple(args.layout or LAYOUTS),
        nics=tuple(args.nic or NICS),
        chunks=tuple(c * KB for c in args.chunk_kb) if args.chunk_kb else CHUNKS,
        chunks_512=tuple(c * KB for c in args.chunk_kb_512 or [8192]),
        options=options,
    )
    todo = runs(grid)
    # a scale complete before the next (a map stopped early still has its smaller scales), the
    # longest runs first within one (the workers finish together)
    todo.sort(key=lambda r: (r.cfg.hosts, -r.cfg.chunk_bytes, r.cfg.topology != "2d"))
    args.out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        pairs = complete_cells(todo, RunStore.read(args.out / "runs.jsonl"))
        if not pairs:
            raise SystemExit(f"{args.out / 'runs.jsonl'}: no complete cell of this grid")
        report(pairs, grid, args.out, plots=not args.no_plots)
        return
    store = RunStore(args.out / "runs.jsonl")

    def sweep(batch: list[Run]) -> list[Result]:
        if args.cluster == "local":
            with local_cluster(args.jobs) as address:
                return run_sweep(batch, store, cluster=address)
        return run_sweep(batch, store, workers=args.jobs, cluster=args.cluster)

    try:
        results = sweep(todo)
        again = [i for i, res in enumerate(results) if capped(res.row)]
        if again:
            for i, res in zip(again, sweep([uncapped(todo[i]) for i in again]), strict=True):
                results[i] = res
    finally:
        store.close()
    report([(run, res.row) for run, res in zip(todo, results, strict=True)], grid, args.out,
           plots=not args.no_plots)  # fmt: skip


def complete_cells(
    todo: list[Run], stored: dict[str, Result]
) -> list[tuple[Run, dict[str, object]]]:
    """The stored runs of every (regime, option) whose seeds are all stored, in regimes whose
    reference (DCQCN alone) is complete."""
    groups: dict[tuple[str, str, str], list[tuple[Run, dict[str, object]] | None]] = {}
    for r in todo:
        res = stored.get(run_key(r))
        if res is not None and capped(res.row):
            res = stored.get(run_key(uncapped(r)))
        groups.setdefault((r.scenario, r.param, r.variant), []).append(
            None if res is None else (r, res.row)
        )
    full = {k: v for k, v in groups.items() if all(x is not None for x in v)}
    return [
        x  # type: ignore[misc]
        for (sc, param, _), v in full.items()
        if (sc, param, REFERENCE) in full
        for x in v
    ]


def report(
    pairs: list[tuple[Run, dict[str, object]]], grid: Grid, out: Path, plots: bool = True
) -> None:
    """regime-map.csv (a line per cell), runs.csv (a line per run), table.md (the table, the
    seeds, the at-a-glance table), the heat maps, and crossval-regimes.md."""
    all_cells = cells(pairs)
    write_csv(all_cells, out / "regime-map.csv")
    with open(out / "runs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(row for _, row in pairs)
    seeds = ", ".join(
        f"{h} nodes: seeds {grid.seeds_of(h).start}-{grid.seeds_of(h).stop - 1}" for h in grid.hosts
    )
    text = table(all_cells) + f"\n{seeds}\n\n" + glance(all_cells)
    (out / "table.md").write_text(text)
    print(text)
    kernel = xval_kernel(pairs)
    if kernel:
        # the cross-validation's table from these runs (the same configurations and seeds as
        # `crossval --part regimes`, tested): the verdicts the cells' marks come from
        (out / "crossval-regimes.md").write_text(xr.table(kernel) + "\n")
    if plots:
        for p in plot(all_cells, out):
            print("wrote", p)


if __name__ == "__main__":
    main()
