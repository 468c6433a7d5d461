"""The fabric kernel's event queue: a timing wheel for the near future, a list beyond it.

Events pop by time, then in push order among equal times (ns-3's rule: Scheduler::EventKey
orders by time, then by the event's uid, its insertion count). The queue is monotone: no event
is pushed earlier than the last one popped, which a simulator's clock guarantees.

- **The wheel**: slot s holds the events of [s * 2^SLOT_BITS, (s + 1) * 2^SLOT_BITS) ps, for
  the WHEEL slots from the current one on (134 us), each a list sorted by time, equal times in
  push order (a push appends after the last event not later than it: almost always the tail).
  A bit per slot says which are non-empty, so a pop finds the next one with a count of trailing
  zeros. A slot (16.4 ns) is a fiftieth of a 10 Gb/s frame's serialization: one or two events.
- **The far list**, beyond the wheel (the few timers further ahead: samples, RTOs): unsorted,
  in push order, with its earliest time kept. When the wheel's first slot moves on past that
  time's slot - WHEEL, the far events of the slots that entered the wheel move into them, in
  push order, before any push can reach those slots, so (time, push) order holds.

The queue pops exactly what a binary heap keyed by (time, push count) pops
(`tests/test_fabric_event_queue.py`; the kernel's 45 reference runs were recorded with that
heap, which the kernel had before this queue, and a radix heap between the two). Everything is
in four preallocated arrays (the kernel allocates nothing): per event node its time, payload
and next node; `qm` the wheel's heads, tails and bits, the far list's head, tail and earliest
time, the current slot, the time last popped, the free list and the size (ERROR once a push
was refused: the queue full, or an event earlier than the last one popped).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

SLOT_BITS = 14  # a wheel slot: 16.4 ns
WHEEL_BITS = 13
WHEEL = 1 << WHEEL_BITS  # slots: 134 us ahead
INF = np.int64(1 << 62)
W_HEAD = 0  # qm[W_HEAD + i]: wheel slot i's first node, -1 when empty
W_TAIL = WHEEL
W_BITS = 2 * WHEEL  # WHEEL // 64 words: bit i set iff slot i is non-empty
F_HEAD = W_BITS + WHEEL // 64  # the far list (events beyond the wheel, in push order)
F_TAIL = F_HEAD + 1
F_MIN = F_HEAD + 2  # its earliest time, INF when empty
CUR = F_HEAD + 3  # the wheel's first slot (absolute: time >> SLOT_BITS)
NOW = F_HEAD + 4  # the time last popped
FREE = F_HEAD + 5  # the first free node, -1 when none
SIZE = F_HEAD + 6  # events queued, or ERROR once a push was refused
META = F_HEAD + 7
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
    qm[W_BITS:F_HEAD] = 0
    qm[F_MIN] = INF
    qm[CUR:META] = 0
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
def _wheel_add(qt, qn, qm, node, t):  # type: ignore[no-untyped-def]
    """Into its slot after every event not later than it."""
    i = (t >> SLOT_BITS) & (WHEEL - 1)
    tail = qm[W_TAIL + i]
    qn[node] = -1
    if tail < 0:
        qm[W_HEAD + i] = node
        qm[W_TAIL + i] = node
        qm[W_BITS + (i >> 6)] |= np.int64(1) << (i & 63)
    elif qt[tail] <= t:
        qn[tail] = node
        qm[W_TAIL + i] = node
    else:
        prev = -1
        x = qm[W_HEAD + i]
        while qt[x] <= t:
            prev = x
            x = qn[x]
        qn[node] = x
        if prev < 0:
            qm[W_HEAD + i] = node
        else:
            qn[prev] = node


@njit(cache=True, _nrt=False)
def push(qt, qd, qn, qm, t, d):  # type: ignore[no-untyped-def]
    """Queue event d at time t (t >= the time last popped)."""
    node = qm[FREE]
    if node < 0 or t < qm[NOW]:
        qm[SIZE] = ERROR
        return
    qm[FREE] = qn[node]
    qt[node] = t
    qd[node] = d
    qm[SIZE] += 1
    if (t >> SLOT_BITS) - qm[CUR] < WHEEL:
        _wheel_add(qt, qn, qm, node, t)
    else:
        # beyond the wheel (rare: timers far ahead): appended to the far list, in push order
        qn[node] = -1
        if qm[F_HEAD] < 0:
            qm[F_HEAD] = node
        else:
            qn[qm[F_TAIL]] = node
        qm[F_TAIL] = node
        if t < qm[F_MIN]:
            qm[F_MIN] = t


@njit(cache=True, _nrt=False)
def _next_slot(qm, cur):  # type: ignore[no-untyped-def]
    """The first non-empty wheel slot from `cur` on (absolute), or -1 if the wheel is empty."""
    i = cur & (WHEEL - 1)
    w = i >> 6
    bits = qm[W_BITS + w] & (np.int64(-1) << (i & 63))
    for _k in range(WHEEL // 64 + 1):
        if bits != 0:
            j = (w << 6) + _lowest_bit(bits)
            return cur + ((j - i) & (WHEEL - 1))
        w = (w + 1) & (WHEEL // 64 - 1)
        bits = qm[W_BITS + w]
    return -1


@njit(cache=True, _nrt=False)
def _enter(qt, qn, qm, cur):  # type: ignore[no-untyped-def]
    """Move the far events of the slots that entered the wheel (now first at `cur`) into them,
    in push order: those slots hold no event yet, so (time, push) order holds."""
    prev = -1
    x = qm[F_HEAD]
    m = INF
    while x >= 0:
        nxt = qn[x]
        if (qt[x] >> SLOT_BITS) - cur < WHEEL:
            if prev < 0:
                qm[F_HEAD] = nxt
            else:
                qn[prev] = nxt
            if nxt < 0:
                qm[F_TAIL] = prev
            _wheel_add(qt, qn, qm, x, qt[x])
        else:
            if qt[x] < m:
                m = qt[x]
            prev = x
        x = nxt
    qm[F_MIN] = m


@njit(cache=True, _nrt=False)
def has(qt, qm, t):  # type: ignore[no-untyped-def]
    """An event at t (the time last popped) is queued: the current slot's first event is at t.
    If not, an event pushed now for t would be the next one popped, so the kernel runs it in
    place instead (the same run, one push and pop fewer). The kernel calls this only once the
    event's time is known to be t, which keeps a numba call (seven words per array passed) off
    most ACKs' path; a variant that always called was not measurably different within this
    machine's +-10 % run-to-run noise, and was not kept."""
    h = qm[W_HEAD + (qm[CUR] & (WHEEL - 1))]
    return h >= 0 and qt[h] == t


@njit(cache=True, _nrt=False)
def pop(qt, qd, qn, qm):  # type: ignore[no-untyped-def]
    """(time, payload) of the first event; the queue must not be empty."""
    cur = qm[CUR]
    h = qm[W_HEAD + (cur & (WHEEL - 1))]
    if h < 0:
        nxt = _next_slot(qm, cur)
        if nxt < 0:  # the wheel is empty: on to the far queue's first slot
            nxt = qm[F_MIN] >> SLOT_BITS
        cur = nxt
        qm[CUR] = cur
        if (qm[F_MIN] >> SLOT_BITS) - cur < WHEEL:
            _enter(qt, qn, qm, cur)
        h = qm[W_HEAD + (cur & (WHEEL - 1))]
    i = cur & (WHEEL - 1)
    nxt = qn[h]
    qm[W_HEAD + i] = nxt
    if nxt < 0:
        qm[W_TAIL + i] = -1
        qm[W_BITS + (i >> 6)] &= ~(np.int64(1) << (i & 63))
    qn[h] = qm[FREE]
    qm[FREE] = h
    qm[SIZE] -= 1
    qm[NOW] = qt[h]
    return qt[h], qd[h]
