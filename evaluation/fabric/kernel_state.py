"""The event kernel's working arrays, allocated here (in Python) rather than in the kernel: the
kernel then needs no numba runtime (`_nrt=False`), so none of its array reads pays for
reference counting (an atomic increment and decrement that numba emitted for every array passed
to an inlined helper: a third of the event loop's time, measured, issue 22)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from evaluation.fabric.event_queue import new_queue
from evaluation.fabric.kernel_io import Background, Flows, Limits, Nic, Topology

I64 = np.int64

# A flow's row of `State.fl`: the Flows fields the event loop reads, then the sender's (HPCC's
# RdmaQueuePair: go-back-N, pacing, DCQCN mlx) and the receiver's (RdmaRxQueuePair) state, the
# fields every packet reads first. One table rather than an array per field: the loop keeps one
# base pointer and a row offset per flow, where an array per field cost a reload of its pointer
# and length and a negative-index fixup at every access (measured: 1.2x the whole loop), and a
# flow's fields share cache lines.
FLOW_COLUMNS: dict[str, int | None] = {
    # column: initial value, or None for the Flows field of that name
    "plen": None,
    "rplen": None,
    "npk": None,
    "job": None,
    "step": None,
    "snd_next": 0,
    "snd_una": 0,
    "rcv_exp": 0,
    "qp_done": 0,  # all ACKed: QpComplete cancelled the timers
    "snd_sched": 0,  # a QP_READY is pending or the flow is ready
    "next_avail": 0,  # m_nextAvail
    "cls": 0,  # PQ: the flow's class, fixed at its start
    "src": None,
    "win": None,
    "slot_row": None,
    "sig": None,
    "psn0": None,
    "start": None,
    "wait": None,  # predecessors not yet delivered (Flows.npred)
    "rto_mark": -1,
    "rto_armed": 0,
    "alpha_next": -1,  # next UpdateAlphaMlx; -1: before the 1st CNP
    "alpha_flag": 0,  # m_alpha_cnp_arrived
    "dec_flag": 0,  # m_decrease_cnp_arrived
    "dec_next": -1,  # the CheckRateDecreaseMlx grid
    "dec_pending": 0,
    "stage": 0,  # m_rpTimeStage
    "next_inc": -1,  # RP timer; -1: not running
    "rpt_evt": -1,  # time of its pending event (at most one)
    "fly_max": 0,  # for cc_trace
    "nack_last": -1,
    "nack_timer": 0,
    "last_cnp": -(1 << 60),
}
(
    FL_PLEN,
    FL_RPLEN,
    FL_NPK,
    FL_JOB,
    FL_STEP,
    FL_SND_NEXT,
    FL_SND_UNA,
    FL_RCV_EXP,
    FL_QP_DONE,
    FL_SND_SCHED,
    FL_NEXT_AVAIL,
    FL_CLS,
    FL_SRC,
    FL_WIN,
    FL_SLOT_ROW,
    FL_SIG,
    FL_PSN0,
    FL_START,
    FL_WAIT,
    FL_RTO_MARK,
    FL_RTO_ARMED,
    FL_ALPHA_NEXT,
    FL_ALPHA_FLAG,
    FL_DEC_FLAG,
    FL_DEC_NEXT,
    FL_DEC_PENDING,
    FL_STAGE,
    FL_NEXT_INC,
    FL_RPT_EVT,
    FL_FLY_MAX,
    FL_NACK_LAST,
    FL_NACK_TIMER,
    FL_LAST_CNP,
) = range(len(FLOW_COLUMNS))
# each column's constant is its name's (the kernel's numba code reads them as constants)
assert all(globals()[f"FL_{name.upper()}"] == i for i, name in enumerate(FLOW_COLUMNS))
FR_RC, FR_RT, FR_ALPHA = range(3)
# A packet's row of `State.pkt` (64 bytes: one cache line), for the same reasons
PK_FLOW, PK_KIND, PK_IDX, PK_HOP = range(4)  # PK_IDX: data: PSN index; ACK/NACK: next expected
PK_CE = 4  # data: CE; ACK/NACK: the CNP flag
PK_PRIO = 5
PK_IN = 6  # ingress link (upstream egress port), -1 none
PK_NEXT = 7  # FIFO link
PK_COLUMNS = 8  # `State.fr`: m_rate, m_targetRate, alpha (float64)


class State(NamedTuple):
    flows_tab: np.ndarray  # [unit, Flows.slot_row] Symphony's flow_base register
    q: np.ndarray  # the event queue (event_queue.new_queue)
    # the packet pool, a row per packet (PK_* columns): data (kind 0, flow -1 for background),
    # ACK (1), NACK (2)
    pkt: np.ndarray
    free: np.ndarray  # free packets (a stack)
    in_use: np.ndarray  # scratch for the count of packets left at the end
    # ports: FIFOs per class (0, 1 data, 2 control), bytes per class, transmitter
    ack_ser: np.ndarray
    q_head: np.ndarray
    q_tail: np.ndarray
    q_len: np.ndarray
    q_bytes: np.ndarray
    busy: np.ndarray
    pending: np.ndarray
    # PFC: per switch bytes held; per link and priority bytes held downstream, XOFF sent,
    # bytes since, upstream paused
    sw_free: np.ndarray  # topo.sw_free0 in bytes
    sw_used: np.ndarray
    ing: np.ndarray
    xoff: np.ndarray
    after_xoff: np.ndarray
    paused: np.ndarray
    paused_since: np.ndarray
    # NICs: the ACK queue and a ring of flows whose pacing timer has fired
    a_head: np.ndarray
    a_tail: np.ndarray
    a_len: np.ndarray
    rq_buf: np.ndarray
    rq_head: np.ndarray
    rq_len: np.ndarray
    # per flow, one row each (FL_* columns: its inputs the loop reads, then its sender's and
    # receiver's state; FR_*: the sender's rates)
    fl: np.ndarray
    fr: np.ndarray
    # jobs
    active: np.ndarray  # [job, step] flows in flight
    distinct: np.ndarray
    left: np.ndarray
    rx_acc: np.ndarray


def flow_rows(flows: Flows, nic: Nic) -> np.ndarray:
    """`State.fl`: one row per flow, FLOW_COLUMNS' columns."""
    nf = flows.src.shape[0]
    rows = np.empty((nf, len(FLOW_COLUMNS)), dtype=I64)
    for col, (name, init) in enumerate(FLOW_COLUMNS.items()):
        field = "npred" if name == "wait" else name
        rows[:, col] = getattr(flows, field) if init is None else init
    return rows


