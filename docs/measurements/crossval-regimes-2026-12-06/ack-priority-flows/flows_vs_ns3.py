"""One `table1` run flow by flow, ns-3 against the kernel on the same workload (issue 45): how
many flows agree to the ns before the first difference, the first differences, and the flows
ns-3 took longest over with the kernel's time beside. `--ns-rounded` runs the kernel with ns-3's
time arithmetic for transmissions (every frame's tx time rounded to whole ns, as ns-3's
`DataRate::CalculateBytesTxTime` gives it), by patching the port rows.

    cd docs/measurements/crossval-regimes-2026-12-06/ack-priority-flows
    PYTHONPATH=../../../.. python flows_vs_ns3.py --seed 105 ns3-run105-flows.txt
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import ns3_export


def ns_rounded() -> None:
    """ns-3's transmission times: whole ns, data and ACK alike (ns3_export)."""
    ns3_export.whole_ns_transmissions()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ns3_flows", type=Path, help="the driver's `flow <id> <start_ns> <done_ns>`")
    ap.add_argument("--regime", default="ack-priority", choices=sorted(xr.REGIMES))
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--ns-rounded", action="store_true")
    ap.add_argument("--show", type=int, default=12)
    args = ap.parse_args()
    if args.ns_rounded:
        ns_rounded()
    from evaluation.fabric.sim import simulate  # after the patch: the kernel's state is built there

    cfg = xr.scenario_config("table1", args.regime, "baseline")
    wl = ns3_export.workload(cfg, args.seed)
    r = simulate(cfg, args.seed)
    kb, kd = r.flow_begin_us, r.flow_done_us
    nb = np.full(kb.shape[0], np.nan)
    nd = nb.copy()
    for line in args.ns3_flows.read_text().splitlines():
        p = line.split()
        if p[:1] == ["flow"]:
            nb[int(p[1])], nd[int(p[1])] = int(p[2]) / 1000, int(p[3]) / 1000
    print(f"CCT: ns-3 {np.nanmax(nd) / 1e3:.1f} ms, kernel {kd.max() / 1e3:.1f} ms")
    order = np.argsort(nd)
    same = next((i for i, f in enumerate(order) if abs(kd[f] - nd[f]) > 0.0005), len(order))
    print(f"flows done at the same ns before the first difference: {same}")

    def row(f: int) -> str:
        return (
            f"flow {f} step {wl.f_step[f]} {wl.f_src[f]}->{wl.f_dst[f]}: begin ns-3 {nb[f]:.3f}"
            f" kernel {kb[f]:.3f} us, took ns-3 {(nd[f] - nb[f]) / 1e3:.2f} kernel"
            f" {(kd[f] - kb[f]) / 1e3:.2f} ms, done diff {kd[f] - nd[f]:+.3f} us"
        )

    for f in order[same : same + args.show]:
        print("  " + row(f))
    print("longest in ns-3:")
    for f in np.argsort(nb - nd)[: args.show]:
        print("  " + row(f))


if __name__ == "__main__":
    main()
