"""Measured accuracy of the switch's probability arithmetic (SPEC section 5).

The applied probability is thr(d) / 2^24 with d = Lp + La + k_log - Lq (model/arithmetic.py).
Its error against the exact P = min(1, k * alpha * p / psn_rec) has two parts:
- the log tables: d - t, where t is the exact scaled log; each table's error is measured over its
  whole input range (all 2^24 - 1 values of p and psn_rec, every alpha), and the worst cases of
  independent inputs add up;
- the threshold rounding: thr(d) against 2^24 * 2^((d - 4096) / 256), measured over every d whose
  probability is >= 2^-12 (plus the clamps at P >= 1, which only shrink the error).
`python -m conformance.accuracy` prints the bound; docs/lut.md publishes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from symphony.model import arithmetic as ar

P_FLOOR = 2.0**-12  # SPEC 5: the accuracy requirement applies for P >= 2^-12
SPEC_BOUND = 0.10


def log_table_errors() -> np.ndarray:
    """Lx - 256 * log2(x) for every x in 1..2^24-1, in fixed-point units (index 0 unused)."""
    x = np.arange(1, ar.PSN_MASK + 1, dtype=np.int64)
    e = np.floor(np.log2(x)).astype(np.int64)
    # floor(log2) in float can be off by one just below a power of two: fix it exactly.
    e -= (np.left_shift(1, e) > x).astype(np.int64)
    e += (np.left_shift(1, e + 1) <= x).astype(np.int64)
    drop = np.maximum(e - ar.LOG_MANTISSA_BITS, 0)
    lo = np.left_shift(np.right_shift(x, drop), drop)
    hi = lo + np.left_shift(1, drop) - 1
    value = np.round((np.log2(lo) + np.log2(hi)) / 2 * ar.LOG_ONE)
    err = value - np.log2(x) * ar.LOG_ONE
    return np.concatenate(([0.0], err))


def alpha_errors() -> np.ndarray:
    a = np.arange(1, ar.ALPHA_LIMIT + 1)
    return np.array([ar.log2_alpha(int(v)) for v in a]) - np.log2(a) * ar.LOG_ONE


def threshold_rounding() -> tuple[float, float]:
    """(min, max) of thr(d) / ideal(d) - 1 over every d with ideal probability >= 2^-12."""
    d = np.arange(ar.PROB_TABLE_SIZE)
    ideal = ar.COIN_RANGE * np.exp2((d - ar.PROB_TABLE_SIZE) / ar.LOG_ONE)
    thr = np.array([ar.threshold_for(int(v)) for v in d])
    keep = ideal >= P_FLOOR * ar.COIN_RANGE / 2  # one log2 step of margin below the floor
    rel = thr[keep] / ideal[keep] - 1
    return float(rel.min()), float(rel.max())


@dataclass(frozen=True)
class Bound:
    log_err_low: float  # worst (d - t) in fixed-point units, downwards
    log_err_high: float
    rel_low: float  # worst applied / exact - 1
    rel_high: float

    @property
    def worst(self) -> float:
        return max(-self.rel_low, self.rel_high)


def bound(k: float | None = None) -> Bound:
    """Worst-case relative error of the applied probability over every p, psn_rec and alpha, for
    one k (or, with k=None, for the worst k_log rounding of any k)."""
    lx = log_table_errors()[1:]
    la = alpha_errors()
    if k is None:
        ek_low, ek_high = -0.5, 0.5
    else:
        ek = ar.k_to_log(k) - (math.log2(k) + ar.K_LOG_OFFSET) * ar.LOG_ONE
        ek_low = ek_high = ek
    low = lx.min() - lx.max() + la.min() + ek_low
    high = lx.max() - lx.min() + la.max() + ek_high
    t_low, t_high = threshold_rounding()
    return Bound(
        log_err_low=float(low),
        log_err_high=float(high),
        rel_low=(1 + t_low) * 2 ** (low / ar.LOG_ONE) - 1,
        rel_high=(1 + t_high) * 2 ** (high / ar.LOG_ONE) - 1,
    )


def main() -> None:
    for label, k in (("k = 0.01 (default)", 0.01), ("any k", None)):
        b = bound(k)
        print(
            f"{label}: applied/exact - 1 in [{b.rel_low:+.4%}, {b.rel_high:+.4%}]"
            f" (worst {b.worst:.4%}, SPEC limit {SPEC_BOUND:.0%}); log error"
            f" [{b.log_err_low / ar.LOG_ONE:+.5f}, {b.log_err_high / ar.LOG_ONE:+.5f}] in log2"
        )


if __name__ == "__main__":
    main()
