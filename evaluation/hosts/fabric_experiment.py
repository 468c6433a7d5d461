"""The paper's Fig. 1 in real frames: ring all-reduces of DCQCN hosts across a bmv2 leaf-spine.

    python -m evaluation.hosts.fabric_experiment                 # make experiment-fabric
    python -m evaluation.hosts.fabric_experiment --seeds 1 --chunk 100    # a quick look

The fabric (`symphony_tools.fabric`: leaves x spines, hosts in namespaces, every egress queue an
emulated link) runs with the controller on its topology. Each run allocates a job by its hosts
through the controller's API (the controller derives the switches) and runs the fabric
simulator's collective (`evaluation.fabric.collectives.build_sends`: Astra-Sim's ring
all-reduce, members on different leaves, the step in the UDP source port, so every step
re-hashes onto a spine) on the emulated DCQCN hosts (`collective.py`). Per run: the collective's
completion time (CCT), each switch's step overlap over time from its own registers (the
controller's `Get`, sampled by a process of its own: `live_sampler.py`), the ECMP collisions
(messages of different steps on one leaf uplink at once, each message's spine from the data
plane's hash, `model/ecmp.py`), marks per switch, and every lost frame by place (`losses.py`).

The same configuration runs in the fabric simulator (ecmp "switch": the same hash over the same
addresses; the same NIC profile, `--profile`; the same queues and RED) at the real 10 Gb/s, its
times converted to the emulated scale, so each CCT stands beside the kernel's prediction.
Variants, reruns of spoiled runs and resuming work as in `python -m evaluation.hosts`
(docs/experiments.md). Output under --out: runs.csv, sim.csv, spoiled_runs.csv, traces/, PNGs,
summary.md.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any, Literal, get_args

import grpc
import numpy as np
from tqdm import tqdm

from evaluation.fabric.collectives import Sends, build_sends, lockstep_bound_us
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.dcqcn import PROFILES, AckQueue
from evaluation.fabric.sim import flow_windows, simulate
from evaluation.hosts import calibration as cal
from evaluation.hosts import experiments as ex
from evaluation.hosts import report, runs
from evaluation.hosts.collective import CollectiveRun, run_collective
from evaluation.hosts.dcqcn import DEFAULT_PROFILE, host_profile
from evaluation.hosts.fabric_losses import loss_topology
from evaluation.hosts.live_sampler import LiveSampler, Sample
from evaluation.hosts.losses import LossMeter
from evaluation.hosts.nic import RT_PRIORITY, Fabric, Host
from evaluation.hosts.testbed import ROOT
from symphony.api import symphony_pb2 as pb
from symphony.model.params import JobParams
from symphony_tools.daemon_process import ControllerProcess
from symphony_tools.fabric import Topology, ip_int
from symphony_tools.fabric import running as fabric_running

ROCE_DPORT = 4791
UDP = 17
HEADER_BYTES = 58  # Ethernet, IPv4, UDP, BTH, ICRC around each data packet's payload
REAL_GBPS = 10.0  # the link the emulated time scale stands for (dcqcn.Scaled)
# A cell whose attempts all spoiled is tried once more after the other cells, DEFER_WAIT_S
# later: the stalls come in bursts (make experiment-fabric of 2026-12-05 lost one cell to 13
# attempts within 5 minutes, 8-18 ms each, while the cells before and after it passed).
DEFERRED_ROUNDS = 1
DEFER_WAIT_S = 60.0
# The variants every fabric run compares: the baseline, the paper's policy (k = 0.01) and the
# shipped one (gate 8, k = 0.001); the CLI's defaults, the regime search's and flow_compare's.
PAPER_K = 0.01
SHIPPED_GATE = (8, 0.001)
VARIANTS = ex.variants([PAPER_K], [SHIPPED_GATE])
AckClass = Literal["data", "priority"]
ACK_CLASSES: tuple[str, ...] = get_args(AckClass)
RESULT_FILES = ("runs.csv", "sim.csv", "spoiled_runs.csv", "traces", "summary.md", "meta.json")


@dataclass(frozen=True)
class FabricSetup:
    """What is fixed across the runs of one invocation (its settings.json)."""

    leaves: int
    spines: int
    hosts_per_leaf: int
    line_pps: float  # every emulated link: each egress queue and each host NIC
    rings: int  # concurrent 1D rings of the one job (the simulator's "rings" topology)
    chunk_packets: int  # packets per send (one step's message)
    queue_depth: int
    jitter_real_us: float  # root sends start uniformly in [0, jitter] (real time, scaled)
    sample_ms: float  # how often the switches' registers are read while a run lasts
    rt_priority: int = RT_PRIORITY
    # bmv2 under the normal scheduler: four switches under SCHED_FIFO on two cores overflow
    # their queues with no queue rate set (docs/experiments.md, Fabric: 3 hops 8,000 frames/s
    # under SCHED_FIFO against 20,000 without)
    switch_rt_priority: int = 0
    # the NIC both instruments run (evaluation/fabric/dcqcn.py PROFILES)
    profile: str = DEFAULT_PROFILE
    # each link's propagation delay, real ns (the simulator's prop_ns; HPCC's 1 us): the hosts
    # hold every frame for its path's, scaled (nic.Fabric prop_s); bmv2 has none of its own at
    # this time scale. It sets HPCC's window (one BDP) in both instruments.
    prop_real_ns: int = 1000
    # where the switches put RoCE ACKs, NAKs and CNPs (docs/ack_priority.md): "data", their
    # flow's queue, or "priority", the ACK class (`ack_priority` on every switch)
    ack_class: AckClass = "data"

    @property
    def topo(self) -> Topology:
        return Topology(self.leaves, self.spines, self.hosts_per_leaf)

    @property
    def ex_setup(self) -> ex.Setup:
        return ex.Setup(
            self.line_pps, dcqcn=host_profile(self.profile), rt_priority=self.rt_priority
        )

    def prop_s(self, src: int, dst: int) -> float:
        """The latency the hosts add to a frame from host `src` to host `dst` (by index),
        emulated seconds: per link of the path (2 under one leaf, 4 across a spine) its
        propagation (`prop_real_ns`, scaled) and one frame's serialisation. bmv2 has neither at
        this time scale: a frame reaches the next hop the moment its rated queue releases it,
        where the simulator's store-and-forward links (and any real one) deliver it one frame
        time and the propagation later. Every frame takes one frame time (bmv2's links are
        rated in frames), an ACK as much as data, as in the simulator's model of the emulation
        (`sim_config`: `ack_bytes` = the frame's size)."""
        hosts = self.topo.hosts
        links = 2 if hosts[src].leaf == hosts[dst].leaf else 4
        return links * (self.prop_real_ns * 1e-9 * self.scale + 1.0 / self.line_pps)

    @property
    def scale(self) -> float:
        """Emulated seconds per real second of the 10 Gb/s link."""
        return self.ex_setup.scaled().scale

    def sim_config(self, variant: ex.Variant) -> FabricConfig:
        """The simulator's configuration of this fabric, collective and variant. bmv2's links
        are rated in packets per second (`set_queue_rate`), so every frame, an ACK or a CNP as
        much as a data frame, takes one packet's time: the simulator's NIC sends them at the
        data frame's size (`ack_bytes`) to model the emulation, not a 10 Gb/s wire. With the
        ACK class on, bmv2 rates its priority queue apart from data's (docs/ack_priority.md), so
        the simulator's class has its own rate too (`ack_queue="control-bmv2"`), not a share of
        the port as on a real switch (`"control"`)."""
        sym = variant.k > 0
        mtu = ex.PAYLOAD + HEADER_BYTES
        ack_queue: AckQueue = "control-bmv2" if self.ack_class == "priority" else "data"
        return FabricConfig(
            hosts=len(self.topo.hosts),
            tors=self.leaves,
            spines=self.spines,
            rings=self.rings,
            chunk_bytes=self.chunk_packets * ex.PAYLOAD,
            link_gbps=REAL_GBPS,
            prop_ns=self.prop_real_ns,
            mtu=mtu,
            header_bytes=HEADER_BYTES,
            buffer_pkts=self.queue_depth,
            pfc=False,
            ecmp="switch",
            host_addrs=tuple(ip_int(h.ip) for h in self.topo.hosts),
            dcqcn=replace(host_profile(self.profile), ack_bytes=mtu, ack_queue=ack_queue),
            start_jitter_ns=round(self.jitter_real_us * 1000),
            mode="symphony" if sym else "baseline",
            symphony=JobParams(k=variant.k or 0.01, gate_depth=variant.gate_depth),
            max_ms=1000.0,
        ).validate()


def attempt_name(v: ex.Variant, seed: int, round_: int, n: int) -> str:
    """The job name (and the controller's request key) of attempt n of a cell in a round: a
    deferred round's attempts count from 0 again, and a reused key would return the first
    round's released job."""
    return f"fab-{v.name}-{seed}-{n}".replace("=", "") + (f"-r{round_}" if round_ else "")


def settings_of(s: FabricSetup, planned_pps: float) -> dict[str, Any]:
    """`planned_pps`: the link rate asked for; `s.line_pps` the one the calibration chose."""
    return {**asdict(s), "dcqcn": s.ex_setup.dcqcn.__dict__, "planned_line_pps": planned_pps}


# -- one run on the fabric ---------------------------------------------------------------------
def ecmp_collisions(topo: Topology, run: CollectiveRun) -> tuple[int, int]:
    """(pairs, messages): pairs of messages of different steps on one leaf uplink at the same
    time, and the messages that crossed the spine layer. Each message's spine is the one the
    data plane's hash gives its 5-tuple (its step in the source port)."""
    by_uplink: dict[tuple[int, int], list[tuple[float, float, int]]] = defaultdict(list)
    crossing = 0
    for m in run.messages:
        src, dst = topo.hosts[m.src], topo.hosts[m.dst]
        if src.leaf == dst.leaf or math.isnan(m.first_tx):
            continue
        crossing += 1
        spine = topo.spine_for(src, dst, UDP, m.step & 0xFFFF, ROCE_DPORT)
        end = m.last_rx if not math.isnan(m.last_rx) else math.inf
        by_uplink[src.leaf, spine].append((m.first_tx, end, m.step))
    pairs = sum(
        1
        for ms in by_uplink.values()
        for a, b in combinations(ms, 2)
        if a[2] != b[2] and a[0] < b[1] and b[0] < a[1]
    )
    return pairs, crossing


def _switch_series(samples: list[Sample], t0: float) -> dict[str, list[tuple[float, int, int]]]:
    """Per switch: (loop time, step overlap, marks) of each sample."""
    out: dict[str, list[tuple[float, int, int]]] = defaultdict(list)
    for t, sw, overlap, _smin, _smax, marks, _pk in samples:
        out[sw].append((t - t0, overlap, marks))
    return dict(out)


class FabricBed:
    """The fabric, its controller and the loss meter, for one invocation."""

    def __init__(self, setup: FabricSetup, run_dir: Path) -> None:
        self.setup = setup
        self.run_dir = run_dir
        self.controller: ControllerProcess | None = None
        self.meter: LossMeter | None = None
        self.switch_realtime = False
        self.fabric: Any = None
        self.api = ""
        self._stack = ExitStack()

    def __enter__(self) -> FabricBed:
        s = self.setup
        try:
            # MTU 1500: the hosts' largest frame is 1,098 bytes (docs/fabric.md: bmv2's capture
            # ring holds more frames the smaller the MTU)
            fabric, self.controller = self._stack.enter_context(
                fabric_running(
                    s.topo, self.run_dir, mtu=1500, ack_priority=s.ack_class == "priority"
                )
            )
            self.fabric = fabric
            self.api = self.controller.api
            fabric.set_queue_depth(s.queue_depth)
            fabric.set_rates(s.line_pps)
            self.switch_realtime = fabric.set_realtime(s.switch_rt_priority)
            self.meter = self._stack.enter_context(LossMeter(loss_topology(s.topo)))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.meter = None
        self.controller = None
        self._stack.close()

    def use(self, setup: FabricSetup) -> None:
        """Run at `setup`'s link rate from now on (the calibration's plan)."""
        self.setup = setup
        self.fabric.set_rates(setup.line_pps)

    def allocate(self, name: str, variant: ex.Variant) -> int:
        """A tag-mode job of every host, its switches derived by the controller."""
        assert self.controller is not None and self.controller.stub is not None
        reply = self.controller.stub.Allocate(
            pb.AllocateRequest(
                request_key=name,
                name=name,
                mode="tag",
                hosts=[h.name for h in self.setup.topo.hosts],
                params=pb.Params(
                    k=variant.k,
                    gate_depth=variant.gate_depth,
                    t_win_us=self.setup.ex_setup.t_win_us(),
                ),
            ),
            timeout=30,
        )
        bad = [r for r in reply.switches if r.status != "installed"]
        if reply.job.state != "active" or bad:
            raise RuntimeError(f"allocate {name}: {bad}")
        return reply.job.job_id

    def job_switches(self, name: str) -> list[str]:
        assert self.controller is not None and self.controller.stub is not None
        return list(self.controller.stub.Get(pb.JobRef(job=name), timeout=30).job.switches)

    def live(self, name: str) -> dict[str, pb.LiveState]:
        assert self.controller is not None and self.controller.stub is not None
        reply = self.controller.stub.Get(pb.JobRef(job=name), timeout=30)
        return {live.switch: live for live in reply.live}

    def release(self, name: str) -> None:
        assert self.controller is not None and self.controller.stub is not None
        try:
            self.controller.stub.Release(pb.JobRef(job=name), timeout=30)
        except grpc.RpcError as e:
            print(f"release {name}: {e}", file=sys.stderr)


def send_windows(cfg: FabricConfig, topo: Topology, sends: Sends) -> list[int]:
    """Per send, the window the simulator gives its flow (`sim.flow_windows`: HPCC's BDP of
    the longest path under GLOBAL_T, else of its own; 0 without HAS_WIN), so both instruments'
    senders stop at the same number of unacknowledged frames."""
    hops = [
        2 if topo.hosts[int(a)].leaf == topo.hosts[int(b)].leaf else 4
        for a, b in zip(sends.src, sends.dst, strict=True)
    ]
    return [int(w) for w in flow_windows(cfg, np.array(hops, dtype=np.int64))]


def run_fabric_collective(
    bed: FabricBed, variant: ex.Variant, seed: int, name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One run: (its row, its trace: messages and the switches' overlap series)."""
    s = bed.setup
    topo = s.topo
    cfg = s.sim_config(variant)
    sends = build_sends(cfg)
    windows = send_windows(cfg, topo, sends)
    p = s.ex_setup.scaled()
    hosts = [Host(h.index, h.ifname, h.ip, h.mac, h.netns) for h in topo.hosts]
    job = bed.allocate(name, variant)
    switches = bed.job_switches(name)
    # per host pair, computed once: the loop asks for every frame it receives
    delays = {
        (a.index, b.index): s.prop_s(a.index, b.index) for a in topo.hosts for b in topo.hosts
    }
    fab = Fabric(
        hosts,
        p,
        payload=ex.PAYLOAD,
        seed=seed,
        rt_priority=s.rt_priority,
        prop_s=lambda src, dst: delays[src, dst],
    )
    bound_s = lockstep_bound_us(cfg) * 1e-6 * s.scale
    assert bed.meter is not None
    try:
        fab.open()
        before = bed.meter.snapshot()
        with LiveSampler(bed.api, name, s.sample_ms / 1000) as sampler:
            run = run_collective(
                fab,
                sends,
                host_key={h.index: h.index for h in topo.hosts},
                packets_of=cfg.packets,
                tag_of=lambda _job: job,
                window_of=windows.__getitem__,
                start_jitter_s=s.jitter_real_us * 1e-6 * s.scale,
                seed=seed,
                limit_s=6 * bound_s + 10,
                stall_s=ex.STALL_S,
            )
        losses = bed.meter.settle(before, fab.drain, quiet_s=s.ex_setup.settle_quiet_s(s.line_pps))
        live = bed.live(name)
    finally:
        fab.close()
        bed.release(name)
    series = _switch_series(sampler.samples, fab.t0)
    intervals = [(m.first_tx, m.last_rx, m.step) for m in run.messages]
    wire = ex.overlap_series(intervals, run.cct_s if run.complete else run.end_s)
    pairs, crossing = ecmp_collisions(topo, run)
    sent = sum(qp.sent for qp in run.qps)
    received = sum(r.received for r in fab.receivers.values())
    row: dict[str, Any] = {
        "variant": variant.name,
        "k": variant.k,
        "gate_depth": variant.gate_depth,
        "seed": seed,
        "job_id": job,
        "job_switches": " ".join(sorted(switches)),
        "complete": run.complete,
        "cct_s": run.cct_s,
        "lockstep_bound_s": bound_s,
        "wire_overlap_max": max((o for _t, o in wire), default=0),
        "wire_overlap_mean": statistics.fmean(o for _t, o in wire) if wire else 0.0,
        "ecmp_collisions": pairs,
        "crossing_messages": crossing,
        "sent": sent,
        "received": received,
        "lost": sent - received,
        "ce": sum(r.ce for r in fab.receivers.values()),
        "cnps": sum(r.cnps for r in fab.receivers.values()),
        "acks": sum(r.acks for r in fab.receivers.values()),  # ACK frames (HPCC's profiles)
        "window_stalls": sum(qp.window_stalls for qp in run.qps),
        # the round trip, frame to its ACK (ACK frames): its least and median over the run
        "rtt_min_ms": min((t for qp in run.qps for t in qp.rtts), default=math.nan) * 1e3,
        "rtt_median_ms": _median([t for qp in run.qps for t in qp.rtts]) * 1e3,
        "symphony_marks": sum(v.marks for v in live.values()),
        "queue_marks": sum(v.queue_marks for v in live.values()),
        "samples": sum(len(v) for v in series.values()),
        **losses.row(),
        "send_errors": fab.send_errors,
        "unexpected_frames": fab.unexpected,
        "max_lag_ms": max((qp.max_lag for qp in fab.senders.values()), default=0.0) * 1e3,
        "realtime": fab.realtime,
        "switch_realtime": bed.switch_realtime,
        "_late": fab.late_log,  # for the calibration; not written to the CSVs
        "_loop_s": fab.loop_s,
        "_sends": sent,
    }
    for sw in topo.switches:
        v = live.get(sw.name)
        row[f"marks_{sw.name}"] = v.marks if v else 0
        row[f"queue_marks_{sw.name}"] = v.queue_marks if v else 0
        row[f"packets_{sw.name}"] = v.packets if v else 0
        row[f"overlap_max_{sw.name}"] = max((o for _t, o, _m in series.get(sw.name, [])), default=0)
    trace = {
        "messages": [asdict(m) for m in run.messages],
        # per send (its index in Sends), the NIC's side: the rate after every change (loop
        # seconds, packets/s), the CNPs it took, the ACKs, the window's stalls; the
        # simulator's cc_trace is the same timeline (evaluation/hosts/flow_compare.py)
        "qps": [
            {
                "send": i,
                "rate_log": qp.rate_log,
                "cnps": qp.rp.cnps,
                "acks": qp.acks,
                "window_stalls": qp.window_stalls,
                "max_in_flight": qp.max_in_flight,
                "rtt_min_s": min(qp.rtts, default=math.nan),
                # each data frame's (arrival, wait in the switches' queues), 0.1 ms: the
                # queues of its path as the frames found them
                "waits": [
                    [round(t, 4), round(w, 4)]
                    for t, w in (qp.receiver.waits if qp.receiver is not None else [])
                ],
            }
            for i, qp in enumerate(run.qps)
        ],
        "switches": series,
        "wire_overlap": wire,
    }
    return row, trace


# -- the simulator beside it -------------------------------------------------------------------
def simulate_row(setup: FabricSetup, variant: ex.Variant, seed: int) -> dict[str, Any]:
    cfg = setup.sim_config(variant)
    r = simulate(cfg, seed)
    to_s = 1e-6 * setup.scale
    shared: dict[str, Any] = {}
    if setup.ack_class == "priority":
        # the class as a real switch serves it: ACKs take their port's time ahead of data, where
        # bmv2's priority queue has a rate of its own (docs/ack_priority.md, "bmv2")
        real = replace(cfg, dcqcn=replace(cfg.cc, ack_queue="control"))
        shared["sim_shared_port_cct_s"] = simulate(real, seed).cct_us[0] * to_s
    return {
        "variant": variant.name,
        "seed": seed,
        "sim_cct_s": r.cct_us[0] * to_s,
        **shared,
        "sim_lockstep_bound_s": r.lockstep_us * to_s,
        "sim_overlap_max": r.max_overlap[0],
        "sim_overlap_mean": r.mean_overlap[0],
        # decisions before the backlog gate, as the switches' `marks` counters (the bmv2
        # column "Symphony marks") count them; `sim_symphony_marks` the CE marks after it
        "sim_symphony_decisions": r.symphony_decisions,
        "sim_symphony_marks": r.stats["symphony_marks"],
        "sim_queue_marks": r.stats["queue_marks"],
        "sim_ce": r.stats["ce_delivered"],
        "sim_cnps": r.stats["cnps"],
        "sim_acks": r.stats["acks"],
        "sim_dropped": r.stats["dropped"],
    }


# -- report ------------------------------------------------------------------------------------
def _median(xs: list[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else float("nan")


def _f(row: dict[str, Any], key: str) -> float:
    v = row.get(key, "")
    return float(v) if v not in ("", None) else float("nan")


def summary(out: Path, setup: FabricSetup, meta: dict[str, Any]) -> str:
    rows = runs.read_rows(out / "runs.csv")
    sims = runs.read_rows(out / "sim.csv")
    names = [sw.name for sw in setup.topo.switches]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    base = _median([_f(r, "cct_s") for r in rows if r["variant"] == "baseline"])
    sim_base = _median([_f(r, "sim_cct_s") for r in sims if r["variant"] == "baseline"])
    lines = [
        "# The fabric experiment: ring all-reduce across a bmv2 leaf-spine",
        "",
        f"Command: `{meta.get('command', '')}`; started {meta.get('started', '')}; seeds "
        f"{meta.get('seeds')}; fabric {setup.topo.spec} (leaves x spines x hosts per leaf), "
        f"{setup.rings} ring(s), {setup.chunk_packets} packets per step, links "
        f"{setup.line_pps:g} packets/s (time scale x{setup.scale:.0f} of 10 Gb/s), queues "
        f"{setup.queue_depth} packets; ACKs, NAKs and CNPs in the switches' "
        + (
            "ACK class (a priority queue rated apart from data's; the simulator's `control-bmv2`)."
            if setup.ack_class == "priority"
            else "data queue."
        ),
        "",
        "CCT: median over seeds, emulated seconds; the simulator's the same configuration and "
        f"seeds (ecmp `switch`, the same NIC profile, {setup.profile}), scaled to emulated "
        "seconds.",
        "",
        "| variant | runs | CCT bmv2 | vs baseline | CCT simulator | vs baseline | lockstep bound "
        "| max overlap (wire) | "
        + " | ".join(f"max overlap {n}" for n in names)
        + " | ECMP collisions | Symphony marks | "
        + " | ".join(f"marks {n}" for n in names)
        + " | queue marks | lost in queues | lost by harness | reruns |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"
        + "---:|" * len(names)
        + "---:|---:|"
        + "---:|" * len(names)
        + "---:|---:|---:|---:|",
    ]
    for v in variants:
        rs = [r for r in rows if r["variant"] == v]
        ss = [r for r in sims if r["variant"] == v]
        cct = _median([_f(r, "cct_s") for r in rs])
        scct = _median([_f(r, "sim_cct_s") for r in ss])

        def med(key: str, rs: list[dict[str, Any]] = rs) -> float:
            return _median([_f(r, key) for r in rs])

        harness = sum(
            int(_f(r, k))
            for r in rs
            for k in r
            if k.startswith("lost_") and k not in ("lost_queue", "lost_unattributed") and r[k]
        )
        lines.append(
            f"| {v} | {len(rs)} | {cct:.3f} s | {(cct / base - 1) * 100:+.1f} % | "
            f"{scct:.3f} s | {(scct / sim_base - 1) * 100:+.1f} % | "
            f"{med('lockstep_bound_s'):.3f} s | {med('wire_overlap_max'):.0f} | "
            + " | ".join(f"{med(f'overlap_max_{n}'):.0f}" for n in names)
            + f" | {med('ecmp_collisions'):.0f} | {med('symphony_marks'):.0f} | "
            + " | ".join(f"{med(f'marks_{n}'):.0f}" for n in names)
            + f" | {med('queue_marks'):.0f} | {sum(int(_f(r, 'lost_queue') or 0) for r in rs)} | "
            f"{harness} | {sum(int(_f(r, 'reruns') or 0) for r in rs)} |"
        )
    lines += [
        "",
        "Max overlap (wire): the most distinct steps whose messages were on the wire at once "
        "(first frame sent to last frame received), as the simulator counts it. Max overlap "
        "per switch: the most `step_max - step_min + 1` the switch's own registers showed in a "
        f"window, sampled every {setup.sample_ms:g} ms through the controller. ECMP collisions: "
        "pairs of messages of different steps on one leaf uplink at the same time. Per seed: "
        "runs.csv and sim.csv; where each lost frame went: the lost_* columns.",
    ]
    spoiled = runs.read_rows(out / "spoiled_runs.csv")
    lines += report.calibration_section(meta, {"fabric": (len(rows), spoiled)})
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    return text


def plots(out: Path, setup: FabricSetup) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = runs.read_rows(out / "runs.csv")
    sims = runs.read_rows(out / "sim.csv")
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    names = [sw.name for sw in setup.topo.switches]
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 2.2 * len(names)), sharex=True)
    for ax, sw in zip(axes, names, strict=True):
        for v in variants:
            path = out / "traces" / f"{v}-seed{min(int(r['seed']) for r in rows)}.json"
            if not path.is_file():
                continue
            series = json.loads(path.read_text())["switches"].get(sw, [])
            if series:
                ax.step([t for t, _o, _m in series], [o for _t, o, _m in series], label=v)
        ax.set_ylabel(f"{sw}\noverlap")
    axes[0].legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("time since the run started (emulated s)")
    fig.suptitle("Step overlap per switch, from its registers (first seed)")
    fig.tight_layout()
    fig.savefig(out / "overlap_per_switch.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for i, v in enumerate(variants):
        b = [_f(r, "cct_s") for r in rows if r["variant"] == v]
        s = [_f(r, "sim_cct_s") for r in sims if r["variant"] == v]
        ax.scatter([i - 0.1] * len(b), b, color="C0", label="bmv2" if i == 0 else None)
        ax.scatter(
            [i + 0.1] * len(s), s, color="C1", marker="x", label="simulator" if i == 0 else None
        )
    ax.set_xticks(range(len(variants)), variants)
    ax.set_ylabel("CCT (emulated s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "cct_per_variant.png", dpi=110)
    plt.close(fig)


# -- the command -------------------------------------------------------------------------------
PROG = "fabric_experiment"
CALIBRATION_SEED = 1000  # the calibration's runs: a seed no reported run uses


def calibrate(bed: FabricBed, seconds: float, cells: int, *, fixed: bool) -> dict[str, Any]:
    """Measure the machine with baseline collectives at the bed's rate, `seconds` of loop time
    a round, and plan (calibration.py; `fixed`: resuming, only this rate is considered)."""
    durations: list[float] = []

    def run(n: int) -> dict[str, Any]:
        row, _trace = run_fabric_collective(
            bed, ex.BASELINE, CALIBRATION_SEED, f"calibrate-{len(durations)}"
        )
        durations.append(row["_loop_s"])
        return row

    def measure() -> cal.Stalls:
        return cal.measure(run, seconds, bed.setup.line_pps)

    def demand() -> cal.Demand:
        limit = bed.setup.ex_setup.lateness_limit_ms()
        return cal.Demand("fabric", cells, statistics.median(durations), limit)

    stalls, p = cal.measure_and_plan(
        measure, lambda st: cal.plan(st, [demand()], factors=(1.0,) if fixed else cal.FACTORS)
    )
    return {**cal.record(stalls, p, p.factor), "attempt_s": demand().attempt_s}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m evaluation.hosts.fabric_experiment", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", type=Path, default=ROOT / "build/experiments-fabric")
    p.add_argument("--leaves", type=int, default=2)
    p.add_argument("--spines", type=int, default=2)
    p.add_argument("--hosts-per-leaf", type=int, default=2)
    p.add_argument("--rings", type=int, default=1, help="concurrent 1D rings of the job")
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=sorted(PROFILES),
        help="the NIC profile both instruments run (evaluation/fabric/dcqcn.py, docs/nic.md; "
        f"default {DEFAULT_PROFILE})",
    )
    p.add_argument(
        "--ack-class",
        choices=ACK_CLASSES,
        default="data",
        help="the switches' queue for ACKs, NAKs and CNPs: their flow's (data) or the ACK class"
        " (priority: `ack_priority` on every switch; docs/ack_priority.md)",
    )
    p.add_argument("--chunk", type=int, default=500, help="packets per step (one message)")
    p.add_argument(
        "--line-pps",
        type=float,
        default=2000.0,
        help="emulated link rate, packets/s, the planned one: the calibration may lower it"
        " (docs/experiments.md, Fabric: measured headroom)",
    )
    p.add_argument("--queue-depth", type=int, default=1000)
    p.add_argument("--jitter-us", type=float, default=2.0, help="start jitter, real us (scaled)")
    p.add_argument("--sample-ms", type=float, default=50.0, help="register sampling period")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=100, help="seeds no choice was made on")
    p.add_argument("--ks", default=f"{PAPER_K}", help="the paper's policy at these k")
    p.add_argument(
        "--gates",
        default="{}/{}".format(*SHIPPED_GATE),
        help="gated variants GATE/K (the shipped one)",
    )
    p.add_argument(
        "--max-reruns",
        type=int,
        default=None,
        help="reruns of a spoiled run (default: as the calibration plans, at least 3)",
    )
    p.add_argument(
        "--calibrate-s",
        type=float,
        default=cal.CALIBRATE_S,
        help="seconds of traffic measured before the runs (0: none; docs/experiments.md)",
    )
    p.add_argument("--no-sim", action="store_true", help="skip the simulator's runs")
    p.add_argument("--fresh", action="store_true", help="discard the runs already in --out")
    p.add_argument("--report", action="store_true", help="only rewrite summary.md and PNGs")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup = FabricSetup(
        leaves=args.leaves,
        spines=args.spines,
        hosts_per_leaf=args.hosts_per_leaf,
        line_pps=args.line_pps,
        rings=args.rings,
        chunk_packets=args.chunk,
        queue_depth=args.queue_depth,
        jitter_real_us=args.jitter_us,
        sample_ms=args.sample_ms,
        profile=args.profile,
        ack_class=args.ack_class,
    )
    try:
        host_profile(setup.profile)  # an unknown profile fails before any switch starts
    except ValueError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    setup.sim_config(ex.BASELINE)  # a bad size fails here, before any switch starts
    planned = setup.line_pps
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    meta_path = out / "meta.json"
    stored = runs.stored_settings(out, RESULT_FILES) if not args.fresh else None
    if stored is not None:  # resuming: the runs there fix the rate
        setup = replace(setup, line_pps=float(stored.get("line_pps", planned)))
    if args.report:
        meta = json.loads(meta_path.read_text())
        print(summary(out, setup, meta))
        plots(out, setup)
        return 0
    if stored is not None and not runs.open_or_explain(
        out, settings_of(setup, planned), fresh=False, files=RESULT_FILES, prog=PROG
    ):
        return 2
    variants = ex.variants([float(k) for k in args.ks.split(",") if k], ex.parse_gates(args.gates))
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    # a resumed invocation's record goes on; a fresh one starts its own
    old = json.loads(meta_path.read_text()) if stored is not None and meta_path.is_file() else {}
    meta: dict[str, Any] = {
        "command": " ".join(["python -m evaluation.hosts.fabric_experiment", *sys.argv[1:]]),
        "started": old.get("started", time.strftime("%Y-%m-%d %H:%M:%S")),
        "seeds": seeds,
        "variants": [v.name for v in variants],
        "wall_s": float(old.get("wall_s", 0.0)),
        "planned_line_pps": planned,
        "max_reruns": args.max_reruns,
        "calibration": old.get("calibration"),
    }
    t_start = time.monotonic()
    log = runs.RunLog(out / "runs.csv", key=("variant", "seed"))
    simlog = runs.RunLog(out / "sim.csv", key=("variant", "seed"))
    (out / "traces").mkdir(exist_ok=True)
    cells = runs.Cells(out, args.max_reruns)
    # fresh (no stored runs, or --fresh): every cell, whatever an old runs.csv holds until the
    # old results are removed below (after the calibration, which may refuse and keep them)
    todo = [
        (v, s)
        for s in seeds
        for v in variants
        if stored is None or not log.done(variant=v.name, seed=s)
    ]
    with ExitStack() as stack:
        bed = stack.enter_context(FabricBed(setup, ROOT / "run/fabric-exp")) if todo else None
        if bed is not None and args.calibrate_s > 0:
            calibration = calibrate(bed, args.calibrate_s, len(todo), fixed=stored is not None)
            print(f"calibration: {calibration['text']}", file=sys.stderr)
            meta["calibration"] = calibration
            if calibration["refused"]:
                print(f"{PROG}: {calibration['refused']}", file=sys.stderr)
                (out / "calibration.json").write_text(json.dumps(calibration, indent=2))
                return 2
            setup = replace(setup, line_pps=planned * calibration["factor"])
            bed.use(setup)
            cells.expect("fabric", len(todo), calibration["predicted_spoiled"]["fabric"])
        if stored is None:
            runs.open_or_explain(
                out, settings_of(setup, planned), fresh=True, files=RESULT_FILES, prog=PROG
            )
            (out / "traces").mkdir(exist_ok=True)
            log = runs.RunLog(out / "runs.csv", key=("variant", "seed"))
            simlog = runs.RunLog(out / "sim.csv", key=("variant", "seed"))
        meta["line_pps"] = setup.line_pps
        meta["rate_factor"] = setup.line_pps / planned
        meta["fabric"] = {
            "line_pps": setup.line_pps,
            "lateness_limit_ms": setup.ex_setup.lateness_limit_ms(),
        }
        if not args.no_sim:
            for v in tqdm(variants, desc="simulator", file=sys.stderr):
                for seed in seeds:
                    if not simlog.done(variant=v.name, seed=seed):
                        simlog.append(simulate_row(setup, v, seed))
        lateness = setup.ex_setup.lateness_limit_ms()
        pending = [(v, seed, 0) for v, seed in todo]  # (variant, seed, round)
        try:
            for v, seed, round_ in tqdm(pending, desc="bmv2 fabric runs", file=sys.stderr):
                assert bed is not None
                if round_ > 0:
                    time.sleep(DEFER_WAIT_S)
                traces: dict[int, dict[str, Any]] = {}

                def attempt(
                    n: int,
                    v: ex.Variant = v,
                    seed: int = seed,
                    round_: int = round_,
                    traces: dict[int, dict[str, Any]] = traces,
                    bed: FabricBed = bed,
                ) -> dict[str, Any]:
                    row, traces[n] = run_fabric_collective(
                        bed, v, seed, attempt_name(v, seed, round_, n)
                    )
                    return row

                row = cells.run("fabric", f"{v.name} seed {seed}", attempt, lateness)
                if row is None and round_ < DEFERRED_ROUNDS:
                    pending.append((v, seed, round_ + 1))  # tqdm's total stays the first round's
                if row is not None:
                    log.append(row)
                    trace = traces[int(row["reruns"])]
                    (out / "traces" / f"{v.name}-seed{seed}.json").write_text(json.dumps(trace))
                meta["wall_s"] = float(old.get("wall_s", 0.0)) + time.monotonic() - t_start
                meta["unresolved"] = cells.unresolved
                meta["attempts_allowed"] = {e: cells.attempts(e) for e in cells.tally}
                meta_path.write_text(json.dumps(meta, indent=2))
        except runs.TooManySpoiled as e:
            cells.unresolved.append(str(e))
            meta["unresolved"] = cells.unresolved
    meta_path.write_text(json.dumps(meta, indent=2))
    print(summary(out, setup, meta))
    plots(out, setup)
    for problem in cells.unresolved:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if cells.unresolved else 0


if __name__ == "__main__":
    sys.exit(main())
