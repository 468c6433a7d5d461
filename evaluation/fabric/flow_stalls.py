"""Flow by flow (issue 46): where DCQCN alone loses its time on the Table 1 default with ACKs
behind data, and what ACK priority and Symphony change of it.

    python -m evaluation.fabric.flow_stalls --seed 100 --out build/flow-stalls

One run per deployment (regime_map.OPTIONS) on the same seed with the kernel's NIC trace on
(every data frame sent, received, and its ACK back at the sender). Per flow:

- **window stall**: the time the sender could not send because its in-flight frames filled its
  window (HPCC's `IsWinBound`, the window scaled by rate under VAR_WIN), beyond the gap its rate
  paces frames at: after a frame that left the flow window-bound, the time to its next frame
  less that gap. The host's NIC may serve its other flows meanwhile, so a stall is the flow's
  loss, not necessarily the link's; and flows sharing a bottleneck fairly are window-bound
  there by design (their stall is their share, not a loss).
- **ACK wait**: each ACK's trip, from the receiver taking the frame it acknowledges to the sender
  taking the ACK, less the flow's shortest such trip (the unloaded path: the ACK's serialisation
  and propagation per hop). That is the time ACKs wait in queues.
- **data wait**: each data frame's trip, sent to received, less the flow's shortest.
- **NIC sharing**: the flows of its sender in flight with it (itself included), averaged over
  its life: the steps' overlap on one NIC, which the hosts' round robin divides the link by.
- **rate cuts** and the lowest rate DCQCN cut it to.
- **NIC busy**: per host, its data frames' serialisation time over the collective's time.

It writes `flows.csv` (one line per flow and deployment), `summary.md` and `flow-stalls.png`.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.fabric import kernel as kn
from evaluation.fabric import regime_map as rm
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.sim import FabricResult, flow_windows, prepare, simulate

PS = 1_000_000  # ps per us
MiB = 1 << 20
DEFAULT_OPTIONS = ("dcqcn", "ack", "shipped", "paper")
Flow = tuple[int, int, int, int, int]  # topology.custom_workload's (src, dst, hash, packets, start)


@dataclass(frozen=True)
class FlowStats:
    flow: int
    src: int
    dst: int
    step: int
    frames: int
    begin_us: float
    done_us: float
    stall_us: float
    ack_wait_mean_us: float
    ack_wait_max_us: float
    data_wait_mean_us: float
    # flows of its sender in flight with it, itself included, averaged over its life: how many
    # ways its NIC was shared (the steps' overlap on one host)
    nic_sharing: float
    cuts: int  # rate decreases (CNPs acted on)
    min_rate_gbps: float  # the lowest rate it was cut to (line rate if never cut)

    @property
    def duration_us(self) -> float:
        return self.done_us - self.begin_us


def _per_flow_trips(
    t_from: np.ndarray, f_from: np.ndarray, i_from: np.ndarray,
    t_to: np.ndarray, f_to: np.ndarray, i_to: np.ndarray, nf: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Match (flow, index) of two event lists (each key once in `to`, the first of `from`):
    per flow the mean and max of (trip - the flow's shortest trip), in ps."""
    span = int(max(i_from.max(initial=0), i_to.max(initial=0))) + 2
    k_from = f_from.astype(np.int64) * span + i_from.astype(np.int64)
    k_to = f_to.astype(np.int64) * span + i_to.astype(np.int64)
    u_from, first = np.unique(k_from, return_index=True)
    pos = np.searchsorted(u_from, k_to)
    ok = (pos < u_from.size) & (u_from[np.minimum(pos, u_from.size - 1)] == k_to)
    trip = t_to[ok] - t_from[first[pos[ok]]]
    flow = f_to[ok].astype(np.int64)
    shortest = np.full(nf, np.inf)
    np.minimum.at(shortest, flow, trip)
    wait = trip - shortest[flow]
    n = np.bincount(flow, minlength=nf)
    mean = np.bincount(flow, weights=wait, minlength=nf) / np.maximum(n, 1)
    mx = np.zeros(nf)
    np.maximum.at(mx, flow, wait)
    return mean, mx, n


