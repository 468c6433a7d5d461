"""One line of runs.csv per run: its columns, and which runs also keep their time series."""

from __future__ import annotations

from evaluation.fabric.scenarios import Run
from evaluation.fabric.sim import FabricResult

FIELDS = (
    "scenario",
    "pfc",
    "profile",
    "variant",
    "param",
    "seed",
    "hosts",
    "topology",
    "splits",
    "active_chunks",
    "passes",
    "ecmp",
    "fabric",
    "chunk_kb",
    "cct_us",
    "cct_jobs_us",
    "lockstep_us",
    "bound_us",
    "x_bound",
    "max_overlap",
    "mean_overlap",
    "symphony_marks",
    "queue_marks",
    "cnps",
    "acks",
    "nacks",
    "dropped",
    "out_of_order",
    "pfc_pauses",
    "pfc_paused_ms",
    "events",
    "wall_s",
    "error",
)


def keeps_series(run: Run) -> bool:
    """The runs whose overlap and goodput series go to series.npz (the plots' examples): the
    first seed of the choosing and of the held-out seeds (docs/policy-study.md)."""
    return run.seed in (0, 100) and run.param in ("", "1.13")


def row(run: Run, res: FabricResult) -> dict[str, object]:
    st = res.stats
    return {
        "scenario": run.scenario,
        "pfc": int(run.cfg.pfc),
        "profile": run.cfg.cc.name,
        "variant": run.variant,
        "param": run.param,
        "seed": run.seed,
        "hosts": run.cfg.hosts,
        "topology": run.cfg.topology,
        "splits": run.cfg.splits,
        "active_chunks": run.cfg.active_chunks,
        "passes": run.cfg.passes,
        "ecmp": run.cfg.ecmp,
        "fabric": run.cfg.fabric,
        "chunk_kb": run.cfg.chunk_bytes // 1024,
        "cct_us": round(res.cct_max_us, 1),
        "cct_jobs_us": " ".join(f"{c:.1f}" for c in res.cct_us),
        "lockstep_us": round(res.lockstep_us, 1),
        "bound_us": round(res.bound_us, 1),
        "x_bound": round(res.cct_max_us / res.bound_us, 3),
        "max_overlap": max(res.max_overlap),
        "mean_overlap": round(max(res.mean_overlap), 3),
        "symphony_marks": st["symphony_marks"],
        "queue_marks": st["queue_marks"],
        "cnps": st["cnps"],
        "acks": st["acks"],
        "nacks": st["nacks"],
        "dropped": st["dropped"] + st["bg_dropped"],
        "out_of_order": st["out_of_order"],
        "pfc_pauses": st["pfc_pauses"],
        "pfc_paused_ms": round(st["pfc_paused_ps"] / 1e9, 3),
        "events": st["events"],
        "wall_s": round(res.wall_s, 3),
        "error": st["error"],
    }
