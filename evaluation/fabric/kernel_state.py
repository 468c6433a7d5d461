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


class State(NamedTuple):
    flows_tab: np.ndarray  # [unit, Flows.slot_row] Symphony's flow_base register
    q: np.ndarray  # the event queue (event_queue.new_queue)
    # packet pool: data (kind 0, flow -1 for background), ACK (1), NACK (2)
    pk_flow: np.ndarray
    pk_kind: np.ndarray
    pk_idx: np.ndarray  # data: PSN index; ACK/NACK: next expected
    pk_hop: np.ndarray
    pk_ce: np.ndarray  # data: CE; ACK/NACK: the CNP flag
    pk_prio: np.ndarray
    pk_in: np.ndarray  # ingress link (upstream egress port), -1 none
    pk_next: np.ndarray  # FIFO link
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
    # senders (RdmaQueuePair): go-back-N, pacing, DCQCN (mlx)
    snd_next: np.ndarray
    snd_una: np.ndarray
    snd_sched: np.ndarray  # a QP_READY is pending or the flow is ready
    next_avail: np.ndarray  # m_nextAvail
    qp_done: np.ndarray  # all ACKed: QpComplete cancelled the timers
    rto_mark: np.ndarray
    rto_armed: np.ndarray
    rc: np.ndarray  # m_rate
    rt: np.ndarray  # m_targetRate
    alpha: np.ndarray
    alpha_next: np.ndarray  # next UpdateAlphaMlx; -1: before the 1st CNP
    alpha_flag: np.ndarray  # m_alpha_cnp_arrived
    dec_flag: np.ndarray  # m_decrease_cnp_arrived
    dec_next: np.ndarray  # the CheckRateDecreaseMlx grid
    dec_pending: np.ndarray
    stage: np.ndarray  # m_rpTimeStage
    next_inc: np.ndarray  # RP timer; -1: not running
    rpt_evt: np.ndarray  # time of its pending event (at most one)
    f_cls: np.ndarray  # PQ: the flow's class, fixed at its start
    fly_max: np.ndarray  # for cc_trace
    # receivers (RdmaRxQueuePair)
    rcv_exp: np.ndarray
    nack_last: np.ndarray
    nack_timer: np.ndarray
    last_cnp: np.ndarray
    wait: np.ndarray  # predecessors not yet delivered
    # jobs
    active: np.ndarray  # [job, step] flows in flight
    distinct: np.ndarray
    left: np.ndarray
    rx_acc: np.ndarray


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
        pk_flow=zeros(pool),
        pk_kind=zeros(pool),
        pk_idx=zeros(pool),
        pk_hop=zeros(pool),
        pk_ce=zeros(pool),
        pk_prio=zeros(pool),
        pk_in=zeros(pool),
        pk_next=zeros(pool),
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
        snd_next=zeros(nf),
        snd_una=zeros(nf),
        snd_sched=zeros(nf),
        next_avail=zeros(nf),
        qp_done=zeros(nf),
        rto_mark=full(-1, nf),
        rto_armed=zeros(nf),
        rc=np.full(nf, nic.line_gbps, dtype=np.float64),
        rt=np.full(nf, nic.line_gbps, dtype=np.float64),
        alpha=np.ones(nf),
        alpha_next=full(-1, nf),
        alpha_flag=zeros(nf),
        dec_flag=zeros(nf),
        dec_next=full(-1, nf),
        dec_pending=zeros(nf),
        stage=zeros(nf),
        next_inc=full(-1, nf),
        rpt_evt=full(-1, nf),
        f_cls=zeros(nf),
        fly_max=zeros(nf),
        rcv_exp=zeros(nf),
        nack_last=full(-1, nf),
        nack_timer=zeros(nf),
        last_cnp=full(-(1 << 60), nf),
        wait=flows.npred.astype(I64, copy=True),
        active=zeros(n_jobs + 1, flows.n_steps),
        distinct=zeros(n_jobs + 1),
        left=zeros(n_jobs + 1),
        rx_acc=zeros(n_jobs + 1),
    )
