"""The switch's integer arithmetic, bit for bit (SPEC sections 1, 2 and 5).

Every number the P4 program computes is computed here the same way, so that the lookup tables
the controller installs and the predictions the tests compare against come from one place.
"""

from __future__ import annotations

import math
import zlib
from functools import cache

STEP_BITS = 16
STEP_MASK = (1 << STEP_BITS) - 1
STEP_HALF = 1 << (STEP_BITS - 1)
PSN_BITS = 24
PSN_MASK = (1 << PSN_BITS) - 1

# Logs are fixed point with LOG_FRAC_BITS fractional bits.
LOG_FRAC_BITS = 8
LOG_ONE = 1 << LOG_FRAC_BITS
# Mantissa bits the log2 LPM table keeps after the leading one: buckets are 2^-6 wide (relative),
# which bounds one log's error to about 0.4 % and keeps the table at 1215 entries.
LOG_MANTISSA_BITS = 6
# k is stored as k_log = round((log2 k + K_LOG_OFFSET) * LOG_ONE) so that it is never negative;
# the same offset is the width of the probability table's domain: d in [0, PROB_TABLE_SIZE)
# covers P in [2^-16, 1).
K_LOG_OFFSET = 16
PROB_TABLE_SIZE = K_LOG_OFFSET * LOG_ONE
K_MIN = 2.0**-K_LOG_OFFSET
K_MAX = 256.0
ALPHA_BITS = 8
ALPHA_LIMIT = (1 << ALPHA_BITS) - 1
# The coin: a uniform 24-bit number; a packet is marked iff coin < threshold, threshold in
# [0, COIN_RANGE]. 24 bits keep the quantisation below 0.02 % for every P >= 2^-12.
COIN_BITS = 24
COIN_RANGE = 1 << COIN_BITS
TAU_ONE = 256  # tau is tau_q8 / 256


def step_later(s: int, ref: int) -> bool:
    """True iff step s is serially later than ref (RFC 1982 over 16 bits)."""
    d = (s - ref) & STEP_MASK
    return 0 < d < STEP_HALF


def step_earlier(s: int, ref: int) -> bool:
    """True iff step s is serially earlier than ref; the ambiguous distance 2^15 counts as earlier
    (fail-safe: an earlier packet is a lagging one and is never throttled)."""
    return ((s - ref) & STEP_MASK) >= STEP_HALF


def step_overlap(step_min: int, step_max: int) -> int:
    """The job's step overlap as a switch sees it: step_max - step_min + 1 steps in flight,
    serially (RFC 1982). 0 when step_max is behind step_min: every step the window saw has
    completed (a LAST packet moved step_min past it)."""
    d = (step_max - step_min) & STEP_MASK
    return d + 1 if d < STEP_HALF else 0


def relative_psn(psn: int, base: int) -> int:
    """Position of a packet inside its step: (psn - base) mod 2^24 (SPEC section 2)."""
    return (psn - base) & PSN_MASK


def log_bucket(x: int) -> tuple[int, int]:
    """The LPM entry of the log table that x falls in: (prefix value, prefix length over 24 bits).

    Values below 2^(M+1) match exactly; larger ones keep the leading one and M mantissa bits.
    """
    if not 0 < x <= PSN_MASK:
        raise ValueError(f"log2 table input out of range: {x}")
    e = x.bit_length() - 1
    if e <= LOG_MANTISSA_BITS:
        return x, PSN_BITS
    drop = e - LOG_MANTISSA_BITS
    return (x >> drop) << drop, PSN_BITS - drop


def log_bucket_value(lo: int, prefix_len: int) -> int:
    """Fixed-point log2 installed for an LPM bucket: the midpoint (in log space) of the smallest
    and largest value of the bucket, which minimises the bucket's worst-case error."""
    hi = lo + (1 << (PSN_BITS - prefix_len)) - 1
    return round((math.log2(lo) + math.log2(hi)) / 2 * LOG_ONE)


def log2_fixed(x: int) -> int:
    """What the switch's log table returns for x (1 <= x < 2^24)."""
    return log_bucket_value(*log_bucket(x))


def log2_alpha(alpha: int) -> int:
    """Fixed-point log2 of alpha (exact table, 1..255)."""
    if not 1 <= alpha <= ALPHA_LIMIT:
        raise ValueError(f"alpha out of range: {alpha}")
    return round(math.log2(alpha) * LOG_ONE)


def k_to_log(k: float) -> int:
    """The k_log action parameter for a gain k in [2^-16, 256)."""
    if not K_MIN <= k < K_MAX:
        raise ValueError(f"k must be 0 or in [2^-16, 256), got {k}")
    return round((math.log2(k) + K_LOG_OFFSET) * LOG_ONE)


