"""Injected stalls: the machine made worse on purpose, to see the calibration answer it.

`injected_stalls(stall_ms, period_ms)` starts one process per core, pinned to it, under
SCHED_FIFO above the hosts' loop and bmv2, that spins for `stall_ms` at the start of every
`period_ms` of the wall clock: all cores at once, as the stalls that spoiled runs on a quiet
2-core machine did (docs/experiments.md, "Calibration"). A CPU hog at the normal priority would
not do: the loop and bmv2 run under SCHED_FIFO and simply preempt it (measured: two hogs beside
a SCHED_FIFO probe left its worst wake-up at 12 ms in a minute, the machine's own stalls). Needs
root; the kernel's real-time throttling (5 % of every second) bounds what it can take.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

INJECTOR_PRIORITY = 50  # above the hosts' loop (nic.RT_PRIORITY) and bmv2 (testbed)

_SPIN = """
import os, sys, time
cpu, prio = int(sys.argv[1]), int(sys.argv[4])
stall, period = float(sys.argv[2]), float(sys.argv[3])
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
while True:
    t = time.time()
    start = (t // period + 1) * period  # the next period's start, on every core alike
    time.sleep(start - t)
    while time.time() < start + stall:
        pass
"""


@contextmanager
def injected_stalls(stall_ms: float, period_ms: float) -> Iterator[list[int]]:
    """Stall every core for `stall_ms` every `period_ms` while the block runs; yields the pids."""
    if stall_ms >= period_ms:
        raise ValueError(f"stall {stall_ms} ms must be shorter than its period {period_ms} ms")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _SPIN,
                str(cpu),
                str(stall_ms / 1e3),
                str(period_ms / 1e3),
                str(INJECTOR_PRIORITY),
            ]
        )
        for cpu in sorted(os.sched_getaffinity(0))
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
