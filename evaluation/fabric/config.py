"""What one fabric run simulates: topology, workload, perturbations, congestion control and the
switch mode. Defaults are the paper's Table 1 where it gives a value; the others are ours and
docs/evaluation.md says why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from evaluation.fabric.dcqcn import DEFAULT_PROFILE, Dcqcn, profile
from symphony.model.params import JobParams, QueueParams

Mode = Literal["baseline", "symphony", "pq"]
Routing = Literal["ecmp", "static"]
Topology = Literal["rings", "2d"]  # logical topology: concurrent 1D rings, or one 2D ring
Phases = Literal["localBWAware", "baseline"]  # Astra-Sim's `collective-optimization`
StepIndex = Literal["collective", "sport"]  # what a flow carries as Symphony's step
Ecmp = Literal["salted", "ns3", "switch"]
FabricKind = Literal["2tier", "nonblocking", "multipod"]
SymphonyState = Literal["switch", "port"]
SymphonyAt = Literal["all", "tor"]
MiB = 1 << 20
POD_HOSTS = 128  # the paper: "clusters of up to 128 nodes reside within a single spine group"
RED = QueueParams()  # the paper's K_min/K_max/P_max (model/params.py), in 1 KB packets (HPCC's)
# HPCC's ns-3 as its mix/config.txt runs it: 1000 B of payload in 1036 B frames; ECN at 50 and
# 100 KB of 1000 B (switch-mmu.cc ConfigEcn), which whole 1036 B packets (the kernel counts a
# queue's bytes // MTU) come closest to at 48 and 96; BUFFER_SIZE 32 (MiB per switch).
HPCC_MTU, HPCC_HEADER = 1036, 36
# HPCC's KMIN_MAP / KMAX_MAP at 10 Gb/s: 50 and 100 KB (of 1000 B; switch-node.cc compares them
# with the egress queue's bytes); the kernel's RED counts whole frames of HPCC_MTU, rounded down.
HPCC_RED_KB = (50, 100)
HPCC_RED = QueueParams(
    k_min=HPCC_RED_KB[0] * 1000 // HPCC_MTU, k_max=HPCC_RED_KB[1] * 1000 // HPCC_MTU, p_max=0.2
)
HPCC_BUFFER_PKTS = 32 * MiB // HPCC_MTU


# The cap for runs longer than `max_ms` allows: training iterations, and a regime-map run that
# hit `max_ms` run again. A run under a cap gives the same result under any larger one.
LONG_RUN_MAX_MS = 600_000.0


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
    # Of them, headers: HPCC's ns-3 puts PACKET_PAYLOAD_SIZE bytes of payload in a packet and
    # adds 36 (PPP 2, IPv4 20, UDP 8, SeqTs 6), so its 1000 B payload is 1036 B on the wire.
    # Messages are cut into packets of `payload_bytes`; HPCC's window counts payload bytes.
    header_bytes: int = 0
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
    # The collective (Astra-Sim's system layer; docs/evaluation.md cites the source). "rings":
    # `rings` independent 1D ring all-reduces of `chunk_bytes` per step. "2d": one 2D ring
    # all-reduce of `chunk_bytes * hosts` per NPU (Table 1: chunk = collective / # of nodes)
    # over `dims` (N0, N1), (0, 0) = (hosts per ToR, the rest), split into `splits` chunks
    # (preferred-dataset-splits) of which `active_chunks` run at once per dimension
    # (active-chunks-per-dimension). `passes` repeats the collective back to back per NPU.
    topology: Topology = "rings"
    dims: tuple[int, int] = (0, 0)
    phases: Phases = "localBWAware"
    splits: int = 1
    active_chunks: int = 1
    passes: int = 1
    step_index: StepIndex = "collective"
    # ECMP: "salted" = a per-run seeded hash at the source ToR (the first version); "ns3" =
    # HPCC/Astra-Sim ns-3's per-switch murmur3 of (sip, dip, sport | dport << 16) seeded by the
    # switch's node id, source ports counting from 10000 per host pair: the same paths on every
    # seed. "switch" = Symphony's own data plane (symphony.model.ecmp: CRC-32 of the 5-tuple,
    # 16 buckets, bucket b to the b % n-th next hop), the step in the source port, RoCE's
    # destination port, host h at address `host_addrs[h]`: the paths of the bmv2 fabric
    # (symphony_tools.fabric), so the kernel carries each frame where the switches do.
    ecmp: Ecmp = "salted"
    host_addrs: tuple[int, ...] = ()  # IPv4 address of each host (ecmp "switch"); () = host_ip
    # "2tier": `tors` ToRs, `spines` spines, every link at link_gbps (8 hosts per ToR on 4
    # uplinks: 2:1). "nonblocking": the same switches with uplinks at link_gbps x hosts per ToR
    # / spines (1:1). "multipod": `pods` (0: hosts / POD_HOSTS) such non-blocking pods (`tors`
    # ToRs and `spines` aggs each) under `cores` core switches (0: one per pod: Table 1's 2/4
    # cores at 256/512 nodes), every agg linked to every core, the core layer oversubscribed
    # `oversub`:1 against the pods' host bandwidth (the paper: 1:2 to 1:8).
    fabric: FabricKind = "2tier"
    pods: int = 0
    cores: int = 0
    oversub: float = 2.0
    start_jitter_ns: int = 2000  # step-0 flows start uniformly in [0, jitter]
    imbalance: float = 1.0  # the ToR0 -> spine0 link serves at link_gbps / imbalance
    background: Background = Background()
    mode: Mode = "baseline"
    symphony: JobParams = field(default_factory=JobParams)  # used in mode "symphony"
    # Where Symphony keeps a job's state and where it runs (candidates of docs/policy-study.md):
    # "switch", one state per job per switch (the paper's), or "port", one per job per egress
    # port, so a flow is compared only with the flows leaving by its link; "all" switches run
    # Symphony, or only the ToRs ("tor", the paper's sec. 6 partial deployment).
    symphony_state: SymphonyState = "switch"
    symphony_at: SymphonyAt = "all"
    late_start_us: float = 0.0  # Symphony marks only after this time (the paper's late start)
    dcqcn: Dcqcn | str = DEFAULT_PROFILE  # a profile of dcqcn.PROFILES by name, or one
    rto_us: float = 1000.0  # ours: HPCC has no retransmission timer (NACKs only)
    sample_us: float = 100.0
    max_ms: float = 20_000.0  # simulated-time cap; a run that hits it is flagged (ERR_TIMEOUT)

    @property
    def cc(self) -> Dcqcn:
        """The NIC profile `dcqcn` names."""
        return profile(self.dcqcn)

    @property
    def ring_size(self) -> int:
        return self.hosts // self.rings

    @property
    def steps(self) -> int:
        """Steps of one 1D ring all-reduce ("rings" topology)."""
        return 2 * (self.ring_size - 1)

    @property
    def payload_bytes(self) -> int:
        return self.mtu - self.header_bytes

    def packets(self, message_bytes: int) -> int:
        """Data packets of one message (the last one full size: we do not shorten it)."""
        return -(-message_bytes // self.payload_bytes)

    @property
    def pkts_per_chunk(self) -> int:
        return self.packets(self.chunk_bytes)

    @property
    def n_pods(self) -> int:
        if self.fabric != "multipod":
            return 1
        return self.pods or max(1, -(-self.hosts // POD_HOSTS))

    @property
    def n_tors(self) -> int:
        return self.tors * self.n_pods

    @property
    def hosts_per_tor(self) -> int:
        return self.hosts // self.n_tors

    @property
    def n_cores(self) -> int:
        return (self.cores or self.n_pods) if self.fabric == "multipod" else 0

    @property
    def uplink_gbps(self) -> float:
        """ToR -> spine (agg) links: the host links' rate, x hosts per ToR / spines when the
        pod is non-blocking (keeps Table 1's 4 ToR x 4 spine switches and 10 G host links)."""
        if self.fabric == "2tier":
            return self.link_gbps
        return self.link_gbps * self.hosts_per_tor / self.spines

    @property
    def core_gbps(self) -> float:
        """Agg -> core links: a pod's host bandwidth / oversub over its spines x cores links."""
        pod_gbps = self.link_gbps * self.hosts / self.n_pods
        return pod_gbps / self.oversub / (self.spines * max(self.n_cores, 1))

    @property
    def dim_sizes(self) -> tuple[int, int]:
        """The 2D ring's (N0, N1): dim 0 inside a ToR by default (Astra-Sim's NPU i is host i,
        dim-0 rings are runs of N0 consecutive NPUs)."""
        if self.dims != (0, 0):
            return self.dims
        n0 = self.hosts_per_tor
        return n0, self.hosts // n0

    @property
    def collective_bytes(self) -> int:
        """Bytes each NPU all-reduces in one pass of the "2d" topology."""
        return self.chunk_bytes * self.hosts

    @property
    def headroom_pkts(self) -> int:
        if self.pfc_headroom_pkts:
            return self.pfc_headroom_pkts
        one_way_bytes = self.link_gbps * self.prop_ns / 8
        return -(-int(3 * one_way_bytes) // self.mtu)

    def validate(self) -> FabricConfig:
        n = self.ring_size
        if self.topology == "rings" and (
            self.hosts % self.rings or n % self.n_tors or n < 2 or self.rings % self.jobs
        ):
            raise ValueError(
                "hosts must split into rings of >= 2 members with the same number per ToR, "
                "and rings evenly between jobs"
            )
        if self.mode not in ("baseline", "symphony", "pq") or self.routing not in (
            "ecmp",
            "static",
        ):
            raise ValueError(f"mode/routing: {self.mode!r}/{self.routing!r}")
        if self.symphony_state not in ("switch", "port") or self.symphony_at not in ("all", "tor"):
            raise ValueError(f"symphony_state/at: {self.symphony_state!r}/{self.symphony_at!r}")
        if self.cc.ack_queue not in ("data", "control", "control-bmv2"):
            raise ValueError(f"ack_queue: {self.cc.ack_queue!r}")
        if self.cc.has_win and not self.cc.ack_frames:
            raise ValueError(f"profile {self.cc.name}: a window needs ACK frames (ack_frames)")
        if self.hosts % self.n_tors or (self.pods and self.fabric != "multipod"):
            raise ValueError("hosts must split evenly over ToRs; pods needs fabric multipod")
        if self.topology == "2d":
            n0, n1 = self.dim_sizes
            if n0 * n1 != self.hosts or n0 < 2 or n1 < 2 or self.jobs != 1:
                raise ValueError(f"2d: dims {n0}x{n1} must cover {self.hosts} hosts, one job")
        if min(self.splits, self.active_chunks, self.passes) < 1:
            raise ValueError("splits, active_chunks and passes must be >= 1")
        return self
