"""Runtime parameters (SPEC section 7) and their encoding as P4 action data.

Defaults the paper gives: k = 0.01, tau = 0.25, T_win = 100 us, K_min/K_max/P_max = 50/100/0.2.
The others are ours; docs/parameters.md gives the reasons.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

from symphony.model import arithmetic as ar

PsnMode = Literal["relative", "absolute"]

T_WIN_MAX_TICKS = (1 << 32) - 1
N_WARMUP_MAX = ar.PSN_MASK
N_SAMPLE_MAX = (1 << 32) - 1


@dataclass(frozen=True)
class JobParams:
    """Symphony's per-job parameters, in the paper's units."""

    k: float = 0.01
    tau: float = 0.25
    t_win_us: float = 100.0
    n_warmup: int = 16
    n_sample: int = 32
    alpha_max: int = 32
    psn_mode: PsnMode = "relative"

    def validate(self, tick_ns: int = 1000) -> JobParams:
        """Raise ValueError naming the first field out of range; return self when all are fine."""
        if not (self.k == 0 or ar.K_MIN <= self.k < ar.K_MAX) or math.isnan(self.k):
            raise ValueError(f"k: must be 0 or in [2^-16, 256), got {self.k!r}")
        if not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau: must be in [0, 1], got {self.tau!r}")
        if math.isnan(self.t_win_us) or self.t_win_us < 0.0:
            raise ValueError(f"t_win_us: must be >= 0, got {self.t_win_us!r}")
        ticks = self.t_win_us * 1000 / tick_ns  # inf for a huge finite t_win_us: round() raises
        if not math.isfinite(ticks) or round(ticks) > T_WIN_MAX_TICKS:
            raise ValueError(f"t_win_us: {self.t_win_us!r} exceeds the 32-bit window timer")
        if not isinstance(self.n_warmup, int) or not 0 <= self.n_warmup <= N_WARMUP_MAX:
            raise ValueError(f"n_warmup: must be an integer in [0, 2^24), got {self.n_warmup!r}")
        if not isinstance(self.n_sample, int) or not 0 <= self.n_sample <= N_SAMPLE_MAX:
            raise ValueError(f"n_sample: must be an integer in [0, 2^32), got {self.n_sample!r}")
        if not isinstance(self.alpha_max, int) or not 1 <= self.alpha_max <= ar.ALPHA_LIMIT:
            raise ValueError(f"alpha_max: must be an integer in [1, 255], got {self.alpha_max!r}")
        if self.psn_mode not in ("relative", "absolute"):
            raise ValueError(f"psn_mode: must be 'relative' or 'absolute', got {self.psn_mode!r}")
        return self

    def merged(self, overrides: dict[str, Any] | None) -> JobParams:
        """These parameters with some fields replaced; unknown names are an error."""
        if not overrides:
            return self
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown parameter (known: {', '.join(sorted(known))})")
        return replace(self, **overrides).validate()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_action_params(self, tick_ns: int = 1000) -> dict[str, int]:
        """Action data of `SymphonyIngress.classify.set_params`; tick_ns is the target's timestamp
        unit (bmv2: 1000 ns, Tofino: 1 ns)."""
        self.validate(tick_ns)
        return {
            "mark_enable": int(self.k > 0),
            "k_log": ar.k_to_log(self.k) if self.k > 0 else 0,
            "tau_q8": round(self.tau * ar.TAU_ONE),
            "t_win": round(self.t_win_us * 1000 / tick_ns),
            "n_warmup": self.n_warmup,
            "n_sample": self.n_sample,
            "alpha_max": self.alpha_max,
            "psn_absolute": int(self.psn_mode == "absolute"),
        }


@dataclass(frozen=True)
class QueueParams:
    """Queue-depth ECN marking of one egress port (SPEC section 6), in the target's depth unit."""

    k_min: int = 50
    k_max: int = 100
    p_max: float = 0.2

    def validate(self) -> QueueParams:
        if not isinstance(self.k_min, int) or self.k_min < 0:
            raise ValueError(f"k_min: must be an integer >= 0, got {self.k_min!r}")
        if not isinstance(self.k_max, int) or self.k_max <= self.k_min:
            raise ValueError(f"k_max: must be an integer > k_min, got {self.k_max!r}")
        if self.k_max >= QUEUE_DEPTH_LIMIT:
            raise ValueError(f"k_max: must be below {QUEUE_DEPTH_LIMIT}, got {self.k_max!r}")
        if not 0.0 <= self.p_max <= 1.0:
            raise ValueError(f"p_max: must be in [0, 1], got {self.p_max!r}")
        return self


# Queue depths are 19-bit fields on both targets (deq_qdepth).
QUEUE_DEPTH_LIMIT = 1 << 19
