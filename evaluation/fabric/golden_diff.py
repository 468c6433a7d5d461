"""Differential check of the fabric simulator's numba kernel (`symphony_kernel`) against the
golden model: the conformance suite (`conformance/`) with the kernel adapter alone, so the
simulator's evaluation (`make evaluation`) records that the kernel it ran is the model.

    python -m evaluation.fabric.golden_diff --packets 1000000

`python -m conformance` runs the same traces over every implementation.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from conformance.runner import report, run_suite
from conformance.traces import trace_set
from evaluation.fabric.conformance_adapter import KernelAdapter


def compare(packets: int, traces: int = 200, first_seed: int = 0) -> Counter[str]:
    """The kernel over `traces` conformance traces of `packets` in all; raise AssertionError
    with the mismatch report at any difference. Returns what the traces reached."""
    [result] = run_suite(trace_set(traces, packets, first_seed), [KernelAdapter()])
    if result.mismatches:
        raise AssertionError(report([result]))
    return result.coverage


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--traces", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0, help="the first trace's seed")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    summary = compare(args.packets, args.traces, args.seed)
    print(f"identical: {dict(summary)} ({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
