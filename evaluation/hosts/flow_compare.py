"""One fabric run, flow by flow, in both instruments (issue 44: where the bmv2 fabric and the
simulator disagree, find the cause flow by flow).

Reads a run of `fabric_experiment` (its settings.json and the trace of one variant and seed:
every message's first frame sent and last received, every QP's rate after each change, the CNPs
and ACKs it took, its window's stalls) and runs the simulator on the same configuration and
seed with its NIC trace on (`cc_trace`: every rate event of every flow, and every data frame
sent and received). The simulator's flow f is the hosts' send f (both take
`collectives.build_sends`' order). Per send: message duration, CNPs taken, rate cuts, the lowest
rate, and the queues its frames found on their path (each frame's wait: its one-way delay less
the path's latency; median and peak), in both; the totals; and a PNG of the rate timelines of
the sends whose durations differ most.

    python -m evaluation.hosts.flow_compare build/experiments-fabric-8 --variant baseline --seed 100
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass, fields
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.fabric import kernel as kn
from evaluation.fabric.sim import FabricResult, simulate
from evaluation.hosts import experiments as ex
from evaluation.hosts import fabric_experiment as fx
from evaluation.hosts.dcqcn import LINE_GBPS
from evaluation.hosts.fabric_experiment import FabricSetup

# the simulator's cc_trace: every rate event of a fabric run and 2-3 rows per data frame
TRACE_ROWS = 2_000_000


@dataclass(frozen=True)
class FlowPair:
    """One send in both instruments; times in emulated seconds, rates as fractions of line."""

    send: int
    src: int
    dst: int
    step: int
    bmv2_s: float  # first frame sent to last received
    sim_s: float
    bmv2_cnps: int  # CNPs (or ACKs with the flag) the sender took
    sim_cnps: int
    bmv2_cuts: int  # rate decreases
    sim_cuts: int
    bmv2_min_rate: float
    sim_min_rate: float
    # the fabric's queues as the send's frames found them: each frame's wait, emulated ms
    bmv2_wait_ms_median: float = math.nan
    sim_wait_ms_median: float = math.nan
    bmv2_wait_ms_max: float = math.nan
    sim_wait_ms_max: float = math.nan


def setup_of(out: Path) -> FabricSetup:
    raw = json.loads((out / "settings.json").read_text())
    names = {f.name for f in fields(FabricSetup)}
    return FabricSetup(**{k: v for k, v in raw.items() if k in names})


def variant_of(name: str) -> ex.Variant:
    for v in fx.VARIANTS:
        if v.name == name:
            return v
    raise ValueError(f"unknown variant {name!r}")


def bmv2_flows(trace: dict[str, Any], line_pps: float) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    qps = {q["send"]: q for q in trace.get("qps", [])}
    if not qps:
        raise ValueError("the trace has no per-QP records (a run before flow_compare existed)")
    for m in trace["messages"]:
        q = qps[m["send"]]
        rates = [r / line_pps for _t, r in q["rate_log"]]
        out[m["send"]] = {
            "m": m,
            "dur": m["last_rx"] - m["first_tx"],
            "cnps": q["cnps"],
            "cuts": rate_decreases(rates),
            "min_rate": min(rates, default=1.0),
            "rate_log": _span(
                [(t, r / line_pps) for t, r in q["rate_log"]], m["first_tx"], m["last_rx"]
            ),
            "waits": [w for _t, w in q.get("waits", [])],
        }
    return out


def rate_decreases(rates: list[float]) -> int:
    """Cuts, counted alike in both instruments: how often a flow's rate fell. A cut at the rate
    floor changes nothing and counts in neither (the hosts log only changes; the kernel's trace
    has a TR_CUT row for it, which counting rows would add: 2,939 against bmv2's 442 on
    hpcc-run-dcqcn 2x2x4, seed 101, with 3,915 and 3,804 CNPs, most flows at the floor)."""
    return sum(1 for a, b in pairwise(rates) if b < a)


def _span(log: list[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    """A rate timeline over one message, start to end: the rate in force at its start (line
    rate if none was set before), every change within it, and the rate held to its end."""
    before = [r for t, r in log if t <= start]
    out = [(start, before[-1] if before else 1.0)]
    out += [(t, r) for t, r in log if start < t < end]
    return [*out, (end, out[-1][1])]


def sim_flows(r: FabricResult, scale: float, *, paper: bool) -> dict[int, dict[str, Any]]:
    """Per flow from the kernel's cc_trace. Under the DCQCN paper's rules every CNP is a cut
    (one TR_CUT row); under Mellanox's a CNP is a TR_CNP / TR_FIRST_CNP row of its own."""
    tr = r.cc_trace
    to_s = 1e-12 * scale
    waits = sim_waits(tr, to_s)
    rate_rows = tr[~np.isin(tr[:, 2], (kn.TR_SEND, kn.TR_ACK, kn.TR_RECV))]
    out: dict[int, dict[str, Any]] = {}
    for f in range(len(r.flow_done_us)):
        rows = rate_rows[rate_rows[:, 1] == f]
        code = rows[:, 2]
        rates = rows[:, 3] / LINE_GBPS
        out[f] = {
            "dur": (r.flow_done_us[f] - r.flow_begin_us[f]) * 1e-6 * scale,
            "cnps": int(
                np.isin(code, (kn.TR_CUT,) if paper else (kn.TR_CNP, kn.TR_FIRST_CNP)).sum()
            ),
            # a flow starts at line rate (as `_span` has it): its first row is after a change
            "cuts": rate_decreases([1.0, *rates.tolist()]),
            "min_rate": float(rates.min()) if rates.size else 1.0,
            "rate_log": _span(
                [(float(t) * to_s, float(x)) for t, x in zip(rows[:, 0], rates, strict=True)],
                r.flow_begin_us[f] * 1e-6 * scale,
                r.flow_done_us[f] * 1e-6 * scale,
            ),
            "waits": waits.get(f, []),
        }
    return out


