"""The event kernel's working arrays, allocated here (in Python) rather than in the kernel: the
kernel then needs no numba runtime (`_nrt=False`), so none of its array reads pays for
reference counting (an atomic increment and decrement that numba emitted for every array passed
to an inlined helper: a third of the event loop's time, measured, issue 22)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from evaluation.fabric.event_queue import N_DATA, N_NEXT, N_TIME, ROW, new_queue, rows
from evaluation.fabric.kernel_io import Background, Flows, Limits, Nic, Topology
from evaluation.fabric.topology import MAX_HOPS

I64 = np.int64

# A flow's row of `State.fl`: the Flows fields the event loop reads (its paths among them), then
# the sender's (HPCC's RdmaQueuePair: go-back-N, pacing, DCQCN mlx) and the receiver's
# (RdmaRxQueuePair) state. One table rather than an array per field: the loop keeps one base
# pointer and a row offset per flow, where an array per field cost a reload of its pointer and
# length and a negative-index fixup at every access (measured: 4-7 % of the loop for the
# baseline, 2-4 % with Symphony). The columns are grouped by what reads them, a group per cache
# line (rows of 8 lines' worth of words, the table starting on a line): a data packet at a switch
# reads line 0 and its path's line, an ACK at a switch its reverse path's line, the sender's ACK
# handling and the NIC line 3, the receiver line 4, DCQCN's timers line 5.
FLOW_COLUMNS: dict[str, int | None] = {
    # column: initial value, or None for the Flows field of that name (MAX_HOPS columns for
    # "path" and "rpath")
    # line 0: a data packet at a switch (Symphony's inputs)
    "plen": None,
    "npk": None,
    "job": None,
    "step": None,
    "cls": 0,  # PQ: the flow's class, fixed at its start
    "slot_row": None,
    "sig": None,
    "psn0": None,
    # line 1: the data path's egress ports, NIC first; line 2: the ACKs' and its length
    "path": None,
    "src": None,
    "win": None,
    "rpath": None,
    "rplen": None,
    "wait": None,  # predecessors not yet delivered (Flows.npred)
    # line 3: the sender (an ACK's arrival, the NIC)
    "snd_next": 0,
    "snd_una": 0,
    "qp_done": 0,  # all ACKed: QpComplete cancelled the timers
    # 0: waits for an ACK (window-bound) or has nothing left to send; 1: its QP_READY (the
    # time its rate lets it send) is pending; 2: available (m_nextAvail <= now)
    "snd_sched": 0,
    "next_avail": 0,  # m_nextAvail
    "fly_max": 0,  # for cc_trace
    "rto_mark": -1,
    "rto_armed": 0,
    # line 4: the receiver, and the flow's start
    "rcv_exp": 0,
    "nack_last": -1,
    "nack_timer": 0,
    "last_cnp": -(1 << 60),
    "start": None,
    "stage": 0,  # m_rpTimeStage
    "next_inc": -1,  # RP timer; -1: not running
    "rpt_evt": -1,  # time of its pending event (at most one)
    # line 5: DCQCN's other timers
    "alpha_next": -1,  # next UpdateAlphaMlx; -1: before the 1st CNP
    "alpha_flag": 0,  # m_alpha_cnp_arrived
    "dec_flag": 0,  # m_decrease_cnp_arrived
    "dec_next": -1,  # the CheckRateDecreaseMlx grid
    "dec_pending": 0,
    "bc_events": 0,  # dcqcn-paper: byte-counter events since the cut
    "bc_bytes": 0,  # dcqcn-paper: bytes sent since the last byte-counter event
    "delay": None,  # a compute node (no packets): its duration (Flows.delay)
}
WIDTH = {"path": MAX_HOPS, "rpath": MAX_HOPS}
FL_PLEN, FL_NPK, FL_JOB, FL_STEP, FL_CLS, FL_SLOT_ROW, FL_SIG, FL_PSN0 = range(8)
FL_PATH = 8  # MAX_HOPS columns
FL_SRC, FL_WIN = 14, 15
FL_RPATH = 16  # MAX_HOPS columns
FL_RPLEN, FL_WAIT = 22, 23
(
    FL_SND_NEXT,
    FL_SND_UNA,
    FL_QP_DONE,
    FL_SND_SCHED,
    FL_NEXT_AVAIL,
    FL_FLY_MAX,
    FL_RTO_MARK,
    FL_RTO_ARMED,
) = range(24, 32)
(
    FL_RCV_EXP,
    FL_NACK_LAST,
    FL_NACK_TIMER,
    FL_LAST_CNP,
    FL_START,
    FL_STAGE,
    FL_NEXT_INC,
    FL_RPT_EVT,
) = range(32, 40)
FL_ALPHA_NEXT, FL_ALPHA_FLAG, FL_DEC_FLAG, FL_DEC_NEXT, FL_DEC_PENDING = range(40, 45)
FL_BC_EVENTS, FL_BC_BYTES, FL_DELAY = 45, 46, 47
FL_COLUMNS = 48  # whole cache lines


def _column_offsets() -> dict[str, int]:
    offsets, col = {}, 0
    for name in FLOW_COLUMNS:
        offsets[name] = col
        col += WIDTH.get(name, 1)
    assert (col + 7) // 8 * 8 == FL_COLUMNS
    return offsets


# each column's constant is its offset in FLOW_COLUMNS' order (the kernel's numba code reads the
# constants): a column added, moved or widened fails here
assert all(globals()[f"FL_{name.upper()}"] == i for name, i in _column_offsets().items())
FR_RC, FR_RT, FR_ALPHA = range(3)  # `State.fr`: m_rate, m_targetRate, alpha (float64)
# A packet's row of `State.pkt` (64 bytes), for the same reasons. The rows are the event queue's
# owned rows (`event_queue.rows`): a packet on a wire is queued as its own ARRIVE event, in its
# row's first three words (time, the event's payload, the queue's link), so popping that event
# reads the packet's line and no other node. A packet is on a wire or in a FIFO, never both, so
# the FIFO's link is the queue's word, and its flow is read off the payload (`kernel._flow`).
PK_TIME, PK_DATA, PK_NEXT = N_TIME, N_DATA, N_NEXT  # PK_NEXT: the FIFO's link off the wire
PK_KIND, PK_IDX, PK_HOP = 3, 4, 5  # PK_IDX: data: PSN index; ACK/NACK: next expected
PK_CE = 6  # data: CE; ACK/NACK: the CNP flag
PK_IN = 7  # ingress link (upstream egress port), -1 none
PK_COLUMNS = ROW
# A port's row of `State.pt` (the first eight columns: what every hop reads)
PT_BUSY = 0  # the transmitter is busy until
PT_PENDING = 1  # a TXDONE event is queued
PT_Q_LEN = 2  # 3 columns: packets per class
PT_Q_BYTES = 5  # 3: bytes per class
PT_SER = 8  # serialisation time of an MTU packet (topo.port_ser)
PT_ACK_SER = 9  # of an ACK
PT_SWITCH = 10  # the switch owning the port, -1 for a NIC (topo.port_switch)
PT_Q_HEAD = 12  # 3: first packet per class
PT_Q_TAIL = 15  # 3: last packet per class
PT_PAUSED = 18  # 2 per priority: PAUSEd by the downstream end
PT_ING = 20  # 2: bytes held downstream that arrived through this port
PT_XOFF = 22  # 2: the downstream end sent XOFF
PT_AFTER_XOFF = 24  # 2: bytes since
PT_PAUSED_SINCE = 26
PT_A_HEAD, PT_A_TAIL, PT_A_LEN = 27, 28, 29  # a NIC's ACK queue
# a NIC's QP group (State.qp_group): its size, its flows available now
PT_GRP_N, PT_GRP_AVAIL = 30, 31
PT_COLUMNS = 32


class State(NamedTuple):
    flows_tab: np.ndarray  # [unit, Flows.slot_row] Symphony's flow_base register
    q: np.ndarray  # the event queue (event_queue.new_queue)
    # the packet pool, a row per packet (PK_* columns; the queue's owned rows, a view of q):
    # data (kind 0, flow -1 for background), ACK (1), NACK (2)
    pkt: np.ndarray
    free: np.ndarray  # free packets (a stack)
    in_use: np.ndarray  # scratch for the count of packets left at the end
    # per port, a row (PT_* columns): its transmitter, its FIFOs per class (0, 1 data, 2
    # control) with their bytes, PFC (per priority: bytes held downstream, XOFF sent, bytes
    # since, upstream paused), and for a NIC (a host's port) its ACK queue and ready ring
    pt: np.ndarray
    sw_free: np.ndarray  # topo.sw_free0 in bytes
    sw_used: np.ndarray  # PFC: per switch bytes held
    # per host: its started flows in creation order, as HPCC's RdmaEgressQueue holds its QPs
    # (finished ones compacted as it does), the last one served in the last column
    qp_group: np.ndarray
    # per flow, one row each (FL_* columns: its inputs the loop reads, then its sender's and
    # receiver's state; FR_*: the sender's rates)
    fl: np.ndarray
    fr: np.ndarray
    # jobs
    active: np.ndarray  # [job, step] flows in flight
    distinct: np.ndarray
    left: np.ndarray
    rx_acc: np.ndarray


def aligned_zeros(*shape: int) -> np.ndarray:
    """Zeros (int64) starting on a cache line (numpy's allocations start 16 bytes into one)."""
    size = int(np.prod(shape))
    buf = np.zeros(size + 8, dtype=I64)
    start = (-buf.ctypes.data % 64) // 8
    return buf[start : start + size].reshape(shape)


def flow_rows(flows: Flows) -> np.ndarray:
    """`State.fl`: one row per flow, FLOW_COLUMNS' columns (FL_COLUMNS words), on cache lines."""
    nf = flows.src.shape[0]
    rows = aligned_zeros(nf, FL_COLUMNS)
    for (name, init), col in zip(FLOW_COLUMNS.items(), _column_offsets().values(), strict=True):
        cols = rows[:, col : col + WIDTH.get(name, 1)]
        field = "npred" if name == "wait" else name
        cols[:] = init if init is not None else np.reshape(getattr(flows, field), (nf, -1))
    return rows


def port_rows(topo: Topology, nic: Nic) -> np.ndarray:
    """`State.pt`: one row per port, PT_* columns, queues empty."""
    rows = np.zeros((topo.port_ser.shape[0], PT_COLUMNS), dtype=I64)
    rows[:, PT_SER] = topo.port_ser
    rows[:, PT_ACK_SER] = topo.port_ser * nic.ack_bytes // nic.mtu
    rows[:, PT_SWITCH] = topo.port_switch
    for col in (PT_Q_HEAD, PT_Q_TAIL):
        rows[:, col : col + 3] = -1
    rows[:, PT_A_HEAD] = rows[:, PT_A_TAIL] = -1
    return rows


def flow_rates(nf: int, nic: Nic) -> np.ndarray:
    """`State.fr`: per flow m_rate and m_targetRate at line rate, alpha its initial value."""
    rates = np.empty((nf, 3), dtype=np.float64)
    rates[:, FR_RC] = rates[:, FR_RT] = nic.line_gbps
    rates[:, FR_ALPHA] = nic.alpha_init
    return rates


def register_rows(slot: np.ndarray) -> np.ndarray:
    """Per flow, its row of the flow_base register table: the slots in use, numbered densely."""
    return np.unique(slot, return_inverse=True)[1].astype(I64).reshape(slot.shape)


def new_state(
    topo: Topology, flows: Flows, nic: Nic, bg: Background, lim: Limits, n_units: int
) -> State:
    """Fresh working arrays; `n_units`: Symphony's state units (Outputs.js rows)."""
    nf = flows.src.shape[0]
    n_ports = topo.port_ser.shape[0]
    n_hosts = topo.n_hosts
    n_jobs = flows.n_jobs
    pool = lim.pool_size
    # per flow at most its QP_READY, DEC, RPT, RTO and START; per port a TXDONE and PFC frames
    # (packets are queued in their own rows)
    queue_cap = 8 * nf + 12 * n_ports + bg.port.shape[0] + 1024
    q = new_queue(queue_cap, pool)
    per_host = np.bincount(flows.src, minlength=n_hosts)
    grp_cap = int(per_host.max(initial=0)) + 1  # a host's flows can all be in its group

    def zeros(*shape: int) -> np.ndarray:
        return np.zeros(shape, dtype=I64)

    return State(
        flows_tab=zeros(n_units, int(flows.slot_row.max(initial=0)) + 1),
        q=q,
        pkt=rows(q),
        free=np.arange(pool - 1, -1, -1, dtype=I64),
        in_use=np.ones(pool, dtype=np.bool_),
        pt=port_rows(topo, nic),
        sw_free=topo.sw_free0 * nic.mtu,
        sw_used=zeros(topo.n_switches),
        qp_group=zeros(n_hosts, grp_cap + 1),
        fl=flow_rows(flows),
        fr=flow_rates(nf, nic),
        active=zeros(n_jobs + 1, flows.n_steps),
        distinct=zeros(n_jobs + 1),
        left=zeros(n_jobs + 1),
        rx_acc=zeros(n_jobs + 1),
    )
