"""The event loop: one numba function over preallocated arrays (`topology.py` builds them).

Time is in picoseconds (int64). Events sit in a queue that pops by time, then in push order (ns-3's
tie rule; `event_queue.py`); the payload packs the event type in 4 bits and an index above (an
ARRIVE's: the packet, then its flow, `_arrive`). Per data packet: the sender's pacing timer
(QP_READY), the NIC, then at each switch an ARRIVE (ingress: the golden model's Symphony algorithm,
`symphony_kernel.process`) and the egress FIFO (RED/ECN mark at dequeue on the bytes left behind;
drop-tail per port, or with PFC a shared switch buffer whose per-ingress byte accounting sends
XOFF/XON to the upstream port or NIC, `EV_PFC`), and at the receiver go-back-N delivery. The
receiver turns every in-order packet into an ACK (an out-of-order one into a NACK, at most once per
500 us per expected PSN) carrying the CNP flag if the packet was CE-marked; ACKs and NACKs are
packets of `ack_bytes` on the flow's reverse path (`Flows.rpath`), through the receiver NIC's ACK
queue (served before data) and the switches' queues (the flow's data class as in HPCC, or a control
class served first). The sender runs HPCC's rdma-hw.cc CC_MODE 1 (Mellanox DCQCN): cnp_received_mlx
on a flagged ACK, UpdateAlphaMlx every t_alpha (evaluated lazily, `_alpha_ticks`),
CheckRateDecreaseMlx on its t_dec grid (EV_DEC, scheduled only after a CNP since it does nothing
otherwise), RateIncEventTimerMlx (EV_RPT), the window (IsWinBound) and pacing by rate
(m_nextAvail). PORT_TXDONE / NIC_TXDONE events exist only while a queue is backed up, so an
uncongested hop costs one event."""

from __future__ import annotations

import hashlib

import numpy as np
from numba import njit

from evaluation.fabric import event_queue as eq
from evaluation.fabric import symphony_kernel as sk
from evaluation.fabric.kernel_io import Background, Flows, Limits, Nic, Outputs, Symphony, Topology
from evaluation.fabric.kernel_state import (
    FL_ALPHA_FLAG,
    FL_ALPHA_NEXT,
    FL_BC_BYTES,
    FL_BC_EVENTS,
    FL_CLS,
    FL_DEC_FLAG,
    FL_DEC_NEXT,
    FL_DEC_PENDING,
    FL_DELAY,
    FL_FLY_MAX,
    FL_JOB,
    FL_LAST_CNP,
    FL_NACK_LAST,
    FL_NACK_TIMER,
    FL_NEXT_AVAIL,
    FL_NEXT_INC,
    FL_NPK,
    FL_PATH,
    FL_PLEN,
    FL_PSN0,
    FL_QP_DONE,
    FL_RCV_EXP,
    FL_RPATH,
    FL_RPLEN,
    FL_RPT_EVT,
    FL_RTO_ARMED,
    FL_RTO_MARK,
    FL_SIG,
    FL_SLOT_ROW,
    FL_SND_NEXT,
    FL_SND_SCHED,
    FL_SND_UNA,
    FL_SRC,
    FL_STAGE,
    FL_START,
    FL_STEP,
    FL_WAIT,
    FL_WIN,
    FR_ALPHA,
    FR_RC,
    FR_RT,
    PK_CE,
    PK_COLUMNS,
    PK_DATA,
    PK_HOP,
    PK_IDX,
    PK_IN,
    PK_KIND,
    PK_NEXT,
    PT_A_HEAD,
    PT_A_LEN,
    PT_A_TAIL,
    PT_ACK_SER,
    PT_AFTER_XOFF,
    PT_BUSY,
    PT_GRP_AVAIL,
    PT_GRP_N,
    PT_ING,
    PT_PAUSED,
    PT_PAUSED_SINCE,
    PT_PENDING,
    PT_Q_BYTES,
    PT_Q_HEAD,
    PT_Q_LEN,
    PT_Q_TAIL,
    PT_SER,
    PT_SWITCH,
    PT_XOFF,
    State,
)

EV_QP_READY, EV_NIC_TXDONE, EV_ARRIVE, EV_PORT_TXDONE, EV_DEC = range(5)
EV_RPT, EV_RTO, EV_SAMPLE, EV_START, EV_BG, EV_PFC = range(5, 11)
EV_COMPUTED = 11  # a compute node's duration is over (Flows.delay)
KIND_DATA, KIND_ACK, KIND_NACK = 0, 1, 2
PK_BITS = 28  # an ARRIVE payload: the event type (4 bits), the packet (28 bits), its flow above
PK_MASK = (1 << PK_BITS) - 1

# stats[] indices
S_EVENTS, S_SENT, S_DELIVERED, S_OOO, S_DUP, S_DROPPED = range(6)
S_BG_SENT, S_BG_DONE, S_BG_DROPPED, S_SYM_MARKS, S_QUEUE_MARKS, S_CNPS = range(6, 12)
S_NACKS, S_RTOS, S_MARKS_NOT_OUTPACING, S_HOPS, S_ERROR, S_END_PS = range(12, 18)
S_CE_DELIVERED, S_MAX_QUEUE, S_LEFT, S_BG_LEFT = 18, 19, 20, 21
S_PAUSES, S_MAX_SW_USED, S_HDRM_MAX, S_PAUSED_PS = 22, 23, 24, 25
# ACKs + NACKs sent; received by their sender; dropped; in flight at the end; rate cuts
S_ACKS, S_CTRL_DONE, S_CTRL_DROPPED, S_CTRL_LEFT, S_CUTS, S_FIELDS = 28, 29, 30, 31, 32, 36
S_TRACE_N = 33  # rows written to cc_trace
# cc_trace rows: time ps, flow, event, rc, rt, alpha, stage, most packets in flight since the
# flow's previous row; events (TR_DONE: the QP completed, or the run ended). With Nic.trace_io
# also TR_SEND (a data frame left the NIC: its PSN index instead of the stage, the window's
# in-flight packets last) and TR_ACK (an ACK or NACK reached the sender: its sequence number,
# then 1 for a CNP flag + 2 for a NACK) and TR_RECV (a data frame reached its receiver: its
# PSN index, then its CE bit; the fabric's queue waits, sent to received, per frame). The
# codes are evaluation/nic/reaction_point.py's.
TR_FIRST_CNP, TR_CUT, TR_INC, TR_CNP, TR_DONE, TR_SEND, TR_ACK, TR_RECV = 1, 2, 3, 4, 5, 6, 7, 8
# with Limits.hop_trace_ps: a packet reached a switch (its flow; the egress port it joins; then
# hop_code(kind, PSN index, the bytes queued ahead of it in its class))
TR_HOP = 9
ERR_POOL, ERR_HEAP, ERR_TIMEOUT, ERR_STUCK = 1, 2, 4, 8

WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 6, 7, 8, 10
MODE_BASELINE, MODE_SYMPHONY, MODE_PQ = 0, 1, 2
# Which simulation this kernel runs: bumped by every change that alters any run (the 45
# recorded reference runs are re-recorded then). The sweep store keys results on it, so runs of
# an older kernel in a runs.jsonl are run again, not read back. 2: ns-3's tie rule (issue 32).
# 3: under ecmp "switch" an ACK or CNP takes the path the switches hash its own header onto,
# not its data's links back (issue 44; topology._choosers). 4: a NIC serves its QPs as HPCC's
# RdmaEgressQueue does, round-robin over its group in creation order, a QP whose next send time
# is this instant counting as available (it served its ready flows first come, first served;
# issue 45, docs/evaluation.md "The NIC's round robin"). 5: every port and NIC schedules its
# transmit-complete event at every transmission start, as ns-3's QbbNetDevice does, so frames
# meeting at one instant are ordered as ns-3 orders them (docs/evaluation.md "The tie order").
# 6: a free NIC sends an ACK, and a QP its ACK made ready, inside the arrival that caused it, as
# ns-3's TriggerTransmit does, not after the other events of that instant (issue 45).
RESULTS_VERSION = 6


# The packet and port indices of the hottest handlers (pku, portu) are unsigned: numba indexes
# with a signed integer only after adding the length to a negative one, three instructions on
# every access (measured: 1.2x for the binary heap this kernel had). Each is a copy under its
# own name, as numba would type a variable that holds both int64 and uint64 as float64.


@njit(cache=True, _nrt=False, inline="always")
def _arrive(pk, f):  # type: ignore[no-untyped-def]
    """An ARRIVE event's payload: the packet (PK_BITS bits) and its flow above."""
    return EV_ARRIVE | (pk << 4) | (f << (4 + PK_BITS))


@njit(cache=True, _nrt=False, inline="always")
def _flow(pkt, pk):  # type: ignore[no-untyped-def]
    """Packet pk's flow (-1: background), off the payload of its last ARRIVE (or its first)."""
    return pkt[pk, PK_DATA] >> (4 + PK_BITS)


@njit(cache=True, _nrt=False, inline="always")
def _send(q, pkt0, pk, f, t):  # type: ignore[no-untyped-def]
    """Packet pk of flow f onto a wire: its ARRIVE at t, queued in the packet's own row."""
    eq.push_owned(q, pkt0 + PK_COLUMNS * pk, t, _arrive(pk, f))


@njit(cache=True, _nrt=False, inline="always")
def _release(q, fl, succ_ptr, succ_idx, f, now):  # type: ignore[no-untyped-def]
    """Flow (or compute node) f is done: its successors whose last predecessor it was start."""
    for e in range(succ_ptr[f], succ_ptr[f + 1]):
        nxt = succ_idx[e]
        fl[nxt, FL_WAIT] -= 1
        if fl[nxt, FL_WAIT] == 0:
            eq.push(q, now, EV_START | (nxt << 4))


@njit(cache=True, _nrt=False, inline="always")
def _enq(pt, pkt, a, head, tail, qlen, pk):
    """Packet pk to the back of port a's FIFO whose head, tail and length are those columns."""
    pkt[pk, PK_NEXT] = -1
    if pt[a, qlen] == 0:
        pt[a, head] = pk
    else:
        pkt[pt[a, tail], PK_NEXT] = pk
    pt[a, tail] = pk
    pt[a, qlen] += 1


@njit(cache=True, _nrt=False, inline="always")
def _deq(pt, pkt, a, head, qlen):
    """The packet at the front of port a's FIFO (head and length columns), taken off."""
    pk = pt[a, head]
    pt[a, head] = pkt[pk, PK_NEXT]
    pt[a, qlen] -= 1
    return pk


@njit(cache=True, _nrt=False, inline="always")
def _win_bound(fl, fr, f, var_win, line_gbps, mtu):
    """RdmaQueuePair::IsWinBound with GetWin for flow f: no window (0), or its in-flight bytes
    >= the window, scaled by rate / line rate under VAR_WIN (at least 1 byte)."""
    win = fl[f, FL_WIN]
    if win == 0:
        return False
    w = win
    if var_win:
        w = np.int64(win * fr[f, FR_RC] / line_gbps)
        if w == 0:
            w = 1
    return (fl[f, FL_SND_NEXT] - fl[f, FL_SND_UNA]) * mtu >= w


@njit(cache=True, _nrt=False)
def _alpha_ticks(fl, fr, f, now, t_alpha, g):
    """UpdateAlphaMlx, free-running every t_alpha from the first CNP on, evaluated lazily: run
    the ticks due by `now`. The first one sees the CNP flag of its window, the rest decay."""
    if fl[f, FL_ALPHA_NEXT] < 0 or fl[f, FL_ALPHA_NEXT] > now:
        return
    k = (now - fl[f, FL_ALPHA_NEXT]) // t_alpha + 1
    fl[f, FL_ALPHA_NEXT] += k * t_alpha
    if fl[f, FL_ALPHA_FLAG]:
        fr[f, FR_ALPHA] = (1.0 - g) * fr[f, FR_ALPHA] + g
        fl[f, FL_ALPHA_FLAG] = 0
        k -= 1
    if k > 0:
        fr[f, FR_ALPHA] *= (1.0 - g) ** k


@njit(cache=True, _nrt=False)
def _trace_io(tr, stats, now, f, code, fl, fr, a, b):
    n = stats[S_TRACE_N]
    if n < tr.shape[0]:
        tr[n, 0] = now
        tr[n, 1] = f
        tr[n, 2] = code
        tr[n, 3] = fr[f, FR_RC]
        tr[n, 4] = fr[f, FR_RT]
        tr[n, 5] = fr[f, FR_ALPHA]
        tr[n, 6] = a
        tr[n, 7] = b
        stats[S_TRACE_N] = n + 1


@njit(cache=True, _nrt=False, inline="always")
def hop_code(kind, idx, queued):
    """TR_HOP's last column: kind (2 bits), PSN index (24 bits), bytes queued ahead (above)."""
    return ((queued << 24) | idx) * 4 + kind


def hop_fields(code: int) -> tuple[int, int, int]:
    """(kind, PSN index, bytes queued ahead) of a TR_HOP row's last column."""
    return code & 3, (code >> 2) & 0xFFFFFF, code >> 26


def arrivals_digest(hops: np.ndarray) -> tuple[int, str]:
    """(count, sha256) of switch arrivals, one row (kind, flow, PSN index, time in ps) each:
    what the kernel's TR_HOP rows and ns-3's trace are compared by when ns-3 is not at hand.
    The rows are sorted, so a packet's arrivals are in time order (its n-th is its n-th hop),
    and hashed as little-endian int64."""
    rows = np.ascontiguousarray(hops, dtype="<i8").reshape(-1, 4)
    rows = rows[np.lexsort(rows.T[::-1])]
    return len(rows), hashlib.sha256(rows.tobytes()).hexdigest()


