"""The golden model of one switch: classification, per-flow PSN bases, per-job state and the
marking decision, packet by packet, exactly as the P4 program computes them (SPEC sections 1-4).

Tests feed the same packet sequence to bmv2 and to `SwitchModel` and compare the state registers
and the marks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from symphony.model import arithmetic as ar
from symphony.model.opcodes import is_first, is_last, is_tracked_opcode
from symphony.p4names import JOB_COUNTERS, JOB_REGISTERS
from symphony.sizes import FLOW_SLOTS, MAX_JOBS, TARGETS

TIMESTAMP_MASK = (1 << 32) - 1
COUNTER_MASK = (1 << 32) - 1


@dataclass(frozen=True)
class RocePacket:
    """What the switch reads from a parsed, well-formed RoCEv2 packet."""

    src: int  # IPv4 source address
    step: int  # UDP source port
    opcode: int
    psn: int
    dqpn: int = 0
    tag: int = 0  # resv6 ++ resv7
    ecn: int = 0b10  # ECT(0)


@dataclass
class JobState:
    """The per-job registers and counters (SPEC section 3); a new job is all zeros, alpha = 1."""

    step_min: int = 0
    psn_rec: int = 0
    # The serially highest step seen in the current window (reset with it, as psn_rec is).
    step_max: int = 0
    alpha: int = 1
    window_packets: int = 0  # packets in the current window
    window_ahead_packets: int = 0  # of them, of a later step than step_min
    win_start: int = 0
    packets: int = 0
    marks: int = 0
    queue_marks: int = 0

    def registers(self) -> dict[str, int]:
        """Register name -> raw value as stored on the switch."""
        values = asdict(self)
        raw = {JOB_REGISTERS[f]: values[f] for f in JOB_REGISTERS}
        raw[JOB_REGISTERS["alpha"]] = self.alpha - 1
        return raw

    @classmethod
    def from_registers(
        cls, raw: dict[str, int], counters: dict[str, int] | None = None
    ) -> JobState:
        """Inverse of `registers`: decode raw register (and counter) values read from a switch."""
        values = {f: raw[name] for f, name in JOB_REGISTERS.items()}
        values["alpha"] += 1
        for f in JOB_COUNTERS:
            values[f] = (counters or {}).get(f, 0)
        return cls(**values)

    @property
    def step_overlap(self) -> int:
        """step_max - step_min + 1 (serial; 0 when step_max is behind): the live overlap."""
        return ar.step_overlap(self.step_min, self.step_max)


@dataclass(frozen=True)
class Decision:
    """The outcome for one packet. `threshold` is the coin threshold in [0, 2^24]; `mark` is the
    Symphony decision when it is certain (P = 0 or 1) or a coin was given, else None."""

    job_id: int | None
    p: int | None = None
    threshold: int = 0
    mark: bool | None = False

    @property
    def tracked(self) -> bool:
        return self.job_id is not None

    @property
    def probability(self) -> float:
        return ar.applied_probability(self.threshold)


def flow_slot(src: int, dqpn: int, slots: int = FLOW_SLOTS) -> tuple[int, int]:
    """(register index, signature) of a flow: crc32 and crc16 over src_addr ++ dqpn, as bmv2
    hashes the 56-bit field list. The signature's top bit is forced on, so an empty (all-zero)
    slot never matches."""
    key = src.to_bytes(4, "big") + dqpn.to_bytes(3, "big")
    return ar.crc32(key) % slots, ar.crc16(key) | 0x8000


def pack_flow(sig: int, step: int, base: int) -> int:
    """The 64-bit flow_base register value: sig:16 | step:16 | base:24 (top 8 bits unused)."""
    return (sig << 40) | (step << 24) | base


def unpack_flow(value: int) -> tuple[int, int, int]:
    return (value >> 40) & 0xFFFF, (value >> 24) & 0xFFFF, value & ar.PSN_MASK


def symphony_ce(mark: bool, enq_depth: int, gate_depth: int) -> bool:
    """The backlog gate (JobParams.gate_depth, issue 21), at egress: a Symphony mark decision
    leaves as CE only from a queue that held at least ``gate_depth`` when the packet joined it
    (``enq_qdepth``). Gate 0 lets every decision through: the paper's policy."""
    return mark and enq_depth >= gate_depth


def ecn_out(ecn: int, symphony_mark: bool, queue_mark: bool) -> int:
    """SPEC 4.5: ECT(0)/ECT(1) become CE when either marker fires; Non-ECT and CE never change."""
    if ecn in (0b01, 0b10) and (symphony_mark or queue_mark):
        return 0b11
    return ecn


