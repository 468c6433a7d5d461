"""What one fabric run simulates: topology, workload, perturbations, congestion control and the
switch mode. Defaults are the paper's Table 1 where it gives a value; the others are ours and
docs/evaluation.md says why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from symphony.model.params import JobParams, QueueParams

Mode = Literal["baseline", "symphony", "pq"]
Routing = Literal["ecmp", "static"]
MiB = 1 << 20
RED = QueueParams()  # the paper's K_min/K_max/P_max (model/params.py), in 1 KB packets (HPCC's)


@dataclass(frozen=True)
class Dcqcn:
    """DCQCN reaction point as HPCC's ns-3 runs it (its `dcqcn` mode, rates scaled to 10 Gb/s:
    AI = 5 Mb/s * bw/25, HAI = 50 Mb/s * bw/25); timers only, no byte counter (HPCC's Mellanox
    model has none)."""

    g: float = 1 / 256  # EWMA_GAIN
    t_alpha_us: float = 1.0  # ALPHA_RESUME_INTERVAL
    t_dec_us: float = 4.0  # RATE_DECREASE_INTERVAL: at most one cut per flow per interval
    t_inc_us: float = 300.0  # RP_TIMER
    fast_recovery: int = 1  # FAST_RECOVERY_TIMES
    ai_gbps: float = 0.002  # RATE_AI
    hai_gbps: float = 0.02  # RATE_HAI
    min_gbps: float = 1.0  # MIN_RATE


@dataclass(frozen=True)
class Background:
    """Transient background traffic: `bursts` non-ECT constant-rate bursts, each on a random
    ToR uplink or spine downlink, starting uniformly in the first 70 % of the lockstep bound."""

    bursts: int = 0
    gbps: float = 3.0
    duration_us: float = 5000.0


@dataclass(frozen=True)
class FabricConfig:
    hosts: int = 32
    tors: int = 4
    spines: int = 4
    link_gbps: float = 10.0
    prop_ns: int = 1000  # per link
    mtu: int = 1024  # bytes on the wire per data packet (RED thresholds count these)
    buffer_pkts: int = 1000  # drop-tail limit of each egress port (PFC off)
    # PFC (802.1Qbb) per ingress port and priority, HPCC's ns-3 switch MMU: a shared buffer per
    # switch, XOFF when the packets an ingress queue holds exceed (free buffer) >> pfc_shift,
    # XON when they are `pfc_resume_pkts` below it, headroom reserved per ingress queue.
    pfc: bool = True
    switch_buffer_pkts: int = 12 * 1024  # 12 MB in 1 KiB packets, HPCC's SwitchMmu default
    pfc_shift: int = 3  # dynamic threshold alpha = 1/8 (HPCC's pfc_a_shift at NIC rate)
    pfc_headroom_pkts: int = 0  # 0: 3 x the link's one-way bytes (HPCC's rule), rounded up
    pfc_resume_pkts: int = 3  # HPCC's resume_offset, 3 KB
    red: QueueParams = RED
    rings: int = 4  # concurrent 1D rings, hosts / rings members each
    jobs: int = 1  # rings are split evenly between jobs (Job_IDs 1..jobs)
    job_start_us: tuple[float, ...] = (0.0,)  # start of job j (missing entries: 0)
    chunk_bytes: int = 8 * MiB
    routing: Routing = "ecmp"
    start_jitter_ns: int = 2000  # step-0 flows start uniformly in [0, jitter]
    imbalance: float = 1.0  # the ToR0 -> spine0 link serves at link_gbps / imbalance
    background: Background = Background()
    mode: Mode = "baseline"
    symphony: JobParams = field(default_factory=JobParams)  # used in mode "symphony"
    late_start_us: float = 0.0  # Symphony marks only after this time (the paper's late start)
    dcqcn: Dcqcn = Dcqcn()
    rto_us: float = 1000.0
    sample_us: float = 100.0
    max_ms: float = 20_000.0

    @property
    def ring_size(self) -> int:
        return self.hosts // self.rings

    @property
    def steps(self) -> int:
        return 2 * (self.ring_size - 1)

    @property
    def pkts_per_chunk(self) -> int:
        return -(-self.chunk_bytes // self.mtu)

    @property
    def headroom_pkts(self) -> int:
        if self.pfc_headroom_pkts:
            return self.pfc_headroom_pkts
        one_way_bytes = self.link_gbps * self.prop_ns / 8
        return -(-int(3 * one_way_bytes) // self.mtu)

    def lockstep_bound_us(self) -> float:
        """2(N-1) chunks back to back at line rate: 2(N-1)/N x S/B with S = N x chunk."""
        return self.steps * self.pkts_per_chunk * self.mtu * 8 / (self.link_gbps * 1000)

    def validate(self) -> FabricConfig:
        n = self.ring_size
        if self.hosts % self.tors or self.hosts % self.rings or n % self.tors:
            raise ValueError("hosts must split into rings with the same number of members per ToR")
        if n < 2 or self.rings % self.jobs:
            raise ValueError("rings must split evenly between jobs, with >= 2 members each")
        if self.mode not in ("baseline", "symphony", "pq") or self.routing not in (
            "ecmp",
            "static",
        ):
            raise ValueError(f"mode/routing: {self.mode!r}/{self.routing!r}")
        return self
