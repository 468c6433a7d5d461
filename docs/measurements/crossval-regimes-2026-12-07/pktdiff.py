"""Packet by packet: every packet's arrival at every switch in ns-3 and in the kernel, on one
workload, and the first arrivals that differ (issue 45, docs/evaluation.md "The NIC's round
robin", "The ACK in its arrival"). `crossval_regimes.packet_level_config`: `table1` at 1 MiB
chunks without RED (no coins: both instruments deterministic), with ns-3's whole-ns transmission
times (`ns3_export.whole_ns_transmissions`).

    cd docs/measurements/crossval-regimes-2026-12-07
    SYMPHONY_NS3=/path/to/symphony-driver python pktdiff.py --seed 100 --splits 4 --until-us 6470
    ... --regime both --until-us 20000 --digest   # the numbers of tests/data/ns3_arrivals.json

pktdiff-v6-*.txt: the whole run (--until-us 1000000) in each regime, kernel version 6.

The driver prints its `X` lines when SYM_TRACE_ALL_T1 is set (the ns-3 build's README, outside
the repository); the kernel records TR_HOP rows (`simulate(..., hop_trace_us=...)`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs/measurements/crossval-regimes-2026-12-06/ack-priority-flows"))

import flows_vs_ns3  # noqa: E402
import numpy as np  # noqa: E402

from evaluation.fabric import crossval_regimes as xr  # noqa: E402
from evaluation.fabric import kernel as kn  # noqa: E402
from evaluation.fabric import ns3_export  # noqa: E402
from evaluation.fabric.sim import simulate  # noqa: E402

KIND = {"11": 0, "fc": 1, "fd": 2}  # l3Prot: data, ACK, NACK


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--splits", type=int, default=4)
    ap.add_argument("--regime", default="default")
    ap.add_argument("--until-us", type=float, default=6470.0)
    ap.add_argument("--show", type=int, default=6)
    ap.add_argument(
        "--digest",
        action="store_true",
        help="also print both instruments' kernel.arrivals_digest (tests/data/ns3_arrivals.json)",
    )
    a = ap.parse_args()
    flows_vs_ns3.ns_rounded()
    cfg = xr.packet_level_config(a.regime, a.splits)
    d = ROOT / "build" / "pktdiff" / f"{a.regime}-s{a.splits}-{a.seed}"
    ns3_export.write(cfg, a.seed, d)
    until_ps = round(a.until_us * 1e6)
    env = dict(os.environ, SYM_TRACE_ALL_T1=str(until_ps))
    args = [
        os.environ["SYMPHONY_NS3"],
        f"--config={d / 'config.txt'}",
        f"--topo={d / 'topology.txt'}",
        f"--workload={d / 'workload.txt'}",
        f"--symphony={d / 'symphony.txt'}",
        f"--RngRun={a.seed}",
        "--post=schedule",
    ]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    ns3: dict[tuple[int, int, int], list[tuple[int, tuple[int, int], int]]] = defaultdict(list)
    for line in out.stderr.splitlines():
        if line.startswith("X "):
            _, t, sw, dev, k, f, ix, qb = line.split()
            ns3[(KIND[k], int(f), int(ix))].append((int(t), (int(sw), int(dev)), int(qb)))
    res = simulate(cfg, a.seed, cc_trace_rows=20_000_000, hop_trace_us=a.until_us)
    ker: dict[tuple[int, int, int], list[tuple[int, int, int]]] = defaultdict(list)
    for row in res.cc_trace:
        if int(row[2]) == kn.TR_HOP:
            kind, ix, qb = kn.hop_fields(int(row[7]))
            ker[(kind, int(row[1]), ix)].append((int(row[0]), int(row[6]), qb))
    arrivals = defaultdict(int)  # (time, switch port) -> packets arriving then
    for hops in ns3.values():
        for t, p, _ in hops:
            arrivals[(t, p)] += 1
    first, n, q_tie, q_other = [], 0, 0, 0
    q_kind = [0, 0, 0]  # of those whose queue reading differs: data, ACK, NACK
    q_ns3_zero = 0  # of those, ns-3 reads 0 (its MMU does not count queue 0, the ACKs' class)
    for key, hops in ns3.items():
        for h, (k, m) in enumerate(zip(ker.get(key, []), hops, strict=False)):
            n += 1
            if k[0] != m[0]:
                first.append((min(k[0], m[0]), key, h, k, m))
                break
            if k[2] != m[2]:
                q_tie, q_other = (
                    (q_tie + 1, q_other) if arrivals[m[:2]] > 1 else (q_tie, q_other + 1)
                )
                q_kind[key[0]] += 1
                q_ns3_zero += m[2] == 0
    print(
        f"seed {a.seed}, splits {a.splits}, {a.regime}, until {a.until_us} us: {n} arrivals "
        f"compared ({len(ns3)} packets in ns-3, {len(ker)} in the kernel)"
    )
    print(
        f"same time, other bytes queued ahead: {q_tie} with another arrival at that port at "
        f"that instant, {q_other} without"
    )
    if any(q_kind):
        print(f"  of which data {q_kind[0]}, ACKs {q_kind[1]}, NACKs {q_kind[2]}")
        print(f"  of which ns-3 reads 0 bytes: {q_ns3_zero}")
    for name, mine, other in (("ns-3", ns3, ker), ("the kernel", ker, ns3)):
        extra = sorted(set(mine) - set(other))
        if extra:
            print(f"only in {name}: {len(extra)} packets (kind, flow, PSN index), e.g. {extra[:4]}")
    if a.digest:
        for name, per_packet in (("ns-3", ns3), ("kernel", ker)):
            n_rows, sha = kn.arrivals_digest(
                np.array(
                    [(*key, hop[0]) for key, hops in per_packet.items() for hop in hops],
                    dtype=np.int64,
                )
            )
            print(f"digest {name}: {n_rows} {sha}")
    for t, (kind, f, ix), h, k, m in sorted(first)[: a.show]:
        print(
            f"  {t / 1e6:.3f} us: {('data', 'ACK', 'NACK')[kind]} of flow {f}, PSN index {ix}, "
            f"hop {h}: kernel {k[0] / 1e6:.3f} us at port {k[1]} ({k[2]} B ahead), "
            f"ns-3 {m[0] / 1e6:.3f} us at switch {m[1][0]} dev {m[1][1]} ({m[2]} B ahead)"
        )


if __name__ == "__main__":
    main()