def flow_rates(nf: int, nic: Nic) -> np.ndarray:
    """`State.fr`: per flow m_rate and m_targetRate at line rate, alpha 1."""
    rates = np.empty((nf, 3), dtype=np.float64)
    rates[:, FR_RC] = rates[:, FR_RT] = nic.line_gbps
    rates[:, FR_ALPHA] = 1.0
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
    queue_cap = pool + 8 * nf + 12 * n_ports + bg.port.shape[0] + 1024
    per_host = np.bincount(flows.src, minlength=n_hosts)
    rq_cap = int(per_host.max(initial=0)) + 2  # a host's flows can all be ready at once

    def zeros(*shape: int) -> np.ndarray:
        return np.zeros(shape, dtype=I64)

    def full(value: int, *shape: int) -> np.ndarray:
        return np.full(shape, value, dtype=I64)

    return State(
        flows_tab=zeros(n_units, int(flows.slot_row.max(initial=0)) + 1),
        q=new_queue(queue_cap),
        pkt=zeros(pool, PK_COLUMNS),
        free=np.arange(pool - 1, -1, -1, dtype=I64),
        in_use=np.ones(pool, dtype=np.bool_),
        ack_ser=topo.port_ser * nic.ack_bytes // nic.mtu,
        q_head=full(-1, n_ports, 3),
        q_tail=full(-1, n_ports, 3),
        q_len=zeros(n_ports, 3),
        q_bytes=zeros(n_ports, 3),
        busy=zeros(n_ports),
        pending=zeros(n_ports),
        sw_free=topo.sw_free0 * nic.mtu,
        sw_used=zeros(topo.n_switches),
        ing=zeros(n_ports, 2),
        xoff=zeros(n_ports, 2),
        after_xoff=zeros(n_ports, 2),
        paused=zeros(n_ports, 2),
        paused_since=zeros(n_ports),
        a_head=full(-1, n_hosts, 1),
        a_tail=full(-1, n_hosts, 1),
        a_len=zeros(n_hosts, 1),
        rq_buf=zeros(n_hosts, rq_cap),
        rq_head=zeros(n_hosts),
        rq_len=zeros(n_hosts),
        fl=flow_rows(flows, nic),
        fr=flow_rates(nf, nic),
        active=zeros(n_jobs + 1, flows.n_steps),
        distinct=zeros(n_jobs + 1),
        left=zeros(n_jobs + 1),
        rx_acc=zeros(n_jobs + 1),
    )
