"""The event loop: one numba function over preallocated arrays (`topology.py` builds them).

Time is in picoseconds (int64). Events sit in a binary heap keyed by time; the payload packs the
event type in 4 bits and an index above. Per data packet: the sender's pacing timer
(QP_READY), the NIC, then at each switch an ARRIVE (ingress: the golden model's Symphony
algorithm, `symphony_kernel.process`) and the egress FIFO (RED/ECN mark at dequeue on the depth
left behind; drop-tail per port, or with PFC a shared switch buffer whose per-ingress
accounting sends XOFF/XON to the upstream port or NIC, `EV_PFC`), and at the receiver
go-back-N delivery and a CNP. PORT_TXDONE / NIC_TXDONE events exist only while a queue is backed
up, so an uncongested hop costs one event.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation.fabric import symphony_kernel as sk

EV_QP_READY, EV_NIC_TXDONE, EV_ARRIVE, EV_PORT_TXDONE, EV_CNP = range(5)
EV_NACK, EV_RTO, EV_SAMPLE, EV_START, EV_BG, EV_PFC = range(5, 11)

# stats[] indices
S_EVENTS, S_SENT, S_DELIVERED, S_OOO, S_DUP, S_DROPPED = range(6)
S_BG_SENT, S_BG_DONE, S_BG_DROPPED, S_SYM_MARKS, S_QUEUE_MARKS, S_CNPS = range(6, 12)
S_NACKS, S_RTOS, S_MARKS_NOT_OUTPACING, S_HOPS, S_ERROR, S_END_PS = range(12, 18)
S_CE_DELIVERED, S_MAX_QUEUE, S_LEFT, S_BG_LEFT = 18, 19, 20, 21
S_PAUSES, S_MAX_SW_USED, S_HDRM_MAX, S_PAUSED_PS, S_FIELDS = 22, 23, 24, 25, 28
ERR_POOL, ERR_HEAP, ERR_TIMEOUT, ERR_STUCK = 1, 2, 4, 8

WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 6, 7, 8, 10
MODE_BASELINE, MODE_SYMPHONY, MODE_PQ = 0, 1, 2


@njit(cache=True, inline="always")
def _push(ht, hd, hn, t, d):
    i = hn[0]
    if i >= ht.shape[0]:
        return False
    hn[0] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        if ht[parent] <= t:
            break
        ht[i] = ht[parent]
        hd[i] = hd[parent]
        i = parent
    ht[i] = t
    hd[i] = d
    return True


@njit(cache=True, inline="always")
def _pop(ht, hd, hn):
    t0 = ht[0]
    d0 = hd[0]
    n = hn[0] - 1
    hn[0] = n
    if n > 0:
        t = ht[n]
        d = hd[n]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and ht[c + 1] < ht[c]:
                c += 1
            if ht[c] >= t:
                break
            ht[i] = ht[c]
            hd[i] = hd[c]
            i = c
        ht[i] = t
        hd[i] = d
    return t0, d0


@njit(cache=True)
def run(
    seed,
    mode,
    # topology
    port_ser,
    port_switch,
    prop_ps,
    buffer_pkts,
    qthr,
    # PFC (pfc = 0: per-port drop-tail at buffer_pkts; 1: shared switch buffer, PFC)
    pfc,
    sw_buf,
    sw_free0,
    pfc_shift,
    resume_pkts,
    # flows
    f_src,
    f_dst,
    f_job,
    f_step,
    f_npk,
    f_path,
    f_plen,
    f_slot,
    f_sig,
    f_psn0,
    succ_ptr,
    succ_idx,
    f_npred,
    f_rpath,
    f_rplen,
    f_start,
    n_hosts,
    n_jobs,
    n_steps,
    # symphony
    prm,
    n_switches,
    late_start_ps,
    log_tab,
    alpha_tab,
    thr_tab,
    # dcqcn (rates in Gb/s, times in ps)
    line_gbps,
    mtu_bits,
    g,
    t_alpha,
    t_dec,
    t_inc,
    fast_recovery,
    ai,
    hai,
    min_rate,
    rto_ps,
    # background
    bg_port,
    bg_t0,
    bg_t1,
    bg_gap,
    # sampling, limits
    sample_ps,
    max_samples,
    max_ps,
    pool_size,
    # outputs
    f_done,
    f_begin,
    job_end,
    ov_series,
    rx_series,
    job_maxov,
    stats,
    js,
):
    np.random.seed(seed)
    nf = f_src.shape[0]
    n_ports = port_ser.shape[0]
    flows_tab = np.zeros((n_switches, 65536), dtype=np.int64)

    # event heap
    heap_cap = pool_size + 8 * nf + 12 * n_ports + bg_port.shape[0] + 1024
    ht = np.empty(heap_cap, dtype=np.int64)
    hd = np.empty(heap_cap, dtype=np.int64)
    hn = np.zeros(1, dtype=np.int64)

    # packet pool
    pk_flow = np.empty(pool_size, dtype=np.int64)
    pk_idx = np.empty(pool_size, dtype=np.int64)
    pk_hop = np.empty(pool_size, dtype=np.int64)
    pk_ce = np.empty(pool_size, dtype=np.int64)
    pk_prio = np.empty(pool_size, dtype=np.int64)
    pk_in = np.empty(pool_size, dtype=np.int64)  # ingress link (upstream egress port), -1 none
    free = np.arange(pool_size - 1, -1, -1).astype(np.int64)
    nfree = pool_size

    # ports: two FIFOs (priority 0 served first; only PQ mode uses 1)
    qcap = sw_buf if pfc else buffer_pkts
    q_buf = np.empty((n_ports, 2, qcap), dtype=np.int64)
    q_head = np.zeros((n_ports, 2), dtype=np.int64)
    q_len = np.zeros((n_ports, 2), dtype=np.int64)
    busy = np.zeros(n_ports, dtype=np.int64)
    pending = np.zeros(n_ports, dtype=np.int64)
    # PFC: per switch, packets held; per link (= upstream egress port) and priority, packets
    # held at the downstream switch, whether we sent XOFF, whether the upstream is paused
    sw_used = np.zeros(n_switches, dtype=np.int64)
    ing = np.zeros((n_ports, 2), dtype=np.int64)
    xoff = np.zeros((n_ports, 2), dtype=np.int64)
    after_xoff = np.zeros((n_ports, 2), dtype=np.int64)
    paused = np.zeros((n_ports, 2), dtype=np.int64)
    paused_since = np.zeros(n_ports, dtype=np.int64)

    # NICs: FIFO of flows whose pacing timer has fired
    per_host = np.zeros(n_hosts, dtype=np.int64)
    for f in range(nf):
        per_host[f_src[f]] += 1
    rq_cap = per_host.max() + 2  # a host's flows can all be ready at once
    rq_buf = np.empty((n_hosts, rq_cap), dtype=np.int64)
    rq_head = np.zeros(n_hosts, dtype=np.int64)
    rq_len = np.zeros(n_hosts, dtype=np.int64)

    # flows
    snd_next = np.zeros(nf, dtype=np.int64)
    snd_sched = np.zeros(nf, dtype=np.int64)
    rcv_exp = np.zeros(nf, dtype=np.int64)
    nack_val = np.zeros(nf, dtype=np.int64)
    nack_last = np.full(nf, -1, dtype=np.int64)
    last_cnp = np.full(nf, -(1 << 60), dtype=np.int64)
    rto_mark = np.full(nf, -1, dtype=np.int64)
    rc = np.full(nf, line_gbps)
    rt = np.full(nf, line_gbps)
    alpha = np.ones(nf)
    stage = np.zeros(nf, dtype=np.int64)
    next_inc = np.full(nf, -1, dtype=np.int64)  # -1: increase timer not running
    alpha_t = np.full(nf, -1, dtype=np.int64)  # -1: alpha timer not running
    f_cls = np.zeros(nf, dtype=np.int64)  # PQ: the flow's class, fixed at its start
    cnp_delay = np.empty(nf, dtype=np.int64)
    for f in range(nf):
        cnp_delay[f] = f_plen[f] * prop_ps + 100_000  # reverse path, high priority, ~64 B

    wait = f_npred.copy()  # predecessors not yet delivered

    # jobs
    active = np.zeros((n_jobs + 1, n_steps), dtype=np.int64)
    distinct = np.zeros(n_jobs + 1, dtype=np.int64)
    left = np.zeros(n_jobs + 1, dtype=np.int64)
    rx_acc = np.zeros(n_jobs + 1, dtype=np.int64)
    for f in range(nf):
        left[f_job[f]] += 1
    jobs_left = 0
    for j in range(1, n_jobs + 1):
        if left[j] > 0:
            jobs_left += 1
    n_samples = 0

    ok = True
    for f in range(nf):
        if f_start[f] >= 0:
            ok &= _push(ht, hd, hn, f_start[f], EV_START | (f << 4))
    for b in range(bg_port.shape[0]):
        ok &= _push(ht, hd, hn, bg_t0[b], EV_BG | (b << 4))
    ok &= _push(ht, hd, hn, 0, EV_SAMPLE)

    now = 0
    while hn[0] > 0 and jobs_left > 0 and ok:
        now, d = _pop(ht, hd, hn)
        stats[S_EVENTS] += 1
        ev = d & 15
        x = d >> 4
        if now > max_ps:
            stats[S_ERROR] |= ERR_TIMEOUT
            break

        if ev == EV_ARRIVE:
            pk = x
            f = pk_flow[pk]
            hop = pk_hop[pk]
            if hop == f_plen[f]:
                # the receiver: go-back-N
                idx = pk_idx[pk]
                exp = rcv_exp[f]
                if idx == exp:
                    rcv_exp[f] = exp + 1
                    stats[S_DELIVERED] += 1
                    rx_acc[f_job[f]] += 1
                    if pk_ce[pk]:
                        stats[S_CE_DELIVERED] += 1
                        if now - last_cnp[f] >= t_dec:
                            last_cnp[f] = now
                            stats[S_CNPS] += 1
                            ok &= _push(ht, hd, hn, now + cnp_delay[f], EV_CNP | (f << 4))
                    if exp + 1 == f_npk[f]:
                        f_done[f] = now
                        j = f_job[f]
                        s = f_step[f]
                        active[j, s] -= 1
                        if active[j, s] == 0:
                            distinct[j] -= 1
                        left[j] -= 1
                        if left[j] == 0:
                            job_end[j] = now
                            jobs_left -= 1
                        for e in range(succ_ptr[f], succ_ptr[f + 1]):
                            nxt = succ_idx[e]
                            wait[nxt] -= 1
                            if wait[nxt] == 0:
                                ok &= _push(ht, hd, hn, now, EV_START | (nxt << 4))
                elif idx > exp:
                    stats[S_OOO] += 1
                    if nack_last[f] != exp:
                        nack_last[f] = exp
                        nack_val[f] = exp
                        stats[S_NACKS] += 1
                        ok &= _push(ht, hd, hn, now + cnp_delay[f], EV_NACK | (f << 4))
                else:
                    stats[S_DUP] += 1
                free[nfree] = pk
                nfree += 1
                continue
            # a switch: ingress Symphony, then the egress queue
            port = f_path[f, hop]
            sw = port_switch[port]
            prio = f_cls[f]
            stats[S_HOPS] += 1
            if mode == MODE_SYMPHONY:
                idx = pk_idx[pk]
                npk = f_npk[f]
                if npk == 1:
                    opc = WRITE_ONLY
                elif idx == 0:
                    opc = WRITE_FIRST
                elif idx == npk - 1:
                    opc = WRITE_LAST
                else:
                    opc = WRITE_MIDDLE
                j = f_job[f]
                s = f_step[f]
                _p, thr, _outp = sk.process(
                    js,
                    flows_tab,
                    prm,
                    sw,
                    j,
                    f_slot[f],
                    f_sig[f],
                    s,
                    opc,
                    (f_psn0[f] + idx) & 0xFFFFFF,
                    (now // 1000) & 0xFFFFFFFF,
                    log_tab,
                    alpha_tab,
                    thr_tab,
                )
                if thr > 0 and now >= late_start_ps:
                    coin = np.random.randint(0, sk.COIN_RANGE) if thr < sk.COIN_RANGE else 0
                    if sk.decide(thr, coin):
                        js[sw, j, sk.JS_MARKS] += 1
                        stats[S_SYM_MARKS] += 1
                        pk_ce[pk] = 1
                        if not sk.step_later(s, js[sw, j, sk.JS_STEP_MIN]):
                            stats[S_MARKS_NOT_OUTPACING] += 1
            pk_prio[pk] = prio
            # enqueue (drop-tail on the port's total, or on the switch's shared buffer)
            tot = q_len[port, 0] + q_len[port, 1]
            if (sw_used[sw] >= sw_buf) if pfc else (tot >= buffer_pkts):
                stats[S_DROPPED] += 1
                free[nfree] = pk
                nfree += 1
                continue
            q_buf[port, prio, (q_head[port, prio] + q_len[port, prio]) % qcap] = pk
            q_len[port, prio] += 1
            if pfc:
                link = f_path[f, hop - 1]
                pk_in[pk] = link
                sw_used[sw] += 1
                if sw_used[sw] > stats[S_MAX_SW_USED]:
                    stats[S_MAX_SW_USED] = sw_used[sw]
                ing[link, prio] += 1
                if xoff[link, prio]:
                    # arrived after our XOFF: what the headroom has to hold
                    after_xoff[link, prio] += 1
                    if after_xoff[link, prio] > stats[S_HDRM_MAX]:
                        stats[S_HDRM_MAX] = after_xoff[link, prio]
                elif ing[link, prio] > (sw_free0[sw] - sw_used[sw]) >> pfc_shift:
                    xoff[link, prio] = 1
                    after_xoff[link, prio] = 0
                    stats[S_PAUSES] += 1
                    ok &= _push(
                        ht, hd, hn, now + prop_ps, EV_PFC | ((link * 4 + prio * 2 + 1) << 4)
                    )
            if tot + 1 > stats[S_MAX_QUEUE]:
                stats[S_MAX_QUEUE] = tot + 1
            if pending[port] == 0:
                if busy[port] <= now:
                    ev = EV_PORT_TXDONE  # start now, below
                else:
                    pending[port] = 1
                    ok &= _push(ht, hd, hn, busy[port], EV_PORT_TXDONE | (port << 4))
                    continue
            else:
                continue
            x = port

        if ev == EV_PORT_TXDONE:
            port = x
            pending[port] = 0
            if q_len[port, 0] > 0 and paused[port, 0] == 0:
                pr = 0
            elif q_len[port, 1] > 0 and paused[port, 1] == 0:
                pr = 1
            else:
                continue
            pk = q_buf[port, pr, q_head[port, pr]]
            q_head[port, pr] = (q_head[port, pr] + 1) % qcap
            q_len[port, pr] -= 1
            busy[port] = now + port_ser[port]
            if q_len[port, 0] + q_len[port, 1] > 0:
                pending[port] = 1
                ok &= _push(ht, hd, hn, busy[port], EV_PORT_TXDONE | (port << 4))
            if pfc:
                sw = port_switch[port]
                sw_used[sw] -= 1
                link = pk_in[pk]
                if link >= 0:
                    ing[link, pr] -= 1
                    if xoff[link, pr]:
                        thr_pfc = (sw_free0[sw] - sw_used[sw]) >> pfc_shift
                        if ing[link, pr] == 0 or ing[link, pr] + resume_pkts <= thr_pfc:
                            xoff[link, pr] = 0
                            ok &= _push(
                                ht, hd, hn, now + prop_ps, EV_PFC | ((link * 4 + pr * 2) << 4)
                            )
            f = pk_flow[pk]
            if f < 0:
                stats[S_BG_DONE] += 1
                free[nfree] = pk
                nfree += 1
                continue
            # RED/ECN on the depth this packet leaves behind in its queue
            depth = q_len[port, pr]
            if depth >= qthr.shape[0]:
                depth = qthr.shape[0] - 1
            th = qthr[depth]
            if th > 0 and (th >= sk.COIN_RANGE or np.random.randint(0, sk.COIN_RANGE) < th):
                stats[S_QUEUE_MARKS] += 1
                pk_ce[pk] = 1
            pk_hop[pk] += 1
            ok &= _push(ht, hd, hn, busy[port] + prop_ps, EV_ARRIVE | (pk << 4))
            continue

        if ev == EV_START:
            f = x
            j = f_job[f]
            s = f_step[f]
            f_begin[f] = now
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
                f_cls[f] = 1 if s > s_min else 0
            snd_sched[f] = 1
            ev = EV_QP_READY  # below

        if ev == EV_QP_READY:
            f = x
            h = f_src[f]
            rq_buf[h, (rq_head[h] + rq_len[h]) % rq_cap] = f
            rq_len[h] += 1
            if busy[h] > now or pending[h]:
                if pending[h] == 0:
                    pending[h] = 1
                    ok &= _push(ht, hd, hn, busy[h], EV_NIC_TXDONE | (h << 4))
                continue
            ev = EV_NIC_TXDONE
            x = h

        if ev == EV_NIC_TXDONE:
            h = x
            pending[h] = 0
            f = -1
            m = rq_len[h]
            while m > 0:
                m -= 1
                c = rq_buf[h, rq_head[h]]
                rq_head[h] = (rq_head[h] + 1) % rq_cap
                rq_len[h] -= 1
                if f_done[c] < 0 and snd_next[c] < f_npk[c]:
                    if paused[h, f_cls[c]]:
                        # PFC holds this flow's priority on the host link: back of the queue
                        rq_buf[h, (rq_head[h] + rq_len[h]) % rq_cap] = c
                        rq_len[h] += 1
                        continue
                    f = c
                    break
                snd_sched[c] = 0
            if f < 0:
                continue
            if nfree == 0:
                stats[S_ERROR] |= ERR_POOL
                break
            nfree -= 1
            pk = free[nfree]
            pk_flow[pk] = f
            pk_idx[pk] = snd_next[f]
            pk_hop[pk] = 1
            pk_ce[pk] = 0
            snd_next[f] += 1
            stats[S_SENT] += 1
            busy[h] = now + port_ser[h]
            ok &= _push(ht, hd, hn, busy[h] + prop_ps, EV_ARRIVE | (pk << 4))
            if rq_len[h] > 0:
                pending[h] = 1
                ok &= _push(ht, hd, hn, busy[h], EV_NIC_TXDONE | (h << 4))
            # DCQCN: catch the timers up, then pace the next packet at the current rate
            if alpha_t[f] >= 0 and now - alpha_t[f] >= t_alpha:
                k = (now - alpha_t[f]) // t_alpha
                alpha[f] *= (1.0 - g) ** k
                alpha_t[f] += k * t_alpha
            while next_inc[f] >= 0 and next_inc[f] <= now:
                if stage[f] < fast_recovery:
                    pass
                elif stage[f] == fast_recovery:
                    rt[f] = min(rt[f] + ai, line_gbps)
                else:
                    rt[f] = min(rt[f] + hai, line_gbps)
                rc[f] = (rt[f] + rc[f]) / 2
                stage[f] += 1
                next_inc[f] += t_inc
                if rc[f] >= line_gbps * 0.999999 and rt[f] >= line_gbps:
                    rc[f] = line_gbps
                    next_inc[f] = -1
            if snd_next[f] < f_npk[f]:
                gap = np.int64(mtu_bits / rc[f] * 1000.0)
                ok &= _push(ht, hd, hn, now + gap, EV_QP_READY | (f << 4))
            else:
                snd_sched[f] = 0
                rto_mark[f] = rcv_exp[f]
                ok &= _push(ht, hd, hn, now + rto_ps, EV_RTO | (f << 4))
            continue

        if ev == EV_CNP:
            f = x
            if f_done[f] >= 0:
                continue
            if alpha_t[f] >= 0:
                k = (now - alpha_t[f]) // t_alpha
                alpha[f] *= (1.0 - g) ** k
            alpha[f] = (1.0 - g) * alpha[f] + g
            alpha_t[f] = now
            if stage[f] != 0:
                rt[f] = rc[f]
            rc[f] = max(min_rate, rc[f] * (1.0 - alpha[f] / 2.0))
            stage[f] = 0
            next_inc[f] = now + t_inc
            continue

        if ev in (EV_NACK, EV_RTO):
            f = x
            if f_done[f] >= 0:
                continue
            if ev == EV_NACK:
                back = nack_val[f]
            else:
                if snd_sched[f]:
                    continue  # sending again: a new timer is armed when it goes idle
                if rcv_exp[f] != rto_mark[f]:
                    rto_mark[f] = rcv_exp[f]  # progress since the timer was armed: wait more
                    ok &= _push(ht, hd, hn, now + rto_ps, EV_RTO | (f << 4))
                    continue
                back = rcv_exp[f]
                stats[S_RTOS] += 1
            if snd_next[f] > back:
                snd_next[f] = back
            if snd_sched[f] == 0 and snd_next[f] < f_npk[f]:
                snd_sched[f] = 1
                ok &= _push(ht, hd, hn, now, EV_QP_READY | (f << 4))
            continue

        if ev == EV_SAMPLE:
            if n_samples < max_samples:
                for j in range(1, n_jobs + 1):
                    ov_series[j, n_samples] = distinct[j]
                    rx_series[j, n_samples] = rx_acc[j]
                    rx_acc[j] = 0
                n_samples += 1
            ok &= _push(ht, hd, hn, now + sample_ps, EV_SAMPLE)
            continue

        if ev == EV_BG:
            b = x
            if now >= bg_t1[b]:
                continue
            port = bg_port[b]
            stats[S_BG_SENT] += 1
            tot = q_len[port, 0] + q_len[port, 1]
            sw = port_switch[port]
            full = (sw_used[sw] >= sw_buf) if pfc else (tot >= buffer_pkts)
            if full or nfree == 0:
                stats[S_BG_DROPPED] += 1
            else:
                nfree -= 1
                pk = free[nfree]
                pk_flow[pk] = -1
                pk_in[pk] = -1  # not flow-controlled (it has no upstream here)
                pr = 1 if mode == MODE_PQ else 0
                if pfc:
                    sw_used[sw] += 1
                q_buf[port, pr, (q_head[port, pr] + q_len[port, pr]) % qcap] = pk
                q_len[port, pr] += 1
                if pending[port] == 0:
                    pending[port] = 1
                    ok &= _push(ht, hd, hn, max(now, busy[port]), EV_PORT_TXDONE | (port << 4))
            ok &= _push(ht, hd, hn, now + bg_gap[b], EV_BG | (b << 4))
            continue

        if ev == EV_PFC:
            # a PAUSE (XOFF) or resume (XON) frame reaches the upstream end of link x // 4
            link = x >> 2
            pr = (x >> 1) & 1
            on = x & 1
            was = paused[link, 0] | paused[link, 1]
            paused[link, pr] = on
            now_p = paused[link, 0] | paused[link, 1]
            if now_p and not was:
                paused_since[link] = now
            elif was and not now_p:
                stats[S_PAUSED_PS] += now - paused_since[link]
            if on == 0 and pending[link] == 0:
                if link < n_hosts:
                    if rq_len[link] > 0:
                        pending[link] = 1
                        ok &= _push(ht, hd, hn, max(now, busy[link]), EV_NIC_TXDONE | (link << 4))
                elif q_len[link, pr] > 0:
                    pending[link] = 1
                    ok &= _push(ht, hd, hn, max(now, busy[link]), EV_PORT_TXDONE | (link << 4))
            continue
    if not ok:
        stats[S_ERROR] |= ERR_HEAP
    if jobs_left > 0 and stats[S_ERROR] == 0:
        stats[S_ERROR] |= ERR_STUCK
    stats[S_END_PS] = now
    # packets still queued or on a wire when the last job finished (late duplicates, background)
    in_use = np.ones(pool_size, dtype=np.bool_)
    for i in range(nfree):
        in_use[free[i]] = False
    for i in range(pool_size):
        if in_use[i]:
            if pk_flow[i] < 0:
                stats[S_BG_LEFT] += 1
            else:
                stats[S_LEFT] += 1
    return n_samples