def flow_stats(
    cfg: FabricConfig, seed: int, res: FabricResult, flows: list[Flow] | None = None
) -> list[FlowStats]:
    """Per flow, from the run's trace (`simulate(..., trace_io=True)`, `flows` as it ran)."""
    _, _, wl = prepare(cfg, seed, flows)
    nf = wl.f_src.shape[0]
    tr = res.cc_trace
    code = tr[:, 2].astype(np.int64)
    # window stalls, from the frames sent: after each, was the flow window-bound?
    s = tr[code == kn.TR_SEND]
    order = np.lexsort((s[:, 0], s[:, 1]))
    t, f = s[order, 0], s[order, 1].astype(np.int64)
    rc, fly = s[order, 3], s[order, 7]
    win = flow_windows(cfg, wl.f_plen).astype(float)[f]
    d = cfg.cc
    w = np.maximum(np.floor(win * rc / cfg.link_gbps), 1.0) if d.var_win else win
    bound = (win > 0) & (fly * cfg.mtu >= w)
    gap = cfg.mtu * 8 / rc * 1000.0  # ps: the pacing gap at the frame's rate
    same = f[1:] == f[:-1]
    lost = np.where(bound[:-1] & same, np.maximum(t[1:] - t[:-1] - gap[:-1], 0.0), 0.0)
    stall = np.bincount(f[:-1], weights=lost, minlength=nf)
    # ACK waits: the receiver took frame i at TR_RECV; its ACK carries i + 1 (in order)
    r, a = tr[code == kn.TR_RECV], tr[code == kn.TR_ACK]
    ack_mean, ack_max, _ = _per_flow_trips(
        r[:, 0], r[:, 1], r[:, 6] + 1, a[:, 0], a[:, 1], a[:, 6], nf
    )
    data_mean, _, _ = _per_flow_trips(s[:, 0], s[:, 1], s[:, 6], r[:, 0], r[:, 1], r[:, 6], nf)
    c = tr[code == kn.TR_CUT]
    cf = c[:, 1].astype(np.int64)
    cuts = np.bincount(cf, minlength=nf)
    low = np.full(nf, cfg.link_gbps)
    np.minimum.at(low, cf, c[:, 3])
    begin, done = res.flow_begin_us, res.flow_done_us
    sharing = np.zeros(nf)
    for h in np.unique(wl.f_src):
        m = np.flatnonzero(wl.f_src == h)
        b, e = begin[m], done[m]
        both = np.minimum(e[:, None], e[None, :]) - np.maximum(b[:, None], b[None, :])
        sharing[m] = np.clip(both, 0.0, None).sum(axis=1) / np.maximum(e - b, 1e-9)
    out = []
    for i in range(nf):
        out.append(
            FlowStats(
                i,
                int(wl.f_src[i]),
                int(wl.f_dst[i]),
                int(wl.f_step[i]),
                int(wl.f_npk[i]),
                float(res.flow_begin_us[i]),
                float(res.flow_done_us[i]),
                stall[i] / PS,
                ack_mean[i] / PS,
                ack_max[i] / PS,
                data_mean[i] / PS,
                float(sharing[i]),
                int(cuts[i]),
                float(low[i]),
            )
        )
    return out


def run(
    cfg: FabricConfig, seed: int, flows: list[Flow] | None = None
) -> tuple[FabricResult, list[FlowStats]]:
    """One run with its trace, and its flows' stats (`flows`: independent flows instead of the
    collective, as `simulate` takes them)."""
    _, _, wl = prepare(cfg, seed, flows)
    frames = int(wl.f_npk.sum())
    # per frame: sent, received, its ACK back; plus the rate events (a few per flow and ms)
    rows = 3 * frames + 200 * wl.f_src.shape[0] + 1_000_000
    res = simulate(cfg, seed, flows, cc_trace_rows=rows, trace_io=True)
    if res.cc_trace.shape[0] >= rows:
        raise RuntimeError("the trace filled up: raise its rows")
    return res, flow_stats(cfg, seed, res, flows)


def summary_row(name: str, cfg: FabricConfig, res: FabricResult, fs: list[FlowStats]) -> dict:
    dur = np.array([x.duration_us for x in fs])
    frames = np.array([x.frames for x in fs], dtype=float)
    ser_us = cfg.mtu * 8 / cfg.link_gbps / 1000  # one data frame on a host link
    slow = dur >= np.percentile(dur, 90)
    sent = np.bincount([x.src for x in fs], weights=frames, minlength=cfg.hosts)
    cct = res.cct_max_us

    def per_frame(attr: str) -> float:
        return float((np.array([getattr(x, attr) for x in fs]) * frames).sum() / frames.sum())

    return {
        "option": name,
        "cct_ms": cct / 1000,
        "flow_ms_median": float(np.median(dur)) / 1000,
        "flow_ms_p90": float(np.percentile(dur, 90)) / 1000,
        "slowest_x_line": float(np.median(dur[slow] / (frames[slow] * ser_us))),
        "stall_share": sum(x.stall_us for x in fs) / dur.sum(),
        "ack_wait_us": per_frame("ack_wait_mean_us"),
        "data_wait_us": per_frame("data_wait_mean_us"),
        "nic_busy_median": float(np.median(sent * ser_us / cct)),
        "slowest_sharing": float(
            np.median([x.nic_sharing for x, sl in zip(fs, slow, strict=True) if sl])
        ),
        "slowest_cuts": float(np.median([x.cuts for x, sl in zip(fs, slow, strict=True) if sl])),
        "slowest_min_rate": float(
            np.median([x.min_rate_gbps for x, sl in zip(fs, slow, strict=True) if sl])
        ),
        "cnps": res.stats["cnps"],
        "symphony_marks": res.stats["symphony_marks"],
    }