@njit(cache=True, _nrt=False)
def _paper_increase(fl, fr, f, line_gbps, fast_recovery, ai, hai):
    """An increase event of the DCQCN paper's rules (reaction_point._paper_increase): False at
    line rate (nothing to increase: the caller stops the timer)."""
    if fr[f, FR_RC] >= line_gbps and fr[f, FR_RT] >= line_gbps:
        return False
    te = fl[f, FL_STAGE]
    be = fl[f, FL_BC_EVENTS]
    lo = min(te, be)
    hi = max(te, be)
    if hi < fast_recovery:
        pass  # fast recovery: rc halfway to rt
    elif lo > fast_recovery:
        fr[f, FR_RT] += (lo - fast_recovery) * hai
    else:
        fr[f, FR_RT] += ai
    fr[f, FR_RT] = min(fr[f, FR_RT], line_gbps)
    fr[f, FR_RC] = min(line_gbps, (fr[f, FR_RT] + fr[f, FR_RC]) / 2.0)
    return True


@njit(cache=True, _nrt=False)
def _trace(tr, stats, now, f, code, fl, fr):
    n = stats[S_TRACE_N]
    if n < tr.shape[0]:
        tr[n, 0] = now
        tr[n, 1] = f
        tr[n, 2] = code
        tr[n, 3] = fr[f, FR_RC]
        tr[n, 4] = fr[f, FR_RT]
        tr[n, 5] = fr[f, FR_ALPHA]
        tr[n, 6] = fl[f, FL_STAGE]
        tr[n, 7] = fl[f, FL_FLY_MAX]
        fl[f, FL_FLY_MAX] = 0
        stats[S_TRACE_N] = n + 1


