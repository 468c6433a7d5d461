"""`simulate(cfg, seed) -> FabricResult`: build the arrays, run the event kernel, collect the
metrics. Deterministic for a given (cfg, seed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from evaluation.fabric import kernel as kn
from evaluation.fabric import symphony_kernel as sk
from evaluation.fabric.bound import link_load_bound_us
from evaluation.fabric.collectives import lockstep_bound_us
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.dcqcn import bdp_bytes
from evaluation.fabric.kernel_io import Background, Flows, Limits, Nic, Outputs, Symphony, Topology
from evaluation.fabric.kernel_state import new_state, register_rows
from evaluation.fabric.topology import (
    CustomFlows,
    Fabric,
    Workload,
    background_sources,
    build_fabric,
    build_workload,
    custom_workload,
)
from symphony.model import arithmetic as ar
from symphony.model.tables import queue_mark_threshold

TICK_NS = 1  # the switch timestamp unit the kernel passes to the golden algorithm (Tofino's)
PS = 1_000_000  # ps per us


@dataclass
class FabricResult:
    seed: int
    cct_us: list[float]  # per job, from its first flow's start to its last flow's delivery
    max_overlap: list[int]  # per job, the most distinct steps in flight at once
    mean_overlap: list[float]  # per job, time-average of the sampled overlap while it ran
    overlap_series: np.ndarray  # [job, sample]
    rx_gbps_series: np.ndarray  # [job, sample] goodput per sample interval
    sample_us: float
    step_span_us: np.ndarray  # [job, step] last minus first delivery of the step's flows
    stats: dict[str, int]
    wall_s: float
    lockstep_us: float
    bound_us: float = 0.0  # link-load lower bound of this run's paths (`bound.py`)
    flow_done_us: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    flow_begin_us: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    cc_trace: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 8)))
    # Symphony's mark decisions before the backlog gate, as a switch's `marks` counter counts
    # them (stats' `symphony_marks` are the CE marks that passed the gate)
    symphony_decisions: int = 0

    @property
    def cct_max_us(self) -> float:
        return max(self.cct_us)


STAT_NAMES = {
    "events": kn.S_EVENTS,
    "sent": kn.S_SENT,
    "delivered": kn.S_DELIVERED,
    "out_of_order": kn.S_OOO,
    "duplicate": kn.S_DUP,
    "dropped": kn.S_DROPPED,
    "bg_sent": kn.S_BG_SENT,
    "bg_done": kn.S_BG_DONE,
    "bg_dropped": kn.S_BG_DROPPED,
    "symphony_marks": kn.S_SYM_MARKS,
    "queue_marks": kn.S_QUEUE_MARKS,
    "cnps": kn.S_CNPS,  # ACKs and NACKs that carry the CNP flag
    "nacks": kn.S_NACKS,
    "rtos": kn.S_RTOS,
    "acks": kn.S_ACKS,
    "acks_received": kn.S_CTRL_DONE,
    "acks_dropped": kn.S_CTRL_DROPPED,
    "acks_left_in_flight": kn.S_CTRL_LEFT,
    "rate_cuts": kn.S_CUTS,
    "marks_not_outpacing": kn.S_MARKS_NOT_OUTPACING,
    "switch_hops": kn.S_HOPS,
    "error": kn.S_ERROR,
    "ce_delivered": kn.S_CE_DELIVERED,
    "max_queue": kn.S_MAX_QUEUE,
    "left_in_flight": kn.S_LEFT,
    "bg_left_in_flight": kn.S_BG_LEFT,
    "pfc_pauses": kn.S_PAUSES,
    "max_switch_buffer": kn.S_MAX_SW_USED,
    "pfc_headroom_used": kn.S_HDRM_MAX,
    "pfc_paused_ps": kn.S_PAUSED_PS,
}


def queue_thresholds(cfg: FabricConfig) -> np.ndarray:
    """The golden model's RED ramp per queue depth (in MTU packets), up to always-mark."""
    return np.array(
        [queue_mark_threshold(d, cfg.red) for d in range(cfg.red.k_max + 2)], dtype=np.int64
    )


def pfc_free_buffer(cfg: FabricConfig, fab: Fabric) -> np.ndarray:
    """Per switch, the shared buffer minus the headroom reserved for every ingress queue (HPCC:
    buffer - total headroom; its dynamic XOFF threshold is (this - used) >> pfc_shift). A
    switch has one ingress port per egress port it owns (links are full duplex)."""
    classes = 2 if cfg.mode == "pq" else 1
    owned = fab.port_switch[fab.port_switch >= 0]
    n_in = np.bincount(owned, minlength=fab.n_switches).astype(np.int64)
    return cfg.switch_buffer_pkts - n_in * classes * cfg.headroom_pkts