@cache
def _threshold_table() -> tuple[int, ...]:
    return tuple(
        round(COIN_RANGE * 2.0 ** ((d - PROB_TABLE_SIZE) / LOG_ONE)) for d in range(PROB_TABLE_SIZE)
    )


def threshold_for(d: int) -> int:
    """Coin threshold for the summed log d = log p + log alpha + k_log - log psn_rec (>= 0)."""
    if d < 0:
        raise ValueError("d is never negative on the switch: it is checked before the lookup")
    if d >= PROB_TABLE_SIZE:
        return COIN_RANGE  # P >= 1: the table's default action
    return _threshold_table()[d]


def mark_threshold(k_log: int, alpha: int, p: int, psn_rec: int, *, tofino: bool = False) -> int:
    """The coin threshold the switch applies to an outpacing packet with known p > 0 and
    psn_rec > 0: the whole of SPEC section 5 in integers. `tofino` computes d as the t2na
    program does (d_tofino); the result is the same for every input (tested)."""
    if p == 0:
        return 0  # P = k * alpha * 0 / psn_rec
    if tofino:
        d = d_tofino(k_log, alpha, p, psn_rec)
    else:
        d = log2_fixed(p) + log2_alpha(alpha) + k_log - log2_fixed(psn_rec)
    if d < 0:
        return 0  # P < 2^-16: below the table's domain
    return threshold_for(d)


D_BITS = 16


def d_tofino(k_log: int, alpha: int, p: int, psn_rec: int) -> int:
    """d as p4src/t2na/include/throttle.p4 sums it: in 16-bit registers, two operands per step,
    action data only as the first operand of a subtraction, then read back as signed."""
    mask = (1 << D_BITS) - 1
    partial = (log2_fixed(p) + k_log) & mask
    partial = (log2_fixed(psn_rec) - partial) & mask
    d = (log2_alpha(alpha) - partial) & mask
    return d - (1 << D_BITS) if d >> (D_BITS - 1) else d


def exact_probability(k: float, alpha: int, p: int, psn_rec: int) -> float:
    """The paper's P = min(1, k * alpha * p / psn_rec), in floating point."""
    return min(1.0, k * alpha * p / psn_rec)


def applied_probability(threshold: int) -> float:
    return threshold / COIN_RANGE


def window_raises_alpha(window_ahead_packets: int, window_packets: int, tau_q8: int) -> bool:
    """Eq. 5 in integers: window_ahead_packets >= tau * window_packets with tau = tau_q8 / 256."""
    return window_ahead_packets * TAU_ONE >= tau_q8 * window_packets


def window_closes(now: int, win_start: int, t_win: int, *, split: bool = False) -> bool:
    """SPEC 4.1's test `now - win_start >= T_win` on 32-bit timestamps, unsigned and wrap-safe.

    bmv2 computes it as written. Tofino's stateful ALU tests the sign of a two-operand sum, so
    `split` makes it the way p4src/t2na does: the serial test win_start + (T_win - now) <= 0, or
    a gap of 2^31 ticks or more (which the serial test reads backwards). The two agree with the
    unsigned test for every gap while T_win < 2^31 (params.T_WIN_MAX_TICKS)."""
    if split:
        return wrap_int32(win_start + t_win - now) <= 0 or wrap_int32(now - win_start) < 0
    return (now - win_start) & 0xFFFFFFFF >= t_win


def wrap_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def tau_increment(outpacing: bool, tau_q8: int) -> int:
    """Per-packet step of Tofino's running eq. 5: the sum over a window is
    256 * window_ahead_packets - tau_q8 * window_packets, which is >= 0 exactly when eq. 5
    holds."""
    return TAU_ONE * outpacing - tau_q8


def crc32(data: bytes) -> int:
    """bmv2's crc32 (reflected, init and final xor 0xFFFFFFFF): zlib's CRC-32."""
    return zlib.crc32(data) & 0xFFFFFFFF


def _crc16_bitwise(data: bytes) -> int:
    """CRC-16/ARC bit by bit: the definition, which the table below is built from (tested)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


# one byte's eight steps at once (the simulator hashes millions of flows)
_CRC16_TABLE = tuple(_crc16_bitwise(bytes([b])) for b in range(256))


def crc16(data: bytes) -> int:
    """bmv2's crc16: CRC-16/ARC (polynomial 0x8005 reflected, init 0, no final xor)."""
    crc = 0
    for byte in data:
        crc = (crc >> 8) ^ _CRC16_TABLE[(crc ^ byte) & 0xFF]
    return crc
