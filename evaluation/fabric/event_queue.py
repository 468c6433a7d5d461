"""The fabric kernel's event queue: a radix heap whose buckets are FIFO lists.

Events pop by time, then in push order among equal times (ns-3's rule: Scheduler::EventKey
orders by time, then by the event's uid, its insertion count). A radix heap (Ahuja, Mehlhorn,
Orlin, Tarjan 1990) serves a monotone queue, one where no event is pushed earlier than the last
one popped, which a simulator's clock guarantees: bucket b holds the events whose time differs
from `last` (the time last popped) first in bit b - 1, bucket 0 those at `last` itself. A push
appends to its bucket; a pop takes bucket 0's head, and when bucket 0 is empty, the lowest
non-empty bucket's earliest time becomes `last` and that bucket's events move, in their order,
to the lower buckets. Equal times are always in one bucket (their bucket depends only on their
time and `last`), in push order (a move keeps the order, and a bucket being emptied is older
than every push after it), so no sequence number needs to be stored or compared: the queue pops
exactly what a binary heap keyed by (time, push count) pops (`tests/test_fabric_heap.py`).

Cost: a push is an xor, a count of leading zeros and an append; an event moves at most once per
bucket it passes through, and events ahead of `last` by about a switch hop's time (2^20 ps)
pass through few. Measured against the binary heap it replaced in `bench/fabric_speed.py`.

Everything is in four preallocated arrays (the kernel allocates nothing): per event node its
time, payload and next node; `qm` the buckets' heads and tails, the set of non-empty buckets as
a bit mask, `last`, the free list and the size (`ERROR` past -1 once a push was refused: the
queue full, or an event earlier than `last`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

BUCKETS = 64  # times are non-negative int64: t ^ last has at most 63 bits
HEAD = 0  # qm[HEAD + b]: bucket b's first node, -1 when empty
TAIL = BUCKETS  # qm[TAIL + b]: its last node
MASK = 2 * BUCKETS  # bit b set iff bucket b > 0 is non-empty (bucket 0 is read directly)
LAST = MASK + 1
FREE = MASK + 2  # the first free node, -1 when none
SIZE = MASK + 3  # events queued, or ERROR once a push was refused
META = MASK + 4
ERROR = -(1 << 62)


class EventQueue(NamedTuple):
    qt: np.ndarray  # [node] time, ps
    qd: np.ndarray  # [node] payload
    qn: np.ndarray  # [node] next node in its bucket, or in the free list
    qm: np.ndarray  # [META] heads, tails, mask, last, free, size


def new_queue(capacity: int) -> EventQueue:
    """An empty queue for at most `capacity` events at once."""
    qn = np.arange(1, capacity + 1, dtype=np.int64)
    qn[-1] = -1
    qm = np.full(META, -1, dtype=np.int64)
    qm[MASK] = 0
    qm[LAST] = 0
    qm[FREE] = 0
    qm[SIZE] = 0
    return EventQueue(
        qt=np.zeros(capacity, np.int64), qd=np.zeros(capacity, np.int64), qn=qn, qm=qm
    )


@intrinsic
def _bit_length(typingctx, x):  # type: ignore[no-untyped-def]
    """64 minus the leading zeros of x (0 for 0): llvm.ctlz, one instruction (lzcnt)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        lz = builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))
        return builder.sub(ir.Constant(ir.IntType(64), 64), lz)

    return sig, codegen


@intrinsic
def _lowest_bit(typingctx, x):  # type: ignore[no-untyped-def]
    """The index of x's lowest set bit (x != 0): llvm.cttz, one instruction (tzcnt)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return sig, codegen


@njit(cache=True, _nrt=False)
def push(qt, qd, qn, qm, t, d):  # type: ignore[no-untyped-def]
    """Queue event d at time t (t >= the time last popped)."""
    node = qm[FREE]
    if node < 0 or t < qm[LAST]:
        qm[SIZE] = ERROR
        return
    qm[FREE] = qn[node]
    qt[node] = t
    qd[node] = d
    qn[node] = -1
    b = _bit_length(t ^ qm[LAST])
    if qm[HEAD + b] < 0:
        qm[HEAD + b] = node
        qm[MASK] |= np.int64(1) << b
    else:
        qn[qm[TAIL + b]] = node
    qm[TAIL + b] = node
    qm[SIZE] += 1


@njit(cache=True, _nrt=False)
def pop(qt, qd, qn, qm):  # type: ignore[no-untyped-def]
    """(time, payload) of the first event; the queue must not be empty."""
    h = qm[HEAD]
    if h < 0:
        # bucket 0 is empty: the lowest non-empty bucket's earliest time becomes `last`
        mask = qm[MASK]
        b = _lowest_bit(mask & ~np.int64(1))
        node = qm[HEAD + b]
        m = qt[node]
        node = qn[node]
        while node >= 0:
            if qt[node] < m:
                m = qt[node]
            node = qn[node]
        qm[LAST] = m
        mask &= ~(np.int64(1) << b)
        node = qm[HEAD + b]
        qm[HEAD + b] = -1
        while node >= 0:
            nxt = qn[node]
            qn[node] = -1
            nb = _bit_length(qt[node] ^ m)
            if qm[HEAD + nb] < 0:
                qm[HEAD + nb] = node
                mask |= np.int64(1) << nb
            else:
                qn[qm[TAIL + nb]] = node
            qm[TAIL + nb] = node
            node = nxt
        qm[MASK] = mask
        h = qm[HEAD]
    nxt = qn[h]
    qm[HEAD] = nxt
    qn[h] = qm[FREE]
    qm[FREE] = h
    qm[SIZE] -= 1
    return qt[h], qd[h]
