"""The experiments: every scenario runs its variants (baseline DCQCN, strict priority for lagging
flows, Symphony) on the same seeds. `quick=True` gives a small configuration of each (4 rings
of 4 over 16 hosts, 64 KB chunks) for the tests."""

from __future__ import annotations

from dataclasses import dataclass, replace

from evaluation.fabric.collectives import lockstep_bound_us
from evaluation.fabric.config import (
    HPCC_BUFFER_PKTS,
    HPCC_HEADER,
    HPCC_MTU,
    HPCC_RED,
    Background,
    FabricConfig,
)
from symphony.model.params import JobParams

KB = 1 << 10
MB = 1 << 20
K_SWEEP = (1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0)
IMBALANCES = (1.1, 1.13, 1.3, 1.5, 1.7)
CHUNKS = (128 * KB, 512 * KB, 2 * MB, 8 * MB, 16 * MB)


@dataclass(frozen=True)
class Run:
    scenario: str
    variant: str  # baseline | pq | symphony | symphony-late
    param: str  # the swept value, "" when none
    cfg: FabricConfig
    seed: int


def _three(scenario: str, base: FabricConfig, seeds: range, param: str = "") -> list[Run]:
    return [
        Run(scenario, mode, param, replace(base, mode=mode), s)
        for mode in ("baseline", "pq", "symphony")
        for s in seeds
    ]


# The Table 1 default, each choice from the public code the paper ran (docs/evaluation.md,
# "The Table 1 default"): Astra-Sim's 2D ring (8 x 4 at 32 nodes, 32 x 4 at 128) with the
# system config of its ns-3 example (examples/ns3/system.json: localBWAware, 4 dataset splits,
# 1 active chunk per dimension), HPCC's mix/config.txt NIC (DCQCN with its window), frames,
# ECN thresholds and switch buffer, ns-3's ECMP hash, and Table 1's 10 Gb/s links everywhere.
TABLE1 = FabricConfig(
    topology="2d",
    splits=4,
    active_chunks=1,
    dcqcn="hpcc-config",
    ecmp="ns3",
    fabric="2tier",
    mtu=HPCC_MTU,
    header_bytes=HPCC_HEADER,
    red=HPCC_RED,
    switch_buffer_pkts=HPCC_BUFFER_PKTS,
)


# "table1": the paper's stack as above; "v1": the first version's defaults (1D rings, the
# `hpcc-run-dcqcn` NIC without a window, 1024 B frames, salted ECMP), for its tables.
PRESETS: dict[str, FabricConfig] = {"table1": TABLE1, "v1": FabricConfig(dcqcn="hpcc-run-dcqcn")}
# The paper's multiple-1D-ring figures (Fig. 2: lockstep, ECMP, imbalance, transient background;
# Fig. 7: two jobs) keep 1D rings under any preset; the others run the preset's collective.
RING_SCENARIOS = ("lockstep", "ecmp", "ecmp-128", "imbalance", "transient-bg", "two-jobs")


def base_config(
    quick: bool, hosts: int = 32, preset: str = "table1", **options: object
) -> FabricConfig:
    """The default of every scenario; `options` (the CLI's workload and fabric flags) override
    FabricConfig fields before the scenario derives anything from it."""
    base = PRESETS[preset]
    if quick:
        return replace(base, hosts=16, chunk_bytes=64 * KB, **options)
    return replace(base, hosts=hosts, **options)


def scenario_runs(
    name: str,
    seeds: range,
    quick: bool = False,
    options: dict[str, object] | None = None,
    preset: str = "table1",
) -> list[Run]:
    opts = dict(options or {})
    if name in RING_SCENARIOS:
        opts = {"topology": "rings", "splits": 1, **opts}
    b = base_config(quick, preset=preset, **opts)
    if name == "lockstep":
        cfg = replace(b, routing="static", start_jitter_ns=0)
        return [
            Run(name, m, "", replace(cfg, mode=m), s)
            for m in ("baseline", "symphony")
            for s in seeds
        ]
    if name == "ecmp":
        return _three(name, b, seeds)
    if name == "ecmp-128":
        big = base_config(False, preset=preset, **{**opts, "hosts": 128})
        return _three(name, b if quick else big, seeds)
    if name in ("2d", "2d-128"):
        # Table 1's 2D ring: 8 x 4 at 32 nodes, 32 x 4 at 128 (dim 0 inside a ToR).
        hosts = 128 if name == "2d-128" and not quick else b.hosts
        cfg = base_config(quick, preset=preset, **{**opts, "topology": "2d", "hosts": hosts})
        return _three(name, cfg, seeds)
    if name in ("table1", "table1-128"):
        hosts = 128 if name == "table1-128" and not quick else b.hosts
        return _three(name, base_config(quick, preset="table1", **{**opts, "hosts": hosts}), seeds)
    if name == "imbalance":
        out = []
        for x in IMBALANCES[:2] if quick else IMBALANCES:
            cfg = replace(b, routing="static", imbalance=x)
            out += _three(name, cfg, seeds, f"{x:g}")
        return out
    if name == "transient-bg":
        bg = Background(bursts=4, gbps=3.0, duration_us=200.0 if quick else 5000.0)
        return _three(name, replace(b, routing="static", background=bg), seeds)
    if name == "k-sweep":
        out = [Run(name, "baseline", "", replace(b, mode="baseline"), s) for s in seeds]
        for k in K_SWEEP[::3] if quick else K_SWEEP:
            cfg = replace(b, mode="symphony", symphony=JobParams(k=k))
            out += [Run(name, "symphony", f"{k:g}", cfg, s) for s in seeds]
        return out
    if name == "chunk-sweep":
        out = []
        for c in (16 * KB, 64 * KB) if quick else CHUNKS:
            cfg = replace(b, chunk_bytes=c)
            out += [
                Run(name, m, f"{c // KB}KB", replace(cfg, mode=m), s)
                for m in ("baseline", "symphony")
                for s in seeds
            ]
        return out
    if name == "late-start":
        # The paper's Fig. 4 "Symphony (Late-Start)": Symphony tracks from the start but marks
        # only from 500 ms, about 60 % into its baseline's run. Ours: from the lockstep bound
        # (94 ms at 32 nodes), about 40 % into our baseline's median run.
        late = replace(b, mode="symphony", late_start_us=lockstep_bound_us(b))
        return [
            Run(name, m, "", cfg, s)
            for m, cfg in (
                ("baseline", replace(b, mode="baseline")),
                ("symphony", replace(b, mode="symphony")),
                ("symphony-late", late),
            )
            for s in seeds
        ]
    if name == "two-jobs":
        # Job B starts when job A is a quarter through its lockstep time (the paper: 500 ms).
        cfg = replace(b, jobs=2, job_start_us=(0.0, 0.25 * lockstep_bound_us(b)))
        return _three(name, cfg, seeds)
    raise ValueError(f"unknown scenario {name!r}")


SCENARIOS = (
    "lockstep",
    "ecmp",
    "imbalance",
    "transient-bg",
    "k-sweep",
    "chunk-sweep",
    "two-jobs",
    "late-start",
    "ecmp-128",
    "2d",
    "2d-128",
    "table1",
    "table1-128",
)
