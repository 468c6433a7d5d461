"""The kernel's event queue pops by time, then in push order (ns-3's Scheduler::EventKey: time,
then uid), whatever mix of pushes and pops came before."""

from __future__ import annotations

import numpy as np

from evaluation.fabric import kernel
from evaluation.fabric.kernel_state import INF


def _queue(cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.full(2 * cap + 8, INF, np.int64), np.zeros(2 * cap + 8, np.int64), np.zeros(
        cap + 1, np.int64
    )


def test_two_events_pushed_for_the_same_time_pop_in_push_order() -> None:
    ht, hs, hd = _queue(16)
    n = kernel._push(ht, hs, hd, 0, 500, 7)
    n = kernel._push(ht, hs, hd, n, 500, 3)
    t, d, n = kernel._pop(ht, hs, hd, n)
    assert (t, d) == (500, 7)
    t, d, n = kernel._pop(ht, hs, hd, n)
    assert (t, d) == (500, 3)
    assert n == 0


def test_random_pushes_and_pops_follow_time_then_push_order() -> None:
    rng = np.random.default_rng(1)
    ht, hs, hd = _queue(4096)
    n = 0
    now = 0
    pending: list[tuple[int, int, int]] = []  # (time, push number, payload)
    pushes = 0
    popped: list[tuple[int, int]] = []
    expected: list[tuple[int, int]] = []
    for _ in range(20_000):
        if n == 0 or rng.random() < 0.55:
            # few distinct times ahead of now: most pushes tie with another
            t = now + int(rng.integers(0, 6)) * 1000
            d = int(rng.integers(0, 1 << 40))
            n = kernel._push(ht, hs, hd, n, t, d)
            pending.append((t, pushes, d))
            pushes += 1
        else:
            now, d, n = kernel._pop(ht, hs, hd, n)
            popped.append((now, d))
            first = min(pending)
            pending.remove(first)
            expected.append((first[0], first[2]))
    assert n >= 0
    assert popped == expected
