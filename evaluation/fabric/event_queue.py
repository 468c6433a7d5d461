"""The fabric kernel's event queue: a timing wheel for the near future, buckets beyond it.

Events pop by time, then in push order among equal times (ns-3's rule: Scheduler::EventKey
orders by time, then by the event's uid, its insertion count). The queue is monotone: no event
is pushed earlier than the last one popped, which a simulator's clock guarantees.

- **The wheel**: slot s holds the events of [s * 2^SLOT_BITS, (s + 1) * 2^SLOT_BITS) ps, for
  the slots from the current one up to LIMIT (at most WHEEL, 33.5 us), each a list sorted by
  time, equal times in push order (a push appends after the last event not later than it:
  almost always the tail). A bit per slot says which are non-empty, so a pop finds the next one
  with a count of trailing zeros. A slot (4.1 ns) is a two-hundredth of a 10 Gb/s frame's
  serialization: one or two events.
- **The buckets**, beyond LIMIT: bucket b holds the events of slots [b * HALF, (b + 1) * HALF)
  (16.8 us each, BUCKETS of them: 68.7 ms) unsorted, in push order. When the current slot comes
  within HALF of LIMIT, the next bucket's events move into their slots, in push order, and
  LIMIT moves on by HALF: no push could reach those slots before, so (time, push) order holds.
- **The far list**, beyond the buckets (none in the fabric's runs): unsorted, in push order,
  its earliest time kept; its events move into the bucket that comes within reach, the same way.

Why two levels: the wheel's slots are touched in time order, so a larger wheel streams more
memory through the cache every time it turns (measured on the 128-node run: a 4 MiB wheel
1.6x slower, the 1 MiB wheel of 134 us with a list beyond it ~6-10 % slower than this 256 KB
one, whose list was scanned whole whenever its earliest event came within reach: at 33.5 us
that was one node visit per two events). A wheel of 16.8 us was slower again (20 %, measured).

The queue pops exactly what a binary heap keyed by (time, push count) pops
(`tests/test_fabric_event_queue.py`; the kernel's 45 reference runs were recorded with that
heap, which the kernel had before this queue, and a radix heap between the two). Everything is
in one preallocated int64 array (the kernel allocates nothing), so that a call passes one array
(numba passes an array as seven words: four arrays cost 28 pushes per call, about 7 % of the
loop's profile samples) and an event's time, payload and next node lie together (one line: the
array starts on one; three arrays cost three lines per pop): per wheel slot its head, tail and
the tail's time side by side (a push decides where it goes without reading the tail's node), the
slots' bits, per bucket its head and tail, the far list's head, tail and earliest time, the
current slot, the time last popped, the free list, the size (ERROR once a push was refused: the
queue full, or an event earlier than the last one popped), the first owned row and LIMIT, then
the nodes, NODE words each, then the owned rows. A node is named by its offset in the array. An
owned row (ROW words, a packet's in the kernel) is its owner's node: the owner queues it
(`push_owned`) instead of taking a node from the free list, so popping its event reads the
owner's line and no other; pop gives it back to no list. The array starts on a cache line (a
view into a slightly larger allocation, as numpy's start 16 bytes into one), so no node or row
straddles two.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation.fabric.bits import lowest_bit, prefetch

SLOT_BITS = 12  # a wheel slot: 4.1 ns
WHEEL_BITS = 13
WHEEL = 1 << WHEEL_BITS  # slots: 33.5 us
HALF_BITS = WHEEL_BITS - 1
HALF = 1 << HALF_BITS  # a bucket: half the wheel's slots (16.8 us)
BUCKET_BITS = 12
BUCKETS = 1 << BUCKET_BITS  # buckets: 68.7 ms beyond the wheel
INF = np.int64(1 << 62)
SLOT = 4  # words per wheel slot: its first node (-1 when empty), last node, last node's time
W_HEAD, W_TAIL, W_TAIL_T = 0, 1, 2  # q[SLOT * i + W_*]: slot i's
W_BITS = SLOT * WHEEL  # WHEEL // 64 words: bit i set iff slot i is non-empty
B_HEAD = W_BITS + WHEEL // 64  # q[B_HEAD + 2 * b], q[B_HEAD + 2 * b + 1]: bucket b's first, last
F_HEAD = B_HEAD + 2 * BUCKETS  # the far list (events beyond the buckets, in push order)
F_TAIL = F_HEAD + 1
F_MIN = F_HEAD + 2  # its earliest time, INF when empty
CUR = F_HEAD + 3  # the wheel's first slot (absolute: time >> SLOT_BITS)
NOW = F_HEAD + 4  # the time last popped
FREE = F_HEAD + 5  # the first free node, -1 when none
SIZE = F_HEAD + 6  # events queued, or ERROR once a push was refused
OWNED = F_HEAD + 7  # the first owned node (the owners' rows): pop does not free those
LIMIT = F_HEAD + 8  # the first slot (absolute) not in the wheel: a multiple of HALF
META = F_HEAD + 16  # a multiple of ROW: nodes start on a cache line of the array
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
    q[B_HEAD:F_HEAD] = -1
    q[F_HEAD] = q[F_TAIL] = -1
    q[F_MIN] = INF
    q[LIMIT] = WHEEL
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


@njit(cache=True, _nrt=False, inline="always")
def _append(q, head, node):  # type: ignore[no-untyped-def]
    """Node to the back of the list whose first and last node are q[head], q[head + 1]."""
    q[node + N_NEXT] = -1
    if q[head] < 0:
        q[head] = node
    else:
        q[q[head + 1] + N_NEXT] = node
    q[head + 1] = node


@njit(cache=True, _nrt=False)
def _far_add(q, node, t):  # type: ignore[no-untyped-def]
    """Beyond the wheel: to the back of its bucket, or beyond the buckets of the far list."""
    b = t >> (SLOT_BITS + HALF_BITS)
    if b - (q[LIMIT] >> HALF_BITS) < BUCKETS:
        _append(q, B_HEAD + 2 * (b & (BUCKETS - 1)), node)
    else:
        _append(q, F_HEAD, node)
        if t < q[F_MIN]:
            q[F_MIN] = t


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
    if (t >> SLOT_BITS) < q[LIMIT]:
        _wheel_add(q, node, t)
    else:
        _far_add(q, node, t)  # (a timer further ahead: DCQCN's rate increase, a sample)


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
def _extend(q):  # type: ignore[no-untyped-def]
    """The wheel takes the next HALF slots: the first bucket's events move into their slots in
    push order, before any push can reach those slots, so (time, push) order holds; then the far
    events of the bucket that the buckets' reach now includes move into it, the same way."""
    head = B_HEAD + 2 * ((q[LIMIT] >> HALF_BITS) & (BUCKETS - 1))
    x = q[head]
    q[head] = q[head + 1] = -1
    while x >= 0:
        nxt = q[x + N_NEXT]
        _wheel_add(q, x, q[x + N_TIME])
        x = nxt
    q[LIMIT] += HALF
    if (q[F_MIN] >> (SLOT_BITS + HALF_BITS)) - (q[LIMIT] >> HALF_BITS) < BUCKETS:
        prev = -1
        x = q[F_HEAD]
        m = INF
        while x >= 0:
            nxt = q[x + N_NEXT]
            t = q[x + N_TIME]
            if (t >> (SLOT_BITS + HALF_BITS)) - (q[LIMIT] >> HALF_BITS) < BUCKETS:
                if prev < 0:
                    q[F_HEAD] = nxt
                else:
                    q[prev + N_NEXT] = nxt
                if nxt < 0:
                    q[F_TAIL] = prev
                _append(q, B_HEAD + 2 * ((t >> (SLOT_BITS + HALF_BITS)) & (BUCKETS - 1)), x)
            else:
                if t < m:
                    m = t
                prev = x
            x = nxt
        q[F_MIN] = m


@njit(cache=True, _nrt=False)
def _advance(q, cur):  # type: ignore[no-untyped-def]
    """The wheel's first busy slot from `cur` on (absolute), made current: at least HALF slots
    of the wheel lie ahead of it (the wheel extended as needed); the queue must not be empty."""
    nxt = _next_slot(q, cur)
    while nxt < 0:  # nothing left in the wheel: the next HALF slots come in, busy or not
        cur = q[LIMIT]
        _extend(q)
        nxt = _next_slot(q, cur)
    while q[LIMIT] - nxt < HALF:
        _extend(q)
    q[CUR] = nxt
    return nxt


@njit(cache=True, _nrt=False, inline="always")
def pop(q):  # type: ignore[no-untyped-def]
    """(time, payload) of the first event; the queue must not be empty. Inlined: the kernel
    calls it from one place, and a call would pass the array as seven words."""
    cur = q[CUR]
    h = q[W_HEAD + SLOT * (cur & (WHEEL - 1))]
    if h < 0:
        cur = _advance(q, cur)
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