@njit(cache=True, _nrt=False)
def run(
    seed: int,
    mode: int,
    topo: Topology,
    flows: Flows,
    sym: Symphony,
    nic: Nic,
    bg: Background,
    lim: Limits,
    out: Outputs,
    st: State,
) -> int:
    """One run; returns the number of samples written. `st` must be fresh from
    `kernel_state.new_state` (the kernel allocates nothing: numba's runtime is off)."""
    np.random.seed(seed)
    # the groups' fields as the locals the loop below reads (free without the runtime)
    prop_ps = topo.prop_ps
    buffer_pkts, qthr, pfc = topo.buffer_pkts, topo.qthr, topo.pfc
    sw_buf, pfc_shift = topo.sw_buf, topo.pfc_shift
    resume_pkts, n_hosts = topo.resume_pkts, topo.n_hosts
    f_ce_psn = flows.ce_psn
    succ_ptr, succ_idx, n_jobs = flows.succ_ptr, flows.succ_idx, flows.n_jobs
    prm, late_start_ps, sym_unit = sym.prm, sym.late_start_ps, sym.unit
    log_tab, alpha_tab, thr_tab = sym.log_tab, sym.alpha_tab, sym.thr_tab
    line_gbps, mtu, g = nic.line_gbps, nic.mtu, nic.g
    t_alpha, t_dec, t_inc = nic.t_alpha, nic.t_dec, nic.t_inc
    fast_recovery, ai, hai, min_rate = nic.fast_recovery, nic.ai, nic.hai, nic.min_rate
    clamp_tgt, rate_first_cnp, var_win = nic.clamp_tgt, nic.rate_first_cnp, nic.var_win
    ack_bytes, ack_ctrl, ack_hi_nic = nic.ack_bytes, nic.ack_ctrl, nic.ack_hi_nic
    ack_own_rate = nic.ack_own_rate
    nack_ps, cnp_int_ps, rto_ps = nic.nack_ps, nic.cnp_int_ps, nic.rto_ps
    paper, byte_counter, trace_io = nic.paper, nic.byte_counter, nic.trace_io
    ack_frames = nic.ack_frames
    bg_port, bg_t0, bg_t1, bg_gap = bg.port, bg.t0, bg.t1, bg.gap
    sample_ps, max_samples, max_ps = lim.sample_ps, lim.max_samples, lim.max_ps
    pool_size, hop_trace_ps = lim.pool_size, lim.hop_trace_ps
    f_done, f_begin, job_end = out.f_done, out.f_begin, out.job_end
    ov_series, rx_series, job_maxov = out.ov_series, out.rx_series, out.job_maxov
    stats, js, cc_trace = out.stats, out.js, out.cc_trace
    flows_tab, q = st.flows_tab, st.q
    pkt = st.pkt  # per packet: its row of fields (kernel_state.PK_*), q's owned rows
    pkt0 = q[eq.OWNED]  # packet 0's node in q
    free, in_use, sw_used, grp = st.free, st.in_use, st.sw_used, st.qp_group
    pt = st.pt  # per port (NICs first: a host's NIC is its port): its row (kernel_state.PT_*)
    fl, fr = st.fl, st.fr  # per flow: its row of fields (kernel_state.FL_*, FR_*)
    active, distinct, left, rx_acc = st.active, st.distinct, st.left, st.rx_acc

    nf = fl.shape[0]
    mtu_bits = float(mtu * 8)
    nfree = pool_size
    grp_last = grp.shape[1] - 1  # the column of the last served index
    port_cap = buffer_pkts * mtu
    sw_cap = sw_buf * mtu
    sw_free = st.sw_free
    resume_b = resume_pkts * mtu
    max_sw_b = 0
    hdrm_b = 0
    tracing = cc_trace.shape[0] > 0
    forced_ce = f_ce_psn.shape[1] > 0
    for f in range(nf):
        left[fl[f, FL_JOB]] += 1
        if paper:
            fl[f, FL_ALPHA_NEXT] = t_alpha  # the paper's alpha timer runs from the QP's creation
    jobs_left = 0
    for j in range(1, n_jobs + 1):
        if left[j] > 0:
            jobs_left += 1
    n_samples = 0

    for f in range(nf):
        if fl[f, FL_START] >= 0:
            eq.push(q, fl[f, FL_START], EV_START | (f << 4))
    for b in range(bg_port.shape[0]):
        eq.push(q, bg_t0[b], EV_BG | (b << 4))
    eq.push(q, 0, EV_SAMPLE)

    now = 0
    while q[eq.SIZE] > 0 and jobs_left > 0:
        now, d = eq.pop(q)
        stats[S_EVENTS] += 1
        ev = d & 15
        x = d >> 4
        if now > max_ps:
            stats[S_ERROR] |= ERR_TIMEOUT
            break

        if ev == EV_ARRIVE:
            # the payload carries the packet's flow too (`_arrive`): the flow's row loads beside
            # the packet's instead of after it
            pk = x & PK_MASK
            pku = np.uint64(pk)
            f = x >> PK_BITS
            hop = pkt[pku, PK_HOP]
            kind = pkt[pku, PK_KIND]
            if kind != KIND_DATA:
                if hop == fl[f, FL_RPLEN]:
                    # the sender: RdmaHw::ReceiveAck
                    stats[S_CTRL_DONE] += 1
                    seq = pkt[pku, PK_IDX]
                    cnp = pkt[pku, PK_CE]
                    free[nfree] = pk
                    nfree += 1
                    if tracing and trace_io:
                        _trace_io(
                            cc_trace, stats, now, f, TR_ACK, fl, fr, seq, cnp + 2 * (kind - 1)
                        )
                    if fl[f, FL_QP_DONE]:
                        continue  # the QP is gone (GetQp fails)
                    if seq > fl[f, FL_SND_UNA]:
                        fl[f, FL_SND_UNA] = seq  # Acknowledge
                    if fl[f, FL_SND_UNA] >= fl[f, FL_NPK]:
                        fl[f, FL_QP_DONE] = 1  # QpComplete: cancels the three mlx timers
                        if tracing:
                            _trace(cc_trace, stats, now, f, TR_DONE, fl, fr)
                        continue
                    if kind == KIND_NACK:
                        fl[f, FL_SND_NEXT] = fl[f, FL_SND_UNA]  # RecoverQueue: go-back-N
                    if cnp and paper:
                        # the DCQCN paper: every CNP cuts at once and restarts the timers
                        _alpha_ticks(fl, fr, f, now, t_alpha, g)
                        fr[f, FR_RT] = fr[f, FR_RC]
                        fr[f, FR_RC] = max(min_rate, fr[f, FR_RC] * (1.0 - fr[f, FR_ALPHA] / 2.0))
                        fr[f, FR_ALPHA] = (1.0 - g) * fr[f, FR_ALPHA] + g
                        fl[f, FL_STAGE] = 0
                        fl[f, FL_BC_EVENTS] = 0
                        fl[f, FL_BC_BYTES] = 0
                        fl[f, FL_ALPHA_NEXT] = now + t_alpha
                        stats[S_CUTS] += 1
                        if tracing:
                            _trace(cc_trace, stats, now, f, TR_CUT, fl, fr)
                        fl[f, FL_NEXT_INC] = now + t_inc
                        if fl[f, FL_RPT_EVT] < 0:  # else the pending, earlier event moves here
                            fl[f, FL_RPT_EVT] = fl[f, FL_NEXT_INC]
                            eq.push(q, fl[f, FL_NEXT_INC], EV_RPT | (f << 4))
                    elif cnp:
                        # cnp_received_mlx
                        _alpha_ticks(fl, fr, f, now, t_alpha, g)
                        fl[f, FL_ALPHA_FLAG] = 1
                        fl[f, FL_DEC_FLAG] = 1
                        if fl[f, FL_ALPHA_NEXT] < 0:  # m_first_cnp: alpha = 1, timers start
                            fr[f, FR_ALPHA] = 1.0
                            fl[f, FL_ALPHA_FLAG] = 0
                            fl[f, FL_ALPHA_NEXT] = now + t_alpha
                            fl[f, FL_DEC_NEXT] = now + t_dec + 1000  # + 1 ns: after the alpha tick
                            fr[f, FR_RC] = rate_first_cnp * fr[f, FR_RC]
                            fr[f, FR_RT] = fr[f, FR_RC]
                            if tracing:
                                _trace(
                                    cc_trace,
                                    stats,
                                    now,
                                    f,
                                    TR_FIRST_CNP,
                                    fl,
                                    fr,
                                )
                        elif tracing:
                            _trace(cc_trace, stats, now, f, TR_CNP, fl, fr)
                        if fl[f, FL_DEC_PENDING] == 0:
                            # the free-running decrease check acts only after a CNP: schedule
                            # its next tick on the grid instead of running every tick
                            if fl[f, FL_DEC_NEXT] <= now:
                                fl[f, FL_DEC_NEXT] += (
                                    (now - fl[f, FL_DEC_NEXT]) // t_dec + 1
                                ) * t_dec
                            fl[f, FL_DEC_PENDING] = 1
                            eq.push(q, fl[f, FL_DEC_NEXT], EV_DEC | (f << 4))
                    # TriggerTransmit: the ACK may have opened the window
                    if (
                        fl[f, FL_SND_SCHED] == 0
                        and f_done[f] < 0
                        and fl[f, FL_SND_NEXT] < fl[f, FL_NPK]
                        and not _win_bound(fl, fr, f, var_win, line_gbps, mtu)
                    ):
                        fl[f, FL_SND_SCHED] = 1
                        if fl[f, FL_NEXT_AVAIL] > now:
                            eq.push(q, fl[f, FL_NEXT_AVAIL], EV_QP_READY | (f << 4))
                            continue
                        # ready now: served inside this ACK's arrival, as ns-3's ReceiveAck
                        # calls TriggerTransmit (RESULTS_VERSION 6)
                        stats[S_EVENTS] += 1
                        ev = EV_QP_READY
                        x = f
                    else:
                        continue
                else:
                    port = fl[f, FL_RPATH + hop]
                    portu = np.uint64(port)
                    link = fl[f, FL_RPATH + hop - 1]
                    prio = 2 if ack_ctrl else fl[f, FL_CLS]
                    size = ack_bytes
            else:
                if hop == fl[f, FL_PLEN]:
                    # the receiver: RdmaHw::ReceiveUdp / ReceiverCheckSeq (ACK interval 1)
                    idx = pkt[pku, PK_IDX]
                    exp = fl[f, FL_RCV_EXP]
                    reply = 0
                    if tracing and trace_io:
                        _trace_io(cc_trace, stats, now, f, TR_RECV, fl, fr, idx, pkt[pku, PK_CE])
                    if idx == exp:
                        reply = KIND_ACK
                        fl[f, FL_RCV_EXP] = exp + 1
                        stats[S_DELIVERED] += 1
                        rx_acc[fl[f, FL_JOB]] += 1
                        if pkt[pku, PK_CE]:
                            stats[S_CE_DELIVERED] += 1
                        if exp + 1 == fl[f, FL_NPK]:
                            f_done[f] = now
                            j = fl[f, FL_JOB]
                            s = fl[f, FL_STEP]
                            active[j, s] -= 1
                            if active[j, s] == 0:
                                distinct[j] -= 1
                            left[j] -= 1
                            if left[j] == 0:
                                job_end[j] = now
                                jobs_left -= 1
                            _release(q, fl, succ_ptr, succ_idx, f, now)
                    elif idx > exp:
                        stats[S_OOO] += 1
                        if now >= fl[f, FL_NACK_TIMER] or fl[f, FL_NACK_LAST] != exp:
                            reply = KIND_NACK
                            fl[f, FL_NACK_TIMER] = now + nack_ps
                            fl[f, FL_NACK_LAST] = exp
                            stats[S_NACKS] += 1
                    else:
                        stats[S_DUP] += 1
                    if reply == 0:
                        free[nfree] = pk
                        nfree += 1
                        continue
                    # the data packet becomes its ACK/NACK, CNP flag = its CE bit
                    cnp = pkt[pku, PK_CE]
                    if cnp and cnp_int_ps > 0:
                        if now - fl[f, FL_LAST_CNP] >= cnp_int_ps:
                            fl[f, FL_LAST_CNP] = now
                        else:
                            cnp = 0
                    if reply == KIND_ACK and not ack_frames:
                        # no ACK frames: the progress reaches the sender out of band, at once;
                        # a frame leaves only to carry a CNP
                        if fl[f, FL_RCV_EXP] > fl[f, FL_SND_UNA]:
                            fl[f, FL_SND_UNA] = fl[f, FL_RCV_EXP]
                            if fl[f, FL_SND_UNA] >= fl[f, FL_NPK]:
                                fl[f, FL_QP_DONE] = 1  # QpComplete: cancels the timers
                        if not cnp:
                            free[nfree] = pk
                            nfree += 1
                            continue
                    stats[S_ACKS] += 1
                    stats[S_CNPS] += cnp
                    pkt[pku, PK_KIND] = reply
                    pkt[pku, PK_IDX] = fl[f, FL_RCV_EXP]
                    pkt[pku, PK_CE] = cnp
                    pkt[pku, PK_HOP] = 1
                    h = fl[f, FL_RPATH]
                    _enq(pt, pkt, h, PT_A_HEAD, PT_A_TAIL, PT_A_LEN, pk)
                    if pt[h, PT_PENDING] != 0:
                        continue
                    if pt[h, PT_BUSY] > now or jobs_left == 0:
                        pt[h, PT_PENDING] = 1
                        eq.push(q, max(now, pt[h, PT_BUSY]), EV_NIC_TXDONE | (h << 4))
                        continue
                    # a free NIC sends the ACK now, inside this arrival, as ns-3's ReceiveUdp
                    # does (RdmaEnqueueHighPrioQ, then TriggerTransmit), not after the other
                    # events of this instant (RESULTS_VERSION 6)
                    stats[S_EVENTS] += 1
                    ev = EV_NIC_TXDONE
                    x = h
                else:
                    # a switch: ingress Symphony, then the egress queue
                    port = fl[f, FL_PATH + hop]
                    portu = np.uint64(port)
                    link = fl[f, FL_PATH + hop - 1]
                    prio = fl[f, FL_CLS]
                    size = mtu
                    stats[S_HOPS] += 1
                    if mode == MODE_SYMPHONY and sym_unit[portu] >= 0:
                        unit = sym_unit[portu]  # the state's row: this switch, or this egress port
                        idx = pkt[pku, PK_IDX]
                        npk = fl[f, FL_NPK]
                        if npk == 1:
                            opc = WRITE_ONLY
                        elif idx == 0:
                            opc = WRITE_FIRST
                        elif idx == npk - 1:
                            opc = WRITE_LAST
                        else:
                            opc = WRITE_MIDDLE
                        j = fl[f, FL_JOB]
                        s = fl[f, FL_STEP]
                        _p, thr, _outp = sk.process_inlined(
                            js,
                            flows_tab,
                            prm,
                            unit,
                            j,
                            fl[f, FL_SLOT_ROW],  # the flow's slot as a row of the dense flows_tab
                            fl[f, FL_SIG],
                            s,
                            opc,
                            (fl[f, FL_PSN0] + idx) & 0xFFFFFF,
                            (now // 1000) & 0xFFFFFFFF,
                            log_tab,
                            alpha_tab,
                            thr_tab,
                        )
                        if thr > 0 and now >= late_start_ps:
                            coin = np.random.randint(0, sk.COIN_RANGE) if thr < sk.COIN_RANGE else 0
                            if sk.decide(thr, coin):
                                js[unit, j, sk.JS_MARKS] += (
                                    1  # decisions, as the switch counts them
                                )
                                # the backlog gate on the depth this packet joins, in MTUs of its
                                # class
                                depth = pt[portu, PT_Q_BYTES + prio] // mtu
                                if sk.symphony_ce(True, depth, prm[j, sk.P_SYM_GATE]):
                                    stats[S_SYM_MARKS] += 1
                                    pkt[pku, PK_CE] = 1
                                    if not sk.step_later(s, js[unit, j, sk.JS_STEP_MIN]):
                                        stats[S_MARKS_NOT_OUTPACING] += 1
            if ev == EV_ARRIVE:  # not a host: the packet is at a switch
                if prio == 2 and ack_own_rate:
                    # bmv2's priority queues each have a rate of their own (docs/ack_priority.md):
                    # the class's frame takes none of data's time and leaves at once (its queue,
                    # at most a frame per data frame the other way, does not back up), reaching
                    # the next hop a frame time later, as from an idle port
                    pkt[pku, PK_HOP] += 1
                    _send(q, pkt0, pk, f, now + pt[portu, PT_ACK_SER] + prop_ps)
                    continue
                sw = pt[portu, PT_SWITCH]
                if now <= hop_trace_ps:
                    _trace_io(
                        cc_trace,
                        stats,
                        now,
                        f,
                        TR_HOP,
                        fl,
                        fr,
                        port,
                        hop_code(kind, pkt[pku, PK_IDX], pt[portu, PT_Q_BYTES + prio]),
                    )
                # enqueue (drop-tail on the port's bytes, or on the switch's shared buffer; the
                # control class is outside both)
                if prio < 2 and (
                    (sw_used[sw] + size > sw_cap)
                    if pfc
                    else (pt[portu, PT_Q_BYTES] + pt[portu, PT_Q_BYTES + 1] + size > port_cap)
                ):
                    if kind == KIND_DATA:
                        stats[S_DROPPED] += 1
                    else:
                        stats[S_CTRL_DROPPED] += 1
                    free[nfree] = pk
                    nfree += 1
                    continue
                _enq(pt, pkt, port, PT_Q_HEAD + prio, PT_Q_TAIL + prio, PT_Q_LEN + prio, pk)
                pt[portu, PT_Q_BYTES + prio] += size
                pkt[pku, PK_IN] = -1
                if pfc and prio < 2:
                    pkt[pku, PK_IN] = link
                    sw_used[sw] += size
                    if sw_used[sw] > max_sw_b:
                        max_sw_b = sw_used[sw]
                    pt[link, PT_ING + prio] += size
                    if pt[link, PT_XOFF + prio]:
                        # arrived after our XOFF: what the headroom has to hold
                        pt[link, PT_AFTER_XOFF + prio] += size
                        if pt[link, PT_AFTER_XOFF + prio] > hdrm_b:
                            hdrm_b = pt[link, PT_AFTER_XOFF + prio]
                    elif pt[link, PT_ING + prio] > (sw_free[sw] - sw_used[sw]) >> pfc_shift:
                        pt[link, PT_XOFF + prio] = 1
                        pt[link, PT_AFTER_XOFF + prio] = 0
                        stats[S_PAUSES] += 1
                        eq.push(q, now + prop_ps, EV_PFC | ((link * 4 + prio * 2 + 1) << 4))
                depth = (pt[portu, PT_Q_BYTES] + pt[portu, PT_Q_BYTES + 1] + mtu - 1) // mtu
                if depth > stats[S_MAX_QUEUE]:
                    stats[S_MAX_QUEUE] = depth
                if pt[portu, PT_PENDING] == 0:
                    if pt[portu, PT_BUSY] <= now:
                        ev = EV_PORT_TXDONE  # start now, below
                    else:
                        pt[portu, PT_PENDING] = 1
                        eq.push(q, pt[portu, PT_BUSY], EV_PORT_TXDONE | (port << 4))
                        continue
                else:
                    continue
                x = port

        if ev == EV_PORT_TXDONE:
            port = x
            portu = np.uint64(port)
            pt[portu, PT_PENDING] = 0
            if pt[portu, PT_Q_LEN + 2] > 0:
                pr = 2
            elif pt[portu, PT_Q_LEN] > 0 and pt[portu, PT_PAUSED] == 0:
                pr = 0
            elif pt[portu, PT_Q_LEN + 1] > 0 and pt[portu, PT_PAUSED + 1] == 0:
                pr = 1
            else:
                continue
            pk = _deq(pt, pkt, portu, PT_Q_HEAD + pr, PT_Q_LEN + pr)
            pku = np.uint64(pk)
            kind = pkt[pku, PK_KIND]
            size = ack_bytes if kind != KIND_DATA else mtu
            pt[portu, PT_Q_BYTES + pr] -= size
            pt[portu, PT_BUSY] = now + (
                pt[portu, PT_ACK_SER] if kind != KIND_DATA else pt[portu, PT_SER]
            )
            # TransmitComplete is scheduled at every transmission start, as ns-3's
            # QbbNetDevice does, queue or no queue: a frame that arrives at the instant the
            # port frees is then queued behind that event, not sent before it (issue 45)
            pt[portu, PT_PENDING] = 1
            eq.push(q, pt[portu, PT_BUSY], EV_PORT_TXDONE | (port << 4))
            if pfc and pr < 2:
                sw = pt[portu, PT_SWITCH]
                sw_used[sw] -= size
                link = pkt[pku, PK_IN]
                if link >= 0:
                    pt[link, PT_ING + pr] -= size
                    if pt[link, PT_XOFF + pr]:
                        thr_pfc = (sw_free[sw] - sw_used[sw]) >> pfc_shift
                        if (
                            pt[link, PT_ING + pr] == 0
                            or pt[link, PT_ING + pr] + resume_b <= thr_pfc
                        ):
                            pt[link, PT_XOFF + pr] = 0
                            eq.push(q, now + prop_ps, EV_PFC | ((link * 4 + pr * 2) << 4))
            f = _flow(pkt, pku)
            if f < 0:
                stats[S_BG_DONE] += 1
                free[nfree] = pk
                nfree += 1
                continue
            if kind == KIND_DATA:
                # RED/ECN on the bytes this packet leaves behind in its queue, in MTUs (an
                # ACK's mark would be ignored: HPCC's NIC reads no ECN bits from ACKs)
                depth = pt[portu, PT_Q_BYTES + pr] // mtu
                if depth >= qthr.shape[0]:
                    depth = qthr.shape[0] - 1
                th = qthr[depth]
                if th > 0 and (th >= sk.COIN_RANGE or np.random.randint(0, sk.COIN_RANGE) < th):
                    stats[S_QUEUE_MARKS] += 1
                    pkt[pku, PK_CE] = 1
            pkt[pku, PK_HOP] += 1
            _send(q, pkt0, pk, f, pt[portu, PT_BUSY] + prop_ps)
            continue

        if ev == EV_COMPUTED:
            f = x
            f_done[f] = now
            j = fl[f, FL_JOB]
            left[j] -= 1
            if left[j] == 0:
                job_end[j] = now
                jobs_left -= 1
            _release(q, fl, succ_ptr, succ_idx, f, now)
            continue

        if ev == EV_START:
            f = x
            f_begin[f] = now
            if fl[f, FL_NPK] == 0:
                # a compute node: no packets, no step in flight; done after its duration
                eq.push(q, now + fl[f, FL_DELAY], EV_COMPUTED | (f << 4))
                continue
            j = fl[f, FL_JOB]
            s = fl[f, FL_STEP]
            active[j, s] += 1
            if active[j, s] == 1:
                distinct[j] += 1
                if distinct[j] > job_maxov[j]:
                    job_maxov[j] = distinct[j]
            if mode == MODE_PQ:
                # strict priority for lagging flows, reorder-free: the class is fixed for the
                # flow's life, high iff its step is the job's lowest step in flight right now
                s_min = 0
                while active[j, s_min] == 0:
                    s_min += 1
                fl[f, FL_CLS] = 1 if s > s_min else 0
            fl[f, FL_SND_SCHED] = 1
            h = fl[f, FL_SRC]
            # RdmaHw::AddQueuePair: the QP joins its NIC's group last
            grp[h, pt[h, PT_GRP_N]] = f
            pt[h, PT_GRP_N] += 1
            ev = EV_QP_READY  # below

        if ev == EV_QP_READY:
            f = x
            h = fl[f, FL_SRC]
            if fl[f, FL_SND_SCHED] == 0 or fl[f, FL_NEXT_AVAIL] > now:
                continue  # stale: the NIC served it at this instant before this event popped
            if fl[f, FL_SND_SCHED] == 1:
                fl[f, FL_SND_SCHED] = 2
                pt[h, PT_GRP_AVAIL] += 1
            if pt[h, PT_BUSY] > now or pt[h, PT_PENDING]:
                if pt[h, PT_PENDING] == 0:
                    pt[h, PT_PENDING] = 1
                    eq.push(q, pt[h, PT_BUSY], EV_NIC_TXDONE | (h << 4))
                continue
            ev = EV_NIC_TXDONE
            x = h

        if ev == EV_NIC_TXDONE:
            # RdmaEgressQueue::GetNextQindex: the ACK queue first (unless PFC pauses the class
            # ACK_HIGH_PRIO gives it), then the ready flows round-robin
            h = x
            pt[h, PT_PENDING] = 0
            if pt[h, PT_A_LEN] > 0:
                pk = pt[h, PT_A_HEAD]
                f = _flow(pkt, pk)
                if ack_hi_nic or pt[h, PT_PAUSED + fl[f, FL_CLS]] == 0:
                    _deq(pt, pkt, h, PT_A_HEAD, PT_A_LEN)
                    pt[h, PT_BUSY] = now + pt[h, PT_ACK_SER]
                    _send(q, pkt0, pk, f, pt[h, PT_BUSY] + prop_ps)
                    pt[h, PT_PENDING] = 1  # always, as for a port
                    eq.push(q, pt[h, PT_BUSY], EV_NIC_TXDONE | (h << 4))
                    continue
            # then the group round-robin from the one after the last served: the first QP that
            # is not paused, has bytes left, is not window-bound and whose m_nextAvail <= now
            # (so one whose QP_READY falls on this very instant counts, whichever event pops
            # first); finished QPs (all ACKed) met on the way are compacted out, and the last
            # served index is not moved by it, as in HPCC
            n = pt[h, PT_GRP_N]
            res = -1
            fin = -1
            for k in range(1, n + 1):
                i = (grp[h, grp_last] + k) % n
                c = grp[h, i]
                left_c = fl[c, FL_SND_NEXT] < fl[c, FL_NPK] and f_done[c] < 0
                if left_c and pt[h, PT_PAUSED + fl[c, FL_CLS]] == 0:
                    if _win_bound(fl, fr, c, var_win, line_gbps, mtu):
                        if fl[c, FL_SND_SCHED] == 2:
                            # waits for an ACK to open the window (TriggerTransmit)
                            fl[c, FL_SND_SCHED] = 0
                            pt[h, PT_GRP_AVAIL] -= 1
                            if rto_ps > 0 and fl[c, FL_RTO_ARMED] == 0:
                                fl[c, FL_RTO_ARMED] = 1
                                fl[c, FL_RTO_MARK] = fl[c, FL_SND_UNA]
                                eq.push(q, now + rto_ps, EV_RTO | (c << 4))
                        continue
                    if fl[c, FL_SND_SCHED] == 0 or fl[c, FL_NEXT_AVAIL] > now:
                        continue
                    if fl[c, FL_SND_SCHED] == 1:
                        pt[h, PT_GRP_AVAIL] += 1  # its QP_READY is at `now`, not popped yet
                        fl[c, FL_SND_SCHED] = 2
                    res = i
                    break
                if not left_c and fl[c, FL_SND_SCHED] == 2:
                    fl[c, FL_SND_SCHED] = 0
                    pt[h, PT_GRP_AVAIL] -= 1
                if fl[c, FL_SND_UNA] >= fl[c, FL_NPK] and (fin < 0 or i < fin):
                    fin = i
            if fin >= 0:
                m = fin
                for i in range(fin + 1, n):
                    c = grp[h, i]
                    if fl[c, FL_SND_UNA] < fl[c, FL_NPK]:
                        if i == res:
                            res = m
                        grp[h, m] = c
                        m += 1
                pt[h, PT_GRP_N] = m
            if res < 0:
                continue
            grp[h, grp_last] = res
            f = grp[h, res]
            fl[f, FL_SND_SCHED] = 1  # until its QP_READY below (or it is done)
            pt[h, PT_GRP_AVAIL] -= 1
            if nfree == 0:
                stats[S_ERROR] |= ERR_POOL
                break
            nfree -= 1
            pk = free[nfree]
            pkt[pk, PK_KIND] = KIND_DATA
            pkt[pk, PK_IDX] = fl[f, FL_SND_NEXT]
            pkt[pk, PK_HOP] = 1
            pkt[pk, PK_CE] = 0
            if forced_ce:
                for k in range(f_ce_psn.shape[1]):
                    if f_ce_psn[f, k] == fl[f, FL_SND_NEXT]:
                        pkt[pk, PK_CE] = 1
            fl[f, FL_SND_NEXT] += 1
            if fl[f, FL_SND_NEXT] - fl[f, FL_SND_UNA] > fl[f, FL_FLY_MAX]:
                fl[f, FL_FLY_MAX] = fl[f, FL_SND_NEXT] - fl[f, FL_SND_UNA]
            stats[S_SENT] += 1
            if tracing and trace_io:
                _trace_io(
                    cc_trace,
                    stats,
                    now,
                    f,
                    TR_SEND,
                    fl,
                    fr,
                    fl[f, FL_SND_NEXT] - 1,
                    fl[f, FL_SND_NEXT] - fl[f, FL_SND_UNA],
                )
            pt[h, PT_BUSY] = now + pt[h, PT_SER]
            _send(q, pkt0, pk, f, pt[h, PT_BUSY] + prop_ps)
            pt[h, PT_PENDING] = 1  # always, as for a port
            eq.push(q, pt[h, PT_BUSY], EV_NIC_TXDONE | (h << 4))
            # pacing (UpdateNextAvail, RATE_BOUND 1): the next packet at the current rate
            gap = np.int64(mtu_bits / fr[f, FR_RC] * 1000.0)
            fl[f, FL_NEXT_AVAIL] = now + gap
            if byte_counter > 0:
                # the paper's byte counter (after the gap: the rate this frame left at paces it)
                fl[f, FL_BC_BYTES] += mtu
                if fl[f, FL_BC_BYTES] >= byte_counter:
                    fl[f, FL_BC_BYTES] -= byte_counter
                    fl[f, FL_BC_EVENTS] += 1
                    if _paper_increase(fl, fr, f, line_gbps, fast_recovery, ai, hai):
                        if tracing:
                            _trace(cc_trace, stats, now, f, TR_INC, fl, fr)
                    else:
                        fl[f, FL_NEXT_INC] = -1  # at line rate: the timer stops (its event too)
            if fl[f, FL_SND_NEXT] < fl[f, FL_NPK]:
                eq.push(q, now + gap, EV_QP_READY | (f << 4))
            else:
                fl[f, FL_SND_SCHED] = 0
                if rto_ps > 0 and fl[f, FL_RTO_ARMED] == 0:
                    fl[f, FL_RTO_ARMED] = 1
                    fl[f, FL_RTO_MARK] = fl[f, FL_SND_UNA]
                    eq.push(q, now + rto_ps, EV_RTO | (f << 4))
            continue

        if ev == EV_DEC:
            # CheckRateDecreaseMlx: cut once if a CNP arrived since the last check
            f = x
            fl[f, FL_DEC_PENDING] = 0
            if fl[f, FL_QP_DONE]:
                continue
            fl[f, FL_DEC_NEXT] = now + t_dec
            if fl[f, FL_DEC_FLAG]:
                _alpha_ticks(fl, fr, f, now, t_alpha, g)
                if clamp_tgt or fl[f, FL_STAGE] != 0:
                    fr[f, FR_RT] = fr[f, FR_RC]
                fr[f, FR_RC] = max(min_rate, fr[f, FR_RC] * (1.0 - fr[f, FR_ALPHA] / 2.0))
                fl[f, FL_STAGE] = 0
                fl[f, FL_DEC_FLAG] = 0
                stats[S_CUTS] += 1
                if tracing:
                    _trace(cc_trace, stats, now, f, TR_CUT, fl, fr)
                fl[f, FL_NEXT_INC] = now + t_inc  # the RP timer restarts (the old one is cancelled)
                if fl[f, FL_RPT_EVT] < 0:  # else the pending, earlier event moves itself here
                    fl[f, FL_RPT_EVT] = fl[f, FL_NEXT_INC]
                    eq.push(q, fl[f, FL_NEXT_INC], EV_RPT | (f << 4))
            continue

        if ev == EV_RPT:
            # RateIncEventTimerMlx: free-running once started; a cut moved it to next_inc
            f = x
            fl[f, FL_RPT_EVT] = -1
            if fl[f, FL_QP_DONE] or fl[f, FL_NEXT_INC] < 0:
                continue
            if now != fl[f, FL_NEXT_INC]:
                fl[f, FL_RPT_EVT] = fl[f, FL_NEXT_INC]
                eq.push(q, fl[f, FL_NEXT_INC], EV_RPT | (f << 4))
                continue
            if paper:
                fl[f, FL_STAGE] += 1  # the timer's events since the cut
                if _paper_increase(fl, fr, f, line_gbps, fast_recovery, ai, hai):
                    fl[f, FL_NEXT_INC] = now + t_inc
                    fl[f, FL_RPT_EVT] = fl[f, FL_NEXT_INC]
                    eq.push(q, fl[f, FL_NEXT_INC], EV_RPT | (f << 4))
                    if tracing:
                        _trace(cc_trace, stats, now, f, TR_INC, fl, fr)
                else:
                    fl[f, FL_NEXT_INC] = -1  # at line rate: stopped until the next cut
                continue
            fl[f, FL_NEXT_INC] = now + t_inc
            fl[f, FL_RPT_EVT] = fl[f, FL_NEXT_INC]
            eq.push(q, fl[f, FL_NEXT_INC], EV_RPT | (f << 4))
            if fl[f, FL_STAGE] < fast_recovery:
                pass  # FastRecoveryMlx: rc halfway to rt
            elif fl[f, FL_STAGE] == fast_recovery:
                fr[f, FR_RT] = min(fr[f, FR_RT] + ai, line_gbps)  # ActiveIncreaseMlx
            else:
                fr[f, FR_RT] = min(fr[f, FR_RT] + hai, line_gbps)  # HyperIncreaseMlx
            fr[f, FR_RC] = fr[f, FR_RC] / 2.0 + fr[f, FR_RT] / 2.0
            fl[f, FL_STAGE] += 1
            if tracing:
                _trace(cc_trace, stats, now, f, TR_INC, fl, fr)
            continue

        if ev == EV_RTO:
            # ours (HPCC has no timeout; run only without PFC): go back to the first
            # unacknowledged packet if nothing was acknowledged for rto_ps while idle
            f = x
            fl[f, FL_RTO_ARMED] = 0
            if f_done[f] >= 0 or fl[f, FL_QP_DONE] or fl[f, FL_SND_SCHED]:
                continue  # sending again: a new timer is armed when it goes idle
            if fl[f, FL_SND_UNA] != fl[f, FL_RTO_MARK]:
                fl[f, FL_RTO_ARMED] = 1
                fl[f, FL_RTO_MARK] = fl[
                    f, FL_SND_UNA
                ]  # progress since the timer was armed: wait more
                eq.push(q, now + rto_ps, EV_RTO | (f << 4))
                continue
            stats[S_RTOS] += 1
            fl[f, FL_SND_NEXT] = fl[f, FL_SND_UNA]
            if fl[f, FL_SND_NEXT] < fl[f, FL_NPK]:
                fl[f, FL_SND_SCHED] = 1
                eq.push(q, max(now, fl[f, FL_NEXT_AVAIL]), EV_QP_READY | (f << 4))
            continue

        if ev == EV_SAMPLE:
            if n_samples < max_samples:
                for j in range(1, n_jobs + 1):
                    ov_series[j, n_samples] = distinct[j]
                    rx_series[j, n_samples] = rx_acc[j]
                    rx_acc[j] = 0
                n_samples += 1
            eq.push(q, now + sample_ps, EV_SAMPLE)
            continue

        if ev == EV_BG:
            b = x
            if now >= bg_t1[b]:
                continue
            port = bg_port[b]
            stats[S_BG_SENT] += 1
            sw = pt[port, PT_SWITCH]
            full = (
                (sw_used[sw] + mtu > sw_cap)
                if pfc
                else (pt[port, PT_Q_BYTES] + pt[port, PT_Q_BYTES + 1] + mtu > port_cap)
            )
            if full or nfree == 0:
                stats[S_BG_DROPPED] += 1
            else:
                nfree -= 1
                pk = free[nfree]
                pkt[pk, PK_DATA] = _arrive(pk, -1)  # background: no flow
                pkt[pk, PK_KIND] = KIND_DATA
                pkt[pk, PK_IN] = -1  # not flow-controlled (it has no upstream here)
                pr = 1 if mode == MODE_PQ else 0
                if pfc:
                    sw_used[sw] += mtu
                _enq(pt, pkt, port, PT_Q_HEAD + pr, PT_Q_TAIL + pr, PT_Q_LEN + pr, pk)
                pt[port, PT_Q_BYTES + pr] += mtu
                if pt[port, PT_PENDING] == 0:
                    pt[port, PT_PENDING] = 1
                    eq.push(q, max(now, pt[port, PT_BUSY]), EV_PORT_TXDONE | (port << 4))
            eq.push(q, now + bg_gap[b], EV_BG | (b << 4))
            continue

        if ev == EV_PFC:
            # a PAUSE (XOFF) or resume (XON) frame reaches the upstream end of link x // 4
            link = x >> 2
            pr = (x >> 1) & 1
            on = x & 1
            was = pt[link, PT_PAUSED] | pt[link, PT_PAUSED + 1]
            pt[link, PT_PAUSED + pr] = on
            now_p = pt[link, PT_PAUSED] | pt[link, PT_PAUSED + 1]
            if now_p and not was:
                pt[link, PT_PAUSED_SINCE] = now
            elif was and not now_p:
                stats[S_PAUSED_PS] += now - pt[link, PT_PAUSED_SINCE]
            if on == 0 and pt[link, PT_PENDING] == 0:
                if link < n_hosts:
                    if pt[link, PT_GRP_AVAIL] + pt[link, PT_A_LEN] > 0:
                        pt[link, PT_PENDING] = 1
                        eq.push(q, max(now, pt[link, PT_BUSY]), EV_NIC_TXDONE | (link << 4))
                elif pt[link, PT_Q_LEN + pr] > 0:
                    pt[link, PT_PENDING] = 1
                    eq.push(q, max(now, pt[link, PT_BUSY]), EV_PORT_TXDONE | (link << 4))
            continue
    if q[eq.SIZE] < 0:
        stats[S_ERROR] |= ERR_HEAP
    if jobs_left > 0 and stats[S_ERROR] == 0:
        stats[S_ERROR] |= ERR_STUCK
    stats[S_END_PS] = now
    if tracing:
        for f in range(nf):
            if fl[f, FL_QP_DONE] == 0:  # the run ended first (its last ACKs still on the way)
                _trace(cc_trace, stats, now, f, TR_DONE, fl, fr)
    stats[S_MAX_SW_USED] = (max_sw_b + mtu - 1) // mtu
    stats[S_HDRM_MAX] = (hdrm_b + mtu - 1) // mtu
    # packets still queued or on a wire when the last job finished (late duplicates, ACKs of
    # the last packets, background)
    for i in range(nfree):
        in_use[free[i]] = False
    for i in range(pool_size):
        if in_use[i]:
            if _flow(pkt, i) < 0:
                stats[S_BG_LEFT] += 1
            elif pkt[i, PK_KIND] != KIND_DATA:
                stats[S_CTRL_LEFT] += 1
            else:
                stats[S_LEFT] += 1
    return n_samples
