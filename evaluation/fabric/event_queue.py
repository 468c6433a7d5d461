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
in one preallocated int64 array (the kernel allocates nothing), so that a call passes one
array (numba passes an array as seven words: four arrays cost 28 pushes per call, about 7 % of
the loop's profile samples) and an event's time, payload and next node lie together (one line,
or two where numpy's 16-byte allocation offset splits a node; three arrays cost three lines per
pop): per wheel slot its head, tail and the tail's time side by side (a
push decides where it goes without reading the tail's node), the slots' bits, the far
list's head, tail and earliest time, the current slot, the time last popped, the free list and
the size (ERROR once a push was refused: the queue full, or an event earlier than the last one
popped), then the nodes, NODE words each, then the owned rows. A node is named by its offset in
the array. An owned row (ROW words, a packet's in the kernel) is its owner's node: the owner
queues it (`push_owned`) instead of taking a node from the free list, so popping its event reads
the owner's line and no other; pop gives it back to no list. The array starts on a cache line
(a view into a slightly larger allocation), so nodes and rows each lie within one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation.fabric.bits import lowest_bit, prefetch

SLOT_BITS = 12  # a wheel slot: 4.1 ns
WHEEL_BITS = 15
WHEEL = 1 << WHEEL_BITS  # slots: 134 us ahead
INF = np.int64(1 << 62)
SLOT = 4  # words per wheel slot: its first node (-1 when empty), last node, last node's time
W_HEAD, W_TAIL, W_TAIL_T = 0, 1, 2  # q[SLOT * i + W_*]: slot i's
W_BITS = SLOT * WHEEL  # WHEEL // 64 words: bit i set iff slot i is non-empty
F_HEAD = W_BITS + WHEEL // 64  # the far list (events beyond the wheel, in push order)
F_TAIL = F_HEAD + 1
F_MIN = F_HEAD + 2  # its earliest time, INF when empty
CUR = F_HEAD + 3  # the wheel's first slot (absolute: time >> SLOT_BITS)
NOW = F_HEAD + 4  # the time last popped
FREE = F_HEAD + 5  # the first free node, -1 when none
SIZE = F_HEAD + 6  # events queued, or ERROR once a push was refused
OWNED = F_HEAD + 7  # the first owned node (the owners' rows): pop does not free those
META = F_HEAD + 8  # a multiple of NODE: nodes start on a 32-byte boundary of the array
NODE = 4  # words per node: time, payload, next node (-1: none), unused
N_TIME, N_DATA, N_NEXT = 0, 1, 2
ROW = 8  # words per owned row: a node's three words, then the owner's
ERROR = -(1 << 62)
LINE = 64  # bytes: the array starts on a cache line, so do slots, nodes and rows


def new_queue(capacity: int, owned: int = 0) -> np.ndarray:
    """An empty queue for at most `capacity` events at once from its own nodes, and `owned`
    rows of ROW words after them (`rows`), each of which is its owner's node (`push_owned`)."""
    capacity += capacity & 1  # so that the owned rows start on a cache line too
    size = META + NODE * capacity + ROW * owned
    buf = np.zeros(size + LINE // 8, dtype=np.int64)
    start = (-buf.ctypes.data % LINE) // 8  # numpy's allocations start 16 bytes into a line
    q = buf[start : start + size]
    q[:W_BITS:SLOT] = -1
    q[W_TAIL:W_BITS:SLOT] = -1
    q[F_HEAD] = q[F_TAIL] = -1
    q[F_MIN] = INF
    nodes = META + NODE * np.arange(capacity, dtype=np.int64)
    q[nodes + N_NEXT] = nodes + NODE  # the free list, in order
    q[nodes[-1] + N_NEXT] = -1
    q[FREE] = META
    q[OWNED] = META + NODE * capacity
    return q


def rows(q: np.ndarray) -> np.ndarray:
    """The owned rows (`new_queue`'s `owned`), a view: row r is the node at
    q[OWNED] + ROW * r, its words N_TIME, N_DATA and N_NEXT the queue's while it is queued, the
    rest the owner's."""
    return q[q[OWNED] :].reshape(-1, ROW)


@njit(cache=True, _nrt=False)
def _wheel_add(q, node, t):  # type: ignore[no-untyped-def]
    """Into its slot after every event not later than it."""
    i = (t >> SLOT_BITS) & (WHEEL - 1)
    w = SLOT * i
    tail = q[w + W_TAIL]
    q[node + N_NEXT] = -1
    if tail < 0:
        q[w + W_HEAD] = node
        q[w + W_TAIL] = node
        q[w + W_TAIL_T] = t
        q[W_BITS + (i >> 6)] |= np.int64(1) << (i & 63)
    elif q[w + W_TAIL_T] <= t:  # the usual case, decided without reading the tail's node
        q[tail + N_NEXT] = node
        q[w + W_TAIL] = node
        q[w + W_TAIL_T] = t
    else:
        prev = -1
        x = q[w + W_HEAD]
        while q[x + N_TIME] <= t:
            prev = x
            x = q[x + N_NEXT]
        q[node + N_NEXT] = x
        if prev < 0:
            q[w + W_HEAD] = node
        else:
            q[prev + N_NEXT] = node


@njit(cache=True, _nrt=False)
def push(q, t, d):  # type: ignore[no-untyped-def]
    """Queue event d at time t (t >= the time last popped)."""
    node = q[FREE]
    if node < 0 or t < q[NOW]:
        q[SIZE] = ERROR
        return
    q[FREE] = q[node + N_NEXT]
    _place(q, node, t, d)


@njit(cache=True, _nrt=False)
def push_owned(q, node, t, d):  # type: ignore[no-untyped-def]
    """Queue event d at time t in an owned row's node (q[OWNED] + ROW * row; it must not be
    queued already): no node is taken from the free list, and pop gives none back to it."""
    if t < q[NOW]:
        q[SIZE] = ERROR
        return
    _place(q, node, t, d)


@njit(cache=True, _nrt=False, inline="always")
def _place(q, node, t, d):  # type: ignore[no-untyped-def]
    q[node + N_TIME] = t
    q[node + N_DATA] = d
    q[SIZE] += 1
    if (t >> SLOT_BITS) - q[CUR] < WHEEL:
        _wheel_add(q, node, t)
    else:
        # beyond the wheel (rare: timers far ahead): appended to the far list, in push order
        q[node + N_NEXT] = -1
        if q[F_HEAD] < 0:
            q[F_HEAD] = node
        else:
            q[q[F_TAIL] + N_NEXT] = node
        q[F_TAIL] = node
        if t < q[F_MIN]:
            q[F_MIN] = t


@njit(cache=True, _nrt=False)
def _next_slot(q, cur):  # type: ignore[no-untyped-def]
    """The first non-empty wheel slot from `cur` on (absolute), or -1 if the wheel is empty."""
    i = cur & (WHEEL - 1)
    w = i >> 6
    bits = q[W_BITS + w] & (np.int64(-1) << (i & 63))
    for _k in range(WHEEL // 64 + 1):
        if bits != 0:
            j = (w << 6) + lowest_bit(bits)
            return cur + ((j - i) & (WHEEL - 1))
        w = (w + 1) & (WHEEL // 64 - 1)
        bits = q[W_BITS + w]
    return -1


@njit(cache=True, _nrt=False)
def _enter(q, cur):  # type: ignore[no-untyped-def]
    """Move the far events of the slots that entered the wheel (now first at `cur`) into them,
    in push order: those slots hold no event yet, so (time, push) order holds."""
    prev = -1
    x = q[F_HEAD]
    m = INF
    while x >= 0:
        nxt = q[x + N_NEXT]
        t = q[x + N_TIME]
        if (t >> SLOT_BITS) - cur < WHEEL:
            if prev < 0:
                q[F_HEAD] = nxt
            else:
                q[prev + N_NEXT] = nxt
            if nxt < 0:
                q[F_TAIL] = prev
            _wheel_add(q, x, t)
        else:
            if t < m:
                m = t
            prev = x
        x = nxt
    q[F_MIN] = m


@njit(cache=True, _nrt=False, inline="always")
def has(q, t):  # type: ignore[no-untyped-def]
    """An event at t (the time last popped) is queued: the current slot's first event is at t.
    If not, an event pushed now for t would be the next one popped, so the kernel runs it in
    place instead (the same run, one push and pop fewer)."""
    h = q[W_HEAD + SLOT * (q[CUR] & (WHEEL - 1))]
    return h >= 0 and q[h + N_TIME] == t


@njit(cache=True, _nrt=False, inline="always")
def pop(q):  # type: ignore[no-untyped-def]
    """(time, payload) of the first event; the queue must not be empty. Inlined: the kernel
    calls it from one place, and a call would pass the array as seven words."""
    cur = q[CUR]
    h = q[W_HEAD + SLOT * (cur & (WHEEL - 1))]
    if h < 0:
        nxt = _next_slot(q, cur)
        if nxt < 0:  # the wheel is empty: on to the far queue's first slot
            nxt = q[F_MIN] >> SLOT_BITS
        cur = nxt
        q[CUR] = cur
        if (q[F_MIN] >> SLOT_BITS) - cur < WHEEL:
            _enter(q, cur)
        h = q[W_HEAD + SLOT * (cur & (WHEEL - 1))]
    i = cur & (WHEEL - 1)
    w = SLOT * i
    nxt = q[h + N_NEXT]
    q[w + W_HEAD] = nxt
    # The next event's node is fetched ahead (a hint: it pops next unless an earlier event
    # is pushed first): the next in this slot, else the first of the next busy slot of this
    # slot's word of bits (the next 262 ns)
    if nxt >= 0:
        prefetch(q, nxt)
    else:
        q[w + W_TAIL] = -1
        b = W_BITS + (i >> 6)
        q[b] &= ~(np.int64(1) << (i & 63))
        later = q[b] & (np.int64(-2) << (i & 63))
        if later != 0:
            prefetch(q, q[W_HEAD + SLOT * ((i & ~63) + lowest_bit(later))])
    t = q[h + N_TIME]
    if h < q[OWNED]:  # an owned row stays its owner's
        q[h + N_NEXT] = q[FREE]
        q[FREE] = h
    q[SIZE] -= 1
    q[NOW] = t
    return t, q[h + N_DATA]