def flow_windows(cfg: FabricConfig, f_plen: np.ndarray) -> np.ndarray:
    """Per flow, HPCC's window in bytes (0: none): with GLOBAL_T the largest BDP of any host
    pair (the longest path: across the core, the spine, or the longest the workload has),
    else the BDP of the flow's own path; every hop at the host links' rate (imbalance and
    faster uplinks are not counted)."""
    d = cfg.cc
    if not d.has_win:
        return np.zeros_like(f_plen)
    if d.global_t:
        widest = 6 if cfg.n_pods > 1 else 4 if cfg.n_tors > 1 else 2
        longest = max(widest, int(f_plen.max(initial=0)))
        win = np.full_like(
            f_plen, bdp_bytes(longest, cfg.prop_ns, cfg.link_gbps, cfg.payload_bytes)
        )
    else:
        win = np.array(
            [bdp_bytes(int(n), cfg.prop_ns, cfg.link_gbps, cfg.payload_bytes) for n in f_plen],
            dtype=np.int64,
        )
    # HPCC's window counts payload bytes in flight; the kernel counts whole packets of `mtu`
    # bytes, so the same number of packets fits.
    return win * cfg.mtu // cfg.payload_bytes


# (seed, mode, inputs..., outputs) -> samples written: `run_kernel`, or a reference kernel
# behind the same inputs (bench/reference_kernel_113030d.py)
KernelCall = Callable[[int, int, Topology, Flows, Symphony, Nic, Background, Limits, Outputs], int]


def symphony_units(cfg: FabricConfig, fab: Fabric) -> tuple[np.ndarray, int]:
    """Symphony.unit for this config, and the number of units (FabricConfig.symphony_state,
    symphony_at)."""
    sw = fab.port_switch
    if cfg.symphony_state == "port":
        unit, n = np.where(sw >= 0, np.arange(fab.n_ports), -1), fab.n_ports
    else:
        unit, n = sw.copy(), fab.n_switches
    if cfg.symphony_at == "tor":
        unit[~np.isin(sw, np.unique(fab.tor_of))] = -1
    return unit.astype(np.int64), n


def run_kernel(
    seed: int,
    mode: int,
    topo: Topology,
    flows: Flows,
    sym: Symphony,
    nic: Nic,
    bg: Background,
    lim: Limits,
    out: Outputs,
) -> int:
    """Today's event kernel on fresh working arrays."""
    state = new_state(topo, flows, nic, bg, lim, out.js.shape[0])
    return kn.run(seed, mode, topo, flows, sym, nic, bg, lim, out, state)


# builds a run's workload from its fabric and generator (`training.py`'s training iterations)
WorkloadBuilder = Callable[[FabricConfig, Fabric, np.random.Generator], Workload]
FlowsArg = list[tuple[int, int, int, int, int]] | CustomFlows | WorkloadBuilder | None


def prepare(
    cfg: FabricConfig, seed: int, flows: FlowsArg
) -> tuple[np.random.Generator, Fabric, Workload]:
    """A run's fabric and workload, drawn from the seed in the run's order (`simulate`; the ns-3
    cross-validation exports the same workload: `ns3_export`); the generator continues with the
    run's later draws."""
    cfg.validate()
    rng = np.random.default_rng(seed)
    fab = build_fabric(cfg)
    if flows is None:
        wl = build_workload(cfg, fab, rng)
    elif callable(flows):
        wl = flows(cfg, fab, rng)
    else:
        wl = custom_workload(cfg, fab, flows)
    return rng, fab, wl