def sim_waits(tr: np.ndarray, to_s: float) -> dict[int, list[float]]:
    """Each data frame's wait in the simulator's queues, per flow, in the trace's order: its
    one-way delay (its PSN's last TR_SEND to its TR_RECV) less the flow's least one-way delay,
    the propagation and per-hop frame times an empty path costs too (the hosts' side takes the
    path's latency off the same way: nic.ReceiverQP.waits). Seconds times to_s's scale."""
    sent: dict[tuple[int, int], float] = {}
    delays: dict[int, list[float]] = {}
    io = tr[np.isin(tr[:, 2], (kn.TR_SEND, kn.TR_RECV))]
    for t, f, code, idx in zip(io[:, 0], io[:, 1], io[:, 2], io[:, 6], strict=True):
        key = (int(f), int(idx))
        if code == kn.TR_SEND:
            sent[key] = float(t)
        elif key in sent:  # an arrival after its send (a duplicate's second arrival: skipped)
            delays.setdefault(key[0], []).append((float(t) - sent.pop(key)) * to_s)
    return {f: [d - min(ds) for d in ds] for f, ds in delays.items()}


def _wait_ms(waits: list[float]) -> tuple[float, float]:
    """(median, peak) of a send's frame waits, ms; NaN where it has none recorded."""
    if not waits:
        return math.nan, math.nan
    return 1e3 * statistics.median(waits), 1e3 * max(waits)


def compare(out: Path, variant: str, seed: int) -> tuple[list[FlowPair], dict[str, Any]]:
    setup = setup_of(out)
    trace = json.loads((out / "traces" / f"{variant}-seed{seed}.json").read_text())
    b = bmv2_flows(trace, setup.line_pps)
    r = simulate(
        setup.sim_config(variant_of(variant)), seed, cc_trace_rows=TRACE_ROWS, trace_io=True
    )
    s = sim_flows(r, setup.scale, paper=setup.ex_setup.dcqcn.rules == "dcqcn-paper")
    if r.cc_trace.shape[0] >= TRACE_ROWS:
        raise RuntimeError("the simulator's cc_trace overflowed: raise TRACE_ROWS")
    pairs = []
    for f, x in sorted(b.items()):
        m, y = x["m"], s[f]
        (bw_med, bw_max), (sw_med, sw_max) = _wait_ms(x["waits"]), _wait_ms(y["waits"])
        pairs.append(
            FlowPair(
                send=f,
                src=m["src"],
                dst=m["dst"],
                step=m["step"],
                bmv2_s=x["dur"],
                sim_s=y["dur"],
                bmv2_cnps=x["cnps"],
                sim_cnps=y["cnps"],
                bmv2_cuts=x["cuts"],
                sim_cuts=y["cuts"],
                bmv2_min_rate=x["min_rate"],
                sim_min_rate=y["min_rate"],
                bmv2_wait_ms_median=bw_med,
                sim_wait_ms_median=sw_med,
                bmv2_wait_ms_max=bw_max,
                sim_wait_ms_max=sw_max,
            )
        )
    timelines = {f: (b[f]["rate_log"], s[f]["rate_log"]) for f in b}
    return pairs, {"setup": setup, "sim": r, "timelines": timelines}


