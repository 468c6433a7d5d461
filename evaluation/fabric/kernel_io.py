"""The event kernel's inputs and outputs in named groups (`kernel.run(seed, mode, topo, flows,
sym, nic, bg, lim, out, state)`): typed named tuples, which numba passes as plain structs, so a
field read costs what a positional argument did. `sim.py` fills them; `kernel_state.py`
allocates the kernel's working arrays. Times are in ps, sizes in bytes unless a name says
packets, rates in Gb/s."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Topology(NamedTuple):
    port_ser: np.ndarray  # [port] serialisation time of one MTU packet
    port_switch: np.ndarray  # [port] switch owning the egress port, -1 for a NIC
    prop_ps: int  # per link
    buffer_pkts: int  # drop-tail limit per egress port (PFC off)
    qthr: np.ndarray  # RED/ECN coin threshold per queue depth in MTUs
    # PFC (pfc = 0: per-port drop-tail at buffer_pkts; 1: shared switch buffer, PFC)
    pfc: int
    sw_buf: int  # packets
    sw_free0: np.ndarray  # [switch] buffer less the headroom, packets
    pfc_shift: int
    resume_pkts: int
    n_hosts: int
    n_switches: int


class Flows(NamedTuple):
    src: np.ndarray
    dst: np.ndarray
    job: np.ndarray
    step: np.ndarray
    npk: np.ndarray
    path: np.ndarray  # [flow, hop] egress ports, NIC first
    plen: np.ndarray
    slot: np.ndarray  # the flow_base register index (switch_model.flow_slot), 16 bits
    # the same, renumbered densely over the slots the flows use (kernel_state.register_rows):
    # flows sharing a slot share a row, as they share the register, and a switch's rows fit
    # in a cache instead of spanning 512 KB (measured: the miss was most of Symphony's cost)
    slot_row: np.ndarray
    sig: np.ndarray
    psn0: np.ndarray
    succ_ptr: np.ndarray  # the DAG: flow f's successors are succ_idx[succ_ptr[f]:succ_ptr[f+1]]
    succ_idx: np.ndarray
    npred: np.ndarray
    rpath: np.ndarray  # [flow, hop] egress ports of its ACKs, receiver's NIC first
    rplen: np.ndarray
    start: np.ndarray  # start time of root flows, -1 for the others
    win: np.ndarray  # HPCC's window, bytes (0: none)
    ce_psn: np.ndarray  # tests: [flow, k] PSN indices the sender's NIC marks CE (-1: none)
    # a flow of no packets is a compute node (a training workload's layer computation): it
    # "delivers" this long after it starts, releasing its successors; 0 for transfers
    delay: np.ndarray
    n_jobs: int
    n_steps: int


class Symphony(NamedTuple):
    prm: np.ndarray  # [job, sk.P_FIELDS] the switches' per-job parameters
    # [port] the state unit (a row of Outputs.js and State.flows_tab) of the packets leaving by
    # this egress port: its switch, or the port itself; -1 where Symphony does not run
    unit: np.ndarray
    late_start_ps: int  # marks only from this time on
    log_tab: np.ndarray  # the golden model's tables (symphony_kernel.golden_tables)
    alpha_tab: np.ndarray
    thr_tab: np.ndarray


class Nic(NamedTuple):
    """The NIC (evaluation/nic/reaction_point.py's rules: HPCC's rdma-hw.cc CC_MODE 1, Mellanox
    DCQCN, or the DCQCN paper's with `paper`) and the ACK path."""

    line_gbps: float
    mtu: int
    g: float
    t_alpha: int
    t_dec: int
    t_inc: int
    fast_recovery: int
    ai: float
    hai: float
    min_rate: float
    clamp_tgt: bool
    rate_first_cnp: float
    var_win: bool
    ack_bytes: int
    ack_ctrl: bool  # ACKs in the control class (served first, never paused)
    # the control class has its own server, as bmv2's per-priority-queue rates give it
    ack_own_rate: bool
    ack_hi_nic: bool  # the NIC's ACK queue ignores PFC
    nack_ps: int
    cnp_int_ps: int
    rto_ps: int  # 0: no retransmission timer
    paper: bool  # the DCQCN paper's rules: a cut per CNP, the byte counter
    byte_counter: int  # bytes per byte-counter event (paper rules; 0: none)
    alpha_init: float
    trace_io: bool  # cc_trace also gets every data frame sent and every ACK/NACK received
    ack_frames: bool  # an ACK per data packet; else only CNPs and NACKs are frames


class Background(NamedTuple):
    port: np.ndarray  # [burst] egress port
    t0: np.ndarray
    t1: np.ndarray
    gap: np.ndarray


class Limits(NamedTuple):
    sample_ps: int
    max_samples: int
    max_ps: int
    pool_size: int  # packets in flight at most (data, ACKs, background)
    # every packet's arrival at a switch up to this time goes into the trace (TR_HOP; -1: none)
    hop_trace_ps: int = -1


class Outputs(NamedTuple):
    f_done: np.ndarray  # [flow] delivery of its last packet, -1 before
    f_begin: np.ndarray  # [flow] start, -1 before
    job_end: np.ndarray
    ov_series: np.ndarray  # [job, sample] distinct steps in flight
    rx_series: np.ndarray  # [job, sample] packets delivered in the interval
    job_maxov: np.ndarray
    stats: np.ndarray  # kernel.S_* counters
    js: np.ndarray  # [unit, job, sk.JS_FIELDS] Symphony's per-job registers (Symphony.unit)
    cc_trace: np.ndarray  # tests: [row, 8] the senders' DCQCN events (0 rows: off)
