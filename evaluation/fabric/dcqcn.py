"""The RDMA NIC's congestion-control profiles: one `Dcqcn` declaration, named profiles, which
both instruments run by name (the fabric simulator's `--dcqcn`/`--profile`, the bmv2 hosts'
`--profile`). The rules are `evaluation/nic/reaction_point.py`'s: HPCC's ns-3 `rdma-hw.cc` in
CC_MODE 1 (its "Mellanox" DCQCN, identical in astra-sim/astra-network-ns3), or the DCQCN
paper's (`rules`); a profile supplies their constants. Sources
(alibaba-edu/High-Precision-Congestion-Control, astra-sim/astra-network-ns3):

- `hpcc-config`: HPCC's `mix/config.txt` (and `simulation/mix/config.txt`), CC_MODE set to 1
  (the file ships CC_MODE 3 = HPCC; the paper ran DCQCN).
- `astra-config`: astra-network-ns3's `scratch/config/config.txt`, CC_MODE set to 1 (it ships
  CC_MODE 12, which no handler in rdma-hw.cc implements: no rate control at all). The same
  DCQCN values as HPCC's file; GLOBAL_T 0 instead of 1.
- `hpcc-run-dcqcn`: HPCC's `run.py --cc dcqcn` at bw = 10 (AI = 5 * bw / 25 Mb/s,
  HAI = 50 * bw / 25 Mb/s), what HPCC's own scripts generate for DCQCN; the fabric's first
  version ran these values.
- `dcqcn-paper`: the DCQCN paper's NIC (Zhu et al., SIGCOMM 2015): its rules (a cut per CNP, a
  byte counter beside the timer), its parameter table (g, K = T = 55 us, B = 10 MB, F = 5,
  R_AI = 40 Mb/s, N = 50 us), rate only (no window); the values the paper leaves open are ours
  (R_HAI = 10 x R_AI, a 10 Mb/s floor). The emulated hosts' NIC until issue 44.

Values not in any config file are rdma-hw.cc's attribute defaults (RateOnFirstCnp 1.0,
"NACK Generation Interval" 500 us). docs/evaluation.md has the table with each source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AckQueue = Literal["data", "control", "control-bmv2"]
Rules = Literal["mellanox", "dcqcn-paper"]


@dataclass(frozen=True)
class Dcqcn:
    """One NIC profile. Rates in Gb/s, times in us, sizes in bytes."""

    name: str = "custom"
    rules: Rules = "mellanox"  # evaluation/nic/reaction_point.py
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
    # "control-bmv2": that class as bmv2's priority queues serve it, each queue rated on its own
    # (`set_queue_rate`), so its frames take none of data's time (the fabric experiment's model
    # of the emulation with the switches' ACK class on; docs/ack_priority.md).
    ack_queue: AckQueue = "data"
    ack_bytes: int = 48  # ReceiveUdp: 14 B padding + 12 B qbbHeader + 20 B IPv4 + 2 B PPP
    # An ACK frame per data packet (HPCC: L2_ACK_INTERVAL 1), carrying the CNP flag; False: the
    # receiver sends frames only for a CNP (of `ack_bytes`) or a NACK, and its progress reaches
    # the sender out of band (the emulated hosts: their receivers' state is in the sender's
    # process). Rate-only profiles only: a window needs the ACKs.
    ack_frames: bool = True
    nack_interval_us: float = 500.0  # RdmaHw "NACK Generation Interval" (default)
    # Not HPCC (0 there: every ACK of a CE packet carries the CNP flag): the notification
    # point sends at most one CNP flag per flow per interval.
    cnp_interval_us: float = 0.0
    # dcqcn-paper only: an increase event per this many bytes sent (0: none; HPCC's Mellanox
    # model has no byte counter), and alpha's value before the first CNP (HPCC: 1 at it)
    byte_counter_bytes: int = 0
    alpha_init: float = 1.0


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


DCQCN_PAPER = Dcqcn(
    name="dcqcn-paper",
    rules="dcqcn-paper",
    g=1 / 256,
    t_alpha_us=55.0,  # K
    t_dec_us=50.0,  # unused by these rules: every CNP cuts
    t_inc_us=55.0,  # T
    fast_recovery=5,  # F
    ai_gbps=0.040,
    hai_gbps=0.400,  # ours: 10 x R_AI
    min_gbps=0.010,  # ours: 0.1 % of 10 Gb/s
    has_win=False,
    var_win=False,
    # the bmv2 hosts' receivers send a RoCEv2 CNP frame (Eth 14 + IPv4 20 + UDP 8 + BTH 12 +
    # 16 reserved + ICRC 4 bytes) and no ACKs
    ack_frames=False,
    ack_bytes=74,
    cnp_interval_us=50.0,  # N: at most one CNP per QP per 50 us (the notification point)
    byte_counter_bytes=10 * 1024 * 1024,  # B
)
PROFILES: dict[str, Dcqcn] = {
    p.name: p for p in (HPCC_CONFIG, ASTRA_CONFIG, HPCC_RUN_DCQCN, DCQCN_PAPER)
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
