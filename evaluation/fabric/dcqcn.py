"""The RDMA NIC's congestion-control profiles: one `Dcqcn` declaration, named profiles.

The fabric kernel runs the rules of HPCC's ns-3 `rdma-hw.cc` in CC_MODE 1 (its "Mellanox"
DCQCN, identical in astra-sim/astra-network-ns3); a profile supplies their constants. Sources
(alibaba-edu/High-Precision-Congestion-Control, astra-sim/astra-network-ns3):

- `hpcc-config`: HPCC's `mix/config.txt` (and `simulation/mix/config.txt`), CC_MODE set to 1
  (the file ships CC_MODE 3 = HPCC; the paper ran DCQCN).
- `astra-config`: astra-network-ns3's `scratch/config/config.txt`, CC_MODE set to 1 (it ships
  CC_MODE 12, which no handler in rdma-hw.cc implements: no rate control at all). The same
  DCQCN values as HPCC's file; GLOBAL_T 0 instead of 1.
- `hpcc-run-dcqcn`: HPCC's `run.py --cc dcqcn` at bw = 10 (AI = 5 * bw / 25 Mb/s,
  HAI = 50 * bw / 25 Mb/s), what HPCC's own scripts generate for DCQCN; the fabric's first
  version ran these values.
- `bmv2-hosts`: the emulated hosts' constants (`evaluation/hosts/dcqcn.py` DcqcnConfig, the
  DCQCN paper's), run under the same Mellanox rules; what those rules cannot express is a
  named field (`cnp_interval_us`, `byte_counter_bytes`).

Values not in any config file are rdma-hw.cc's attribute defaults (RateOnFirstCnp 1.0,
"NACK Generation Interval" 500 us). docs/evaluation.md has the table with each source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evaluation.hosts.dcqcn import DcqcnConfig

AckQueue = Literal["data", "control"]


@dataclass(frozen=True)
class Dcqcn:
    """One NIC profile. Rates in Gb/s, times in us, sizes in bytes."""

    name: str = "custom"
    g: float = 1 / 256  # EWMA_GAIN
    t_alpha_us: float = 1.0  # ALPHA_RESUME_INTERVAL: period of UpdateAlphaMlx
    t_dec_us: float = 4.0  # RATE_DECREASE_INTERVAL: period of CheckRateDecreaseMlx
    t_inc_us: float = 900.0  # RP_TIMER: period of RateIncEventTimerMlx
    fast_recovery: int = 1  # FAST_RECOVERY_TIMES
    ai_gbps: float = 0.05  # RATE_AI
    hai_gbps: float = 0.1  # RATE_HAI
    min_gbps: float = 0.1  # MIN_RATE
    clamp_target_rate: bool = False  # CLAMP_TARGET_RATE
    rate_on_first_cnp: float = 1.0  # RdmaHw attribute RateOnFirstCnp (default, never set)
    has_win: bool = True  # HAS_WIN: in-flight bytes capped at the BDP
    var_win: bool = True  # VAR_WIN: window scaled by rate / line rate (GetWin)
    global_t: bool = True  # GLOBAL_T: the window is the largest BDP of any host pair
    # ACK_HIGH_PRIO: only picks which PFC class can pause the NIC's ACK queue (third.cc sets
    # RdmaEgressQueue::ack_q_idx = 0 or 3); the NIC serves its ACK queue first either way.
    ack_high_prio: bool = False
    # Which switch queue ACKs/NACKs take. HPCC: their flow's data queue ("data"; the switch
    # attribute AckHighPrio defaults to 0 and nothing sets it), FIFO behind data, counted by
    # PFC. "control": a strict-priority class that PFC neither counts nor pauses.
    ack_queue: AckQueue = "data"
    ack_bytes: int = 48  # ReceiveUdp: 14 B padding + 12 B qbbHeader + 20 B IPv4 + 2 B PPP
    nack_interval_us: float = 500.0  # RdmaHw "NACK Generation Interval" (default)
    # Not HPCC (0 there: every ACK of a CE packet carries the CNP flag): the notification
    # point sends at most one CNP flag per flow per interval.
    cnp_interval_us: float = 0.0
    # Not simulated by the fabric kernel (HPCC's Mellanox model has no byte counter); kept
    # so that the bmv2 hosts' profile names what it differs in.
    byte_counter_bytes: int = 0


HPCC_CONFIG = Dcqcn(name="hpcc-config")
ASTRA_CONFIG = Dcqcn(name="astra-config", global_t=False)
HPCC_RUN_DCQCN = Dcqcn(
    name="hpcc-run-dcqcn",
    t_inc_us=300.0,
    ai_gbps=0.002,
    hai_gbps=0.02,
    min_gbps=1.0,
    has_win=False,
    var_win=False,
    ack_high_prio=True,
)


def _bmv2(c: DcqcnConfig) -> Dcqcn:
    return Dcqcn(
        name="bmv2-hosts",
        g=c.g,
        t_alpha_us=c.alpha_timer_us,
        # the bmv2 RP cuts on each CNP, and its NP sends at most one per cnp_interval: a
        # decrease check of that period gives the same cut cadence
        t_dec_us=c.cnp_interval_us,
        t_inc_us=c.increase_timer_us,
        fast_recovery=c.fast_recovery,
        ai_gbps=c.r_ai_mbps / 1000,
        hai_gbps=c.r_hai_mbps / 1000,
        min_gbps=c.min_rate_mbps / 1000,
        has_win=False,
        var_win=False,
        cnp_interval_us=c.cnp_interval_us,
        byte_counter_bytes=c.byte_counter,
    )


BMV2_HOSTS = _bmv2(DcqcnConfig())
PROFILES: dict[str, Dcqcn] = {
    p.name: p for p in (HPCC_CONFIG, ASTRA_CONFIG, HPCC_RUN_DCQCN, BMV2_HOSTS)
}
# The paper ran "the RDMA configuration of HPCC" on Astra-Sim's ns-3 backend: the DCQCN block
# of HPCC's config file (which Astra-Sim's copies); docs/evaluation.md gives the reasoning.
DEFAULT_PROFILE = "hpcc-config"


def profile(p: Dcqcn | str) -> Dcqcn:
    """A profile by name, or the given one."""
    if isinstance(p, Dcqcn):
        return p
    try:
        return PROFILES[p]
    except KeyError:
        raise ValueError(f"unknown DCQCN profile {p!r}; known: {', '.join(PROFILES)}") from None


def bdp_bytes(hops: int, prop_ns: int, link_gbps: float, mtu: int) -> int:
    """HPCC's window for a path of `hops` links (third.cc CalculateRoute and main): rtt =
    2 x propagation + one MTU serialisation per hop (one way), times the path's rate, in
    bytes, with third.cc's integer nanoseconds."""
    bps = round(link_gbps * 1e9)
    rtt_ns = 2 * hops * prop_ns + hops * (mtu * 1_000_000_000 * 8 // bps)
    return rtt_ns * bps // 1_000_000_000 // 8