@dataclass
class SwitchModel:
    """One switch's Symphony tables and registers, and the per-packet algorithm."""

    job_by_tag: dict[int, int] = field(default_factory=dict)
    job_by_src: dict[int, int] = field(default_factory=dict)
    job_params: dict[int, dict[str, int]] = field(default_factory=dict)
    jobs: dict[int, JobState] = field(default_factory=dict)
    flows: dict[int, int] = field(default_factory=dict)
    flow_slots: int = FLOW_SLOTS
    # "tofino2" computes the window test and eq. 5 the way p4src/t2na does (job_state.p4 there).
    target: str = "bmv2"
    # Tofino2 only: the running form of eq. 5 (int32),
    # 256 * window_ahead_packets - tau_q8 * window_packets.
    tau_scores: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {self.target!r}")

    def install_job(
        self, job_id: int, params: dict[str, int], *, tag: bool = True, hosts: tuple[int, ...] = ()
    ) -> None:
        """What the controller installs: classification entries and the job's parameters."""
        if not 0 < job_id < MAX_JOBS:
            raise ValueError(f"job_id out of range: {job_id}")
        if tag:
            self.job_by_tag[job_id] = job_id
        for src in hosts:
            self.job_by_src[src] = job_id
        self.job_params[job_id] = dict(params)
        self.jobs.setdefault(job_id, JobState())

    def release_job(self, job_id: int) -> None:
        self.job_by_tag = {t: j for t, j in self.job_by_tag.items() if j != job_id}
        self.job_by_src = {s: j for s, j in self.job_by_src.items() if j != job_id}
        self.job_params.pop(job_id, None)
        self.jobs.pop(job_id, None)
        self.tau_scores.pop(job_id, None)

    def state(self, job_id: int) -> JobState:
        return self.jobs.get(job_id, JobState())

    def classify(self, pkt: RocePacket) -> int | None:
        """SPEC 1: a tracked data opcode, then a non-zero tag's entry, else the source's entry."""
        if not is_tracked_opcode(pkt.opcode):
            return None
        job = self.job_by_tag.get(pkt.tag) if pkt.tag else None
        if job is None:
            job = self.job_by_src.get(pkt.src)
        return job

    def progress_in_step(self, pkt: RocePacket, psn_absolute: bool) -> int | None:
        """SPEC 2: p, or None when unknown. FIRST/ONLY packets (re)start their flow's slot."""
        slot, sig = flow_slot(pkt.src, pkt.dqpn, self.flow_slots)
        if is_first(pkt.opcode):
            self.flows[slot] = pack_flow(sig, pkt.step, pkt.psn)
            p: int | None = 0
        else:
            s_sig, s_step, base = unpack_flow(self.flows.get(slot, 0))
            p = ar.relative_psn(pkt.psn, base) if (s_sig, s_step) == (sig, pkt.step) else None
        return pkt.psn if psn_absolute else p

    def process(self, pkt: RocePacket, now: int, coin: int | None = None) -> Decision:
        """One packet through SPEC section 4; `now` is the ingress timestamp in ticks and `coin`
        the switch's random number, when known."""
        job = self.classify(pkt)
        if job is None:
            return Decision(job_id=None)
        prm = self.job_params[job]
        st = self.jobs[job]
        s = pkt.step
        p = self.progress_in_step(pkt, bool(prm["psn_absolute"]))

        tofino = self.target == "tofino2"
        score = self.tau_scores.get(job, 0)

        # 1. Window rollover.
        if ar.window_closes(now, st.win_start, prm["t_win"], split=tofino):
            if st.window_packets >= prm["n_sample"]:
                if tofino:
                    raises = score >= 0
                else:
                    raises = ar.window_raises_alpha(
                        st.window_ahead_packets, st.window_packets, prm["tau_q8"]
                    )
                if raises:
                    st.alpha = min(prm["alpha_max"], st.alpha + 1)
                else:
                    st.alpha = max(1, st.alpha - 1)
            st.window_packets = st.window_ahead_packets = st.psn_rec = score = 0
            st.win_start = now & TIMESTAMP_MASK

        # 2. Traffic stats, against step_min before this packet's update. The window's first
        #    packet (none counted yet: a fresh job or a window just closed) sets step_max.
        later = ar.step_later(s, st.step_min)
        if st.window_packets == 0 or ar.step_later(s, st.step_max):
            st.step_max = s
        st.window_packets = (st.window_packets + 1) & COUNTER_MASK
        if later:
            st.window_ahead_packets = (st.window_ahead_packets + 1) & COUNTER_MASK
        if tofino:
            self.tau_scores[job] = ar.wrap_int32(score + ar.tau_increment(later, prm["tau_q8"]))

        # 3. Progress (Algorithm 1, lines 3-10).
        if is_last(pkt.opcode):
            st.step_min = (s + 1) & ar.STEP_MASK
            st.psn_rec = 0
        elif ar.step_earlier(s, st.step_min):
            st.step_min = s
            st.psn_rec = p or 0
        elif s == st.step_min and p is not None:
            st.psn_rec = max(st.psn_rec, p)

        # 4. Decision.
        threshold = 0
        outpacing = ar.step_later(s, st.step_min)
        if prm["mark_enable"] and outpacing and st.psn_rec > prm["n_warmup"] and p is not None:
            threshold = ar.mark_threshold(
                prm["k_log"], st.alpha, p, st.psn_rec, tofino=self.target == "tofino2"
            )
        if threshold == 0:
            mark: bool | None = False
        elif threshold >= ar.COIN_RANGE:
            mark = True
        else:
            mark = None if coin is None else coin < threshold
        st.packets = (st.packets + 1) & COUNTER_MASK
        if mark:
            st.marks += 1
        return Decision(job_id=job, p=p, threshold=threshold, mark=mark)