SUMMARY_HEAD = (
    "| deployment | CCT ms | flow ms: median, p90 | slowest 10 % of flows (medians): x their"
    " line-rate time, flows sharing their NIC, rate cuts, lowest Gb/s |"
    " flow time window-stalled | ACK wait per frame (us) | data wait per frame (us) |"
    " host NIC busy (median host) | CNPs | Symphony marks |"
)


def summary_table(rows: list[dict]) -> str:
    lines = [SUMMARY_HEAD, "|---|" + "---:|" * 9]
    for r in rows:
        lines.append(
            f"| {rm.BY_NAME[r['option']].label} | {r['cct_ms']:.1f} |"
            f" {r['flow_ms_median']:.2f}, {r['flow_ms_p90']:.2f} | {r['slowest_x_line']:.2f},"
            f" {r['slowest_sharing']:.2f}, {r['slowest_cuts']:.0f}, {r['slowest_min_rate']:.2f} |"
            f" {r['stall_share']:.1%} | {r['ack_wait_us']:.2f} | {r['data_wait_us']:.2f} |"
            f" {r['nic_busy_median']:.1%} | {r['cnps']} | {r['symphony_marks']} |"
        )
    return "\n".join(lines) + "\n"


def plot(per_option: dict[str, list[FlowStats]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for name, fs in per_option.items():
        label = rm.BY_NAME[name].label
        for ax, xs in zip(
            axes,
            (
                [x.stall_us / max(x.duration_us, 1e-9) for x in fs],
                [x.ack_wait_mean_us for x in fs],
                [x.duration_us / 1000 for x in fs],
            ),
            strict=True,
        ):
            v = np.sort(np.asarray(xs))
            ax.plot(v, np.arange(1, v.size + 1) / v.size, label=label)
    axes[0].set_xlabel("share of the flow's time window-stalled")
    axes[1].set_xlabel("flow's mean ACK wait in queues (us)")
    axes[2].set_xlabel("flow duration (ms)")
    axes[2].set_xscale("log")
    for ax in axes:
        ax.set_ylabel("flows (CDF)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Table 1 default, flow by flow (one seed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


FLOW_FIELDS = (
    "option", "flow", "src", "dst", "step", "frames", "begin_us", "done_us", "stall_us",
    "ack_wait_mean_us", "ack_wait_max_us", "data_wait_mean_us", "nic_sharing", "cuts",
    "min_rate_gbps",
)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--chunk-kb", type=int, default=8192)
    ap.add_argument("--layout", choices=rm.LAYOUTS, default="2d")
    ap.add_argument("--nic", choices=rm.NICS, default="windowed")
    ap.add_argument(
        "--option", action="append", choices=[o.name for o in rm.OPTIONS],
        help=f"deployments (default {' '.join(DEFAULT_OPTIONS)})",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, default=Path("build/flow-stalls"))
    args = ap.parse_args(argv)
    regime = rm.Regime(args.layout, args.nic, args.hosts, args.chunk_kb * 1024)
    args.out.mkdir(parents=True, exist_ok=True)
    rows, per_option = [], {}
    with open(args.out / "flows.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FLOW_FIELDS)
        for name in args.option or DEFAULT_OPTIONS:
            cfg = rm.config(regime, rm.BY_NAME[name])
            res, fs = run(cfg, args.seed)
            per_option[name] = fs
            rows.append(summary_row(name, cfg, res, fs))
            for x in fs:
                w.writerow(
                    [name, x.flow, x.src, x.dst, x.step, x.frames, f"{x.begin_us:.3f}",
                     f"{x.done_us:.3f}", f"{x.stall_us:.3f}", f"{x.ack_wait_mean_us:.3f}",
                     f"{x.ack_wait_max_us:.3f}", f"{x.data_wait_mean_us:.3f}",
                     f"{x.nic_sharing:.3f}", x.cuts,
                     f"{x.min_rate_gbps:.4f}"]
                )  # fmt: skip
            print(summary_table(rows[-1:]).splitlines()[-1], flush=True)
    text = f"{regime.name}, seed {args.seed}\n\n" + summary_table(rows)
    (args.out / "summary.md").write_text(text)
    print(text)
    plot(per_option, args.out / "flow-stalls.png")


if __name__ == "__main__":
    main()