def totals(pairs: list[FlowPair]) -> dict[str, float]:
    def med(k: str) -> float:
        return statistics.median(getattr(p, k) for p in pairs)

    def tot(k: str) -> float:
        return float(sum(getattr(p, k) for p in pairs))

    return {
        "sends": len(pairs),
        "median_s_bmv2": med("bmv2_s"),
        "median_s_sim": med("sim_s"),
        "sum_s_bmv2": tot("bmv2_s"),
        "sum_s_sim": tot("sim_s"),
        "cnps_bmv2": tot("bmv2_cnps"),
        "cnps_sim": tot("sim_cnps"),
        "cuts_bmv2": tot("bmv2_cuts"),
        "cuts_sim": tot("sim_cuts"),
        "sends_slower_in_sim": sum(p.sim_s > p.bmv2_s for p in pairs),
        # the queues: the median send's median frame wait, and the deepest any frame found
        "wait_ms_median_bmv2": _nan_median(p.bmv2_wait_ms_median for p in pairs),
        "wait_ms_median_sim": _nan_median(p.sim_wait_ms_median for p in pairs),
        "wait_ms_max_bmv2": _nan_max(p.bmv2_wait_ms_max for p in pairs),
        "wait_ms_max_sim": _nan_max(p.sim_wait_ms_max for p in pairs),
    }


def _nan_median(xs: Iterable[float]) -> float:
    vals = [x for x in xs if not math.isnan(x)]
    return statistics.median(vals) if vals else math.nan


def _nan_max(xs: Iterable[float]) -> float:
    return max((x for x in xs if not math.isnan(x)), default=math.nan)


def plot(pairs: list[FlowPair], timelines: dict[int, Any], path: Path, n: int = 4) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worst = sorted(pairs, key=lambda p: abs(p.sim_s - p.bmv2_s), reverse=True)[:n]
    fig, axes = plt.subplots(len(worst), 1, figsize=(9, 2.2 * len(worst)), squeeze=False)
    for ax, p in zip(axes[:, 0], worst, strict=True):
        for log, label, style in (
            (timelines[p.send][0], f"bmv2 ({p.bmv2_s:.2f} s)", "-"),
            (timelines[p.send][1], f"simulator ({p.sim_s:.2f} s)", "--"),
        ):
            if log:
                t, r = zip(*log, strict=True)
                ax.step(t, r, style, where="post", label=label)
        ax.set_ylabel("rate / line")
        ax.set_title(f"send {p.send}: h{p.src} -> h{p.dst}, step {p.step}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    axes[-1, 0].set_xlabel("emulated seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="a fabric_experiment output directory")
    ap.add_argument("--variant", default="baseline")
    ap.add_argument("--seed", type=int, default=100)
    args = ap.parse_args(argv)
    try:
        pairs, extra = compare(args.out, args.variant, args.seed)
    except (OSError, ValueError, KeyError) as e:
        print(f"flow_compare: {e}", file=sys.stderr)
        return 2
    stem = f"flows-{args.variant}-seed{args.seed}"  # a variant's name may hold a dot (k=0.01)
    csv_path, png_path = args.out / f"{stem}.csv", args.out / f"{stem}.png"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[x.name for x in fields(FlowPair)])
        w.writeheader()
        w.writerows(p.__dict__ for p in pairs)
    plot(pairs, extra["timelines"], png_path)
    for k, v in totals(pairs).items():
        print(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}")
    print(f"-> {csv_path}, {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