def simulate(
    cfg: FabricConfig,
    seed: int,
    flows: FlowsArg = None,
    ce_psn: dict[int, list[int]] | None = None,
    cc_trace_rows: int = 0,
    kernel: KernelCall = run_kernel,
    trace_io: bool = False,
    hop_trace_us: float = -1.0,
) -> FabricResult:
    """One run. `flows` replaces the ring workload by independent flows
    (`topology.custom_workload`). For tests: `ce_psn` {flow: PSN indices} are CE-marked by
    the sender's NIC; `cc_trace_rows` > 0 records the senders' DCQCN events
    (`FabricResult.cc_trace`, columns as `kernel.TR_*` say), with `trace_io` also every data
    frame its NIC sends and every ACK/NACK it receives (the NIC conformance suite's replay,
    `evaluation/nic/conformance.py`); `hop_trace_us` >= 0 also every packet's arrival at a
    switch until then (`kernel.TR_HOP`: the packet-level comparison with ns-3, issue 45).
    `kernel` runs the event loop (bench/fabric_speed.py passes the reference kernel)."""
    rng, fab, wl = prepare(cfg, seed, flows)
    bg = background_sources(cfg, fab, rng)
    nf = wl.f_src.shape[0]
    mode = {"baseline": kn.MODE_BASELINE, "symphony": kn.MODE_SYMPHONY, "pq": kn.MODE_PQ}[cfg.mode]

    prm = np.zeros((wl.n_jobs + 1, sk.P_FIELDS), dtype=np.int64)
    params = cfg.symphony if cfg.mode == "symphony" else cfg.symphony.merged({"k": 0.0})
    for j in range(1, wl.n_jobs + 1):
        prm[j] = sk.action_row(params.to_action_params(TICK_NS))
    unit, n_units = symphony_units(cfg, fab)
    js = np.zeros((n_units, wl.n_jobs + 1, sk.JS_FIELDS), dtype=np.int64)
    js[:, :, sk.JS_ALPHA] = 1

    bound = lockstep_bound_us(cfg)
    link_bound = link_load_bound_us(fab, wl)
    max_samples = int(cfg.max_ms * 1000 / cfg.sample_us) + 2
    max_samples = min(max_samples, int(max(bound, link_bound) * 6 / cfg.sample_us) + 1000)
    ov = np.zeros((wl.n_jobs + 1, max_samples), dtype=np.int64)
    rx = np.zeros((wl.n_jobs + 1, max_samples), dtype=np.int64)
    f_done = np.full(nf, -1, dtype=np.int64)
    f_begin = np.full(nf, -1, dtype=np.int64)
    job_end = np.full(wl.n_jobs + 1, -1, dtype=np.int64)
    job_maxov = np.zeros(wl.n_jobs + 1, dtype=np.int64)
    stats = np.zeros(kn.S_FIELDS, dtype=np.int64)
    d = cfg.cc
    # data packets, plus their ACKs (counted in bytes by the buffers, so many more can wait)
    if cfg.pfc:
        pool = 2 * fab.n_switches * cfg.switch_buffer_pkts + 64 * cfg.hosts + 4096
    else:
        pool = fab.n_ports * cfg.buffer_pkts + 64 * cfg.hosts + 4096
    pool += 2 * nf
    if pool > kn.PK_MASK or nf >= 1 << 31:  # what an ARRIVE event's payload can name
        raise ValueError(f"too large for the kernel: {pool} packets in flight, {nf} flows")
    sw_free0 = pfc_free_buffer(cfg, fab)
    log_tab, alpha_tab, thr_tab = _tables()
    width = max((len(v) for v in (ce_psn or {}).values()), default=0)
    f_ce_psn = np.full((nf, width), -1, dtype=np.int64)
    for f, psns in (ce_psn or {}).items():
        f_ce_psn[f, : len(psns)] = psns
    cc_trace = np.zeros((cc_trace_rows, 8))

    topo = Topology(
        port_ser=fab.port_ser_ps,
        port_switch=fab.port_switch,
        prop_ps=cfg.prop_ns * 1000,
        buffer_pkts=cfg.buffer_pkts,
        qthr=queue_thresholds(cfg),
        pfc=int(cfg.pfc),
        sw_buf=cfg.switch_buffer_pkts,
        sw_free0=sw_free0,
        pfc_shift=cfg.pfc_shift,
        resume_pkts=cfg.pfc_resume_pkts,
        n_hosts=cfg.hosts,
        n_switches=fab.n_switches,
    )
    fl = Flows(
        src=wl.f_src,
        dst=wl.f_dst,
        job=wl.f_job,
        step=wl.f_step,
        npk=wl.f_npk,
        path=wl.f_path,
        plen=wl.f_plen,
        slot=wl.f_slot,
        slot_row=register_rows(wl.f_slot),
        sig=wl.f_sig,
        psn0=wl.f_psn0,
        succ_ptr=wl.dag.succ_ptr,
        succ_idx=wl.dag.succ_idx,
        npred=wl.dag.npred,
        rpath=wl.f_rpath,
        rplen=wl.f_rplen,
        start=wl.f_start_ps,
        win=flow_windows(cfg, wl.f_plen),
        ce_psn=f_ce_psn,
        delay=wl.f_delay_ps if wl.f_delay_ps.size else np.zeros(nf, dtype=np.int64),
        n_jobs=wl.n_jobs,
        n_steps=wl.n_steps,
    )
    sym = Symphony(
        prm=prm,
        unit=unit,
        late_start_ps=round(cfg.late_start_us * PS),
        log_tab=log_tab,
        alpha_tab=alpha_tab,
        thr_tab=thr_tab,
    )
    nic = Nic(
        line_gbps=cfg.link_gbps,
        mtu=cfg.mtu,
        g=d.g,
        t_alpha=round(d.t_alpha_us * PS),
        t_dec=round(d.t_dec_us * PS),
        t_inc=round(d.t_inc_us * PS),
        fast_recovery=d.fast_recovery,
        ai=d.ai_gbps,
        hai=d.hai_gbps,
        min_rate=d.min_gbps,
        clamp_tgt=d.clamp_target_rate,
        rate_first_cnp=d.rate_on_first_cnp,
        var_win=d.var_win,
        ack_bytes=d.ack_bytes,
        ack_ctrl=d.ack_queue in ("control", "control-bmv2"),
        ack_own_rate=d.ack_queue == "control-bmv2",
        ack_hi_nic=d.ack_high_prio,
        nack_ps=round(d.nack_interval_us * PS),
        cnp_int_ps=round(d.cnp_interval_us * PS),
        rto_ps=0 if cfg.pfc else round(cfg.rto_us * PS),  # HPCC has no timeout; lossy needs one
        paper=d.rules == "dcqcn-paper",
        byte_counter=d.byte_counter_bytes if d.rules == "dcqcn-paper" else 0,
        alpha_init=d.alpha_init,
        trace_io=trace_io,
        ack_frames=d.ack_frames,
    )
    bgs = Background(*bg)
    lim = Limits(
        sample_ps=round(cfg.sample_us * PS),
        max_samples=max_samples,
        max_ps=round(cfg.max_ms * 1000 * PS),
        pool_size=pool,
        hop_trace_ps=round(hop_trace_us * PS) if hop_trace_us >= 0 else -1,
    )
    out = Outputs(
        f_done=f_done,
        f_begin=f_begin,
        job_end=job_end,
        ov_series=ov,
        rx_series=rx,
        job_maxov=job_maxov,
        stats=stats,
        js=js,
        cc_trace=cc_trace,
    )
    t0 = time.perf_counter()
    n_samples = kernel(seed, mode, topo, fl, sym, nic, bgs, lim, out)
    wall = time.perf_counter() - t0
    st = {name: int(stats[i]) for name, i in STAT_NAMES.items()}
    st["end_ps"] = int(stats[kn.S_END_PS])

    cct, mean_ov = [], []
    spans = np.zeros((wl.n_jobs, wl.n_steps))
    for j in range(1, wl.n_jobs + 1):
        sel = wl.f_job == j
        start = wl.f_start_ps[sel & (wl.f_start_ps >= 0)].min()
        end = job_end[j] if job_end[j] >= 0 else st["end_ps"]
        cct.append((end - start) / PS)
        first, last = int(start // (cfg.sample_us * PS)), int(end // (cfg.sample_us * PS))
        seg = ov[j, first : min(last + 1, n_samples)]
        mean_ov.append(float(seg.mean()) if seg.size else 0.0)
        for s in range(wl.n_steps):
            done = f_done[sel & (wl.f_step == s)]
            ok = done.size and (done >= 0).all()  # jobs of other lengths have no step s
            spans[j - 1, s] = (done.max() - done.min()) / PS if ok else np.nan
    pkt_bits = cfg.mtu * 8
    return FabricResult(
        seed=seed,
        cct_us=cct,
        max_overlap=[int(v) for v in job_maxov[1:]],
        mean_overlap=mean_ov,
        overlap_series=ov[1:, :n_samples].copy(),
        rx_gbps_series=rx[1:, :n_samples] * pkt_bits / (cfg.sample_us * 1000),
        sample_us=cfg.sample_us,
        step_span_us=spans,
        stats=st,
        wall_s=wall,
        lockstep_us=bound,
        bound_us=link_bound,
        flow_done_us=f_done / PS,
        flow_begin_us=f_begin / PS,
        cc_trace=cc_trace[: stats[kn.S_TRACE_N]].copy(),
        symphony_decisions=int(js[:, 1:, sk.JS_MARKS].sum()),
    )


_TABLES: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    global _TABLES
    if _TABLES is None:
        _TABLES = sk.golden_tables()
    return _TABLES


assert ar.COIN_RANGE == sk.COIN_RANGE
