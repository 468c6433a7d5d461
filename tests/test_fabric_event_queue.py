"""The kernel's event queue pops by time, then in push order (ns-3's Scheduler::EventKey: time,
then uid), whatever mix of pushes and pops came before; it refuses what it cannot hold."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.fabric import event_queue as eq


def test_two_events_pushed_for_the_same_time_pop_in_push_order() -> None:
    q = eq.new_queue(16)
    eq.push(q, 500, 7)
    eq.push(q, 500, 3)
    assert eq.pop(q) == (500, 7)
    assert eq.pop(q) == (500, 3)
    assert q[eq.SIZE] == 0


def test_equal_times_keep_push_order_across_bucket_moves() -> None:
    # 9 and 5 reach bucket 0 by a move (when 100 pops), 4 is pushed straight into it after
    q = eq.new_queue(16)
    for t, d in ((1 << 30, 9), (100, 1), (1 << 30, 5)):
        eq.push(q, t, d)
    assert eq.pop(q) == (100, 1)
    eq.push(q, 1 << 30, 4)
    assert [eq.pop(q) for _ in range(3)] == [(1 << 30, 9), (1 << 30, 5), (1 << 30, 4)]


@pytest.mark.parametrize(
    "far",
    [
        1 << 33,  # 8.6 ms: into the buckets beyond the wheel
        1 << 38,  # 275 ms: beyond the buckets, into the far list
    ],
)
def test_random_pushes_and_pops_follow_time_then_push_order(far: int) -> None:
    rng = np.random.default_rng(1)
    q = eq.new_queue(4096)
    now = 0
    pending: list[tuple[int, int, int]] = []  # (time, push number, payload)
    pushes = 0
    popped: list[tuple[int, int]] = []
    expected: list[tuple[int, int]] = []
    for _ in range(20_000):
        if not pending or rng.random() < 0.55:
            # few distinct times ahead of now, some far: most pushes tie with another
            t = now + int(rng.integers(0, 6)) * 1000 + int(rng.integers(0, 2)) * far
            d = int(rng.integers(0, 1 << 40))
            eq.push(q, t, d)
            pending.append((t, pushes, d))
            pushes += 1
        else:
            now, d = eq.pop(q)
            popped.append((now, d))
            first = min(pending)
            pending.remove(first)
            expected.append((first[0], first[2]))
    assert q[eq.SIZE] == len(pending)
    assert popped == expected


def test_a_full_queue_and_an_event_in_the_past_are_refused() -> None:
    q = eq.new_queue(2)
    for t in (10, 20, 30):
        eq.push(q, t, 0)
    assert q[eq.SIZE] < 0
    q = eq.new_queue(4)
    eq.push(q, 10, 0)
    eq.push(q, 20, 0)
    assert eq.pop(q) == (10, 0)
    eq.push(q, 5, 0)
    assert q[eq.SIZE] < 0


def test_owned_rows_queue_in_push_order_and_stay_their_owners() -> None:
    # two owned rows (a packet's, in the kernel) among events from the queue's own nodes
    q = eq.new_queue(4, owned=2)
    rows = eq.rows(q)
    assert rows.shape == (2, eq.ROW) and q.ctypes.data % eq.LINE == 0
    rows[:, eq.ROW - 1] = (11, 22)  # an owner's word, beyond the queue's three
    node = [q[eq.OWNED] + eq.ROW * r for r in range(2)]
    eq.push(q, 500, 1)
    eq.push_owned(q, node[1], 500, 2)
    eq.push_owned(q, node[0], 400, 3)
    eq.push(q, 500, 4)
    free = q[eq.FREE]
    assert [eq.pop(q) for _ in range(4)] == [(400, 3), (500, 1), (500, 2), (500, 4)]
    assert q[eq.SIZE] == 0 and list(rows[:, eq.ROW - 1]) == [11, 22]
    # the queue's own nodes came back to the free list, the rows did not
    seen = set()
    x = q[eq.FREE]
    while x >= 0:
        seen.add(int(x))
        x = q[x + eq.N_NEXT]
    assert free in seen and not seen & set(node) and len(seen) == 4
    eq.push_owned(q, node[0], 300, 5)  # earlier than the last pop: refused
    assert q[eq.SIZE] < 0
