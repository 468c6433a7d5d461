"""The conformance suite over every implementation available here, on the same traces.

    python -m conformance --traces 200 --packets 1000000
    python -m conformance --inject alpha+2        # a broken implementation: must fail
    python -m conformance --ptf                   # also bmv2, through the PTF suite (root)

The golden model's variants and the fabric kernel run in this process. bmv2 runs inside the PTF
suite (it needs the PTF dataplane and the veth ports): `--ptf` runs `scripts/run_ptf.sh
test_conformance` on the first `--ptf-traces` seeds of the same trace set, `--ptf-packets`
packets each (a prefix of each trace here). The t2na adapter is skipped, with its reason, where
no Tofino model is installed. Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from conformance.adapters import in_process, registered
from conformance.adapters.bmv2_ptf import PACKETS_ENV, SEED_ENV, TRACES_ENV
from conformance.faults import AlphaPlusTwo, Perturbed
from conformance.implementation import Implementation
from conformance.runner import report, run_suite
from conformance.traces import trace_set

ROOT = Path(__file__).resolve().parent.parent


def injected(name: str) -> Implementation:
    """A deliberately broken implementation, by name."""
    if name == "alpha+2":
        return AlphaPlusTwo()
    plugins = registered()
    impl, _, what = name.partition(":")  # kernel:<JobState field or decision column>
    if what and impl in plugins:
        inner = plugins[impl]()
        return (
            Perturbed(inner, column=what) if what in inner.exposes else Perturbed(inner, state=what)
        )
    faults = ", ".join(["alpha+2", *(f"{p}:<field>" for p in plugins)])
    raise SystemExit(f"unknown fault {name!r} ({faults})")


def run_ptf(traces: int, packets: int, seed: int) -> int:
    env = {
        **os.environ,
        TRACES_ENV: str(traces),
        PACKETS_ENV: str(packets),
        SEED_ENV: str(seed),
    }
    print(f"bmv2-ptf: scripts/run_ptf.sh test_conformance ({traces} traces x {packets} packets)")
    sys.stdout.flush()
    return subprocess.call([str(ROOT / "scripts" / "run_ptf.sh"), "test_conformance"], env=env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=200)
    ap.add_argument("--packets", type=int, default=1_000_000, help="in all, over the traces")
    ap.add_argument("--seed", type=int, default=0, help="the first trace's seed")
    ap.add_argument("--inject", action="append", default=[], help="add a broken implementation")
    ap.add_argument("--limit", type=int, default=40, help="mismatches listed per implementation")
    ap.add_argument("--ptf", action="store_true", help="also bmv2 through the PTF suite")
    ap.add_argument("--ptf-traces", type=int, default=20)
    ap.add_argument("--ptf-packets", type=int, default=100, help="per trace")
    args = ap.parse_args(argv)

    impls = in_process() + [injected(name) for name in args.inject]
    t0 = time.monotonic()
    traces = trace_set(args.traces, args.packets, args.seed)
    last_seed = args.seed + args.traces - 1
    print(
        f"{len(traces)} traces, {sum(len(t.packets) for t in traces):,} packets,"
        f" {sum(len(t.jobs) for t in traces)} jobs (seeds {args.seed}..{last_seed});"
        " reference: model-bmv2"
    )
    results = run_suite(traces, impls)
    print(report(results, args.limit))
    reached = next((r.coverage for r in results if r.skipped is None), None)
    if reached:
        print("reached:", ", ".join(f"{k} {v:,}" for k, v in sorted(reached.items())))
    print(f"({time.monotonic() - t0:.0f} s)")
    failed = any(r.mismatches for r in results)
    if args.ptf:
        failed |= run_ptf(args.ptf_traces, args.ptf_packets, args.seed) != 0
    else:
        print("bmv2-ptf: not run here (--ptf, or scripts/run_ptf.sh test_conformance)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
