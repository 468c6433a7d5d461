"""Runtime parameters (SPEC section 7): their one declaration, checks and P4 action data.

`JobParams` declares the per-job parameters once. Each field's kind (float, int or str) is in its
metadata; everything else derives from the dataclass: the names the config's ``[defaults]``
accepts (`PARAM_NAMES`), the types a request may carry (`PARAM_TYPES`, checked by
`check_overrides`), the API's conversion (api/convert.py walks `PARAM_NAMES`), the CLI's parsing,
and the action data of `SymphonyIngress.classify.set_params` (`JobParams.to_action_params`).
Tests check the API's ``Params`` message and the P4Info's action parameters against it
(tests/test_params_declaration.py, tests/test_p4info_names.py). docs/architecture.md walks
through adding one.

Parameters come from three layers, later ones winning: the config's ``[defaults]``, the global
values set at run time (``SetParams`` without a job), and the job's own overrides. Only the
overrides are stored; the effective ``JobParams`` is computed when entries are built, so changing
a global default reaches every job that does not override it.

Defaults the paper gives: k = 0.01, tau = 0.25, T_win = 100 us, K_min/K_max/P_max = 50/100/0.2.
The others are ours; docs/parameters.md gives the reasons.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from symphony.model import arithmetic as ar
from symphony.sizes import BMV2_TICK_NS, QUEUE_DEPTH_LIMIT

PsnMode = Literal["relative", "absolute"]

# The window test is unsigned on bmv2 and made of two serial tests on Tofino2 (p4src/t2na/
# include/job_state.p4); both agree exactly below 2^31 ticks (36 minutes at 1.024 us).
T_WIN_MAX_TICKS = (1 << 31) - 1
N_WARMUP_MAX = ar.PSN_MASK
# t2na bridges the gate in 16 bits (p4src/t2na/include/types.p4); v1model carries 19.
GATE_DEPTH_LIMIT = 1 << 16
N_SAMPLE_MAX = (1 << 32) - 1


# A per-job parameter's kind (float, int or str), in its field's metadata.
_FLOAT = {"kind": float}
_INT = {"kind": int}
_STR = {"kind": str}


@dataclass(frozen=True)
class JobParams:
    """Symphony's per-job parameters, in the paper's units: the one declaration."""

    k: float = field(default=0.01, metadata=_FLOAT)
    tau: float = field(default=0.25, metadata=_FLOAT)
    t_win_us: float = field(default=100.0, metadata=_FLOAT)
    n_warmup: int = field(default=16, metadata=_INT)
    n_sample: int = field(default=32, metadata=_INT)
    alpha_max: int = field(default=32, metadata=_INT)
    psn_mode: PsnMode = field(default="relative", metadata=_STR)
    # Backlog gate (issue 21): a Symphony mark leaves only when the packet joins an egress queue
    # at least this deep, in the queue's depth unit as QueueParams' (packets on bmv2 and in the
    # simulator); 0 is the paper's policy (every mark leaves). `marks` still counts decisions.
    gate_depth: int = field(default=0, metadata=_INT)

    def validate(self, tick_ns: int = BMV2_TICK_NS) -> JobParams:
        """Raise ValueError naming the first field out of range; return self when all are fine."""
        if not (self.k == 0 or ar.K_MIN <= self.k < ar.K_MAX) or math.isnan(self.k):
            raise ValueError(f"k: must be 0 or in [2^-16, 256), got {self.k!r}")
        if not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau: must be in [0, 1], got {self.tau!r}")
        # The switch compares in 1/256ths (eq. 5 without division); rounding silently would make
        # alpha differ from the rule the operator asked for.
        q8 = self.tau * ar.TAU_ONE
        if abs(q8 - round(q8)) > 1e-9:
            lo, hi = math.floor(q8), math.ceil(q8)
            raise ValueError(
                f"tau: must be a multiple of 1/256 (the switch's precision), got {self.tau!r};"
                f" nearest: {lo / ar.TAU_ONE!r} or {hi / ar.TAU_ONE!r}"
            )
        if math.isnan(self.t_win_us) or self.t_win_us < 0.0:
            raise ValueError(f"t_win_us: must be >= 0, got {self.t_win_us!r}")
        ticks = self.t_win_us * 1000 / tick_ns  # inf for a huge finite t_win_us: round() raises
        if not math.isfinite(ticks) or round(ticks) > T_WIN_MAX_TICKS:
            raise ValueError(
                f"t_win_us: {self.t_win_us!r} exceeds the window timer's range"
                f" ({T_WIN_MAX_TICKS} ticks of {tick_ns} ns)"
            )
        if not isinstance(self.n_warmup, int) or not 0 <= self.n_warmup <= N_WARMUP_MAX:
            raise ValueError(f"n_warmup: must be an integer in [0, 2^24), got {self.n_warmup!r}")
        if not isinstance(self.n_sample, int) or not 0 <= self.n_sample <= N_SAMPLE_MAX:
            raise ValueError(f"n_sample: must be an integer in [0, 2^32), got {self.n_sample!r}")
        if not isinstance(self.alpha_max, int) or not 1 <= self.alpha_max <= ar.ALPHA_LIMIT:
            raise ValueError(f"alpha_max: must be an integer in [1, 255], got {self.alpha_max!r}")
        if not isinstance(self.gate_depth, int) or not 0 <= self.gate_depth < GATE_DEPTH_LIMIT:
            raise ValueError(
                f"gate_depth: must be an integer in [0, 2^16), got {self.gate_depth!r}"
            )
        if self.psn_mode not in ("relative", "absolute"):
            raise ValueError(f"psn_mode: must be 'relative' or 'absolute', got {self.psn_mode!r}")
        return self

    def merged(self, overrides: dict[str, Any] | None) -> JobParams:
        """These parameters with some fields replaced; unknown names are an error."""
        if not overrides:
            return self
        unknown = sorted(set(overrides) - set(PARAM_NAMES))
        if unknown:
            known = ", ".join(sorted(PARAM_NAMES))
            raise ValueError(f"{unknown[0]}: unknown parameter (known: {known})")
        return replace(self, **overrides).validate()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_action_params(self, tick_ns: int = BMV2_TICK_NS) -> dict[str, int]:
        """Action data of `SymphonyIngress.classify.set_params`; tick_ns is the target's timestamp
        unit (`sizes.TICK_NS`: bmv2 1000 ns, Tofino2 1024 ns)."""
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
            "sym_gate": self.gate_depth,
        }


# Derived from the declaration: name -> kind, the names in order, the Python types accepted.
PARAM_KINDS: dict[str, type] = {f.name: f.metadata["kind"] for f in fields(JobParams)}
PARAM_NAMES: tuple[str, ...] = tuple(PARAM_KINDS)
# bool is excluded explicitly (an int subclass); a float parameter takes an int too.
PARAM_TYPES: dict[str, tuple[type, ...]] = {
    name: (int, float) if kind is float else (kind,) for name, kind in PARAM_KINDS.items()
}


class ParamError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def parse_assignment(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` as symphonyctl and the Slurm hooks take a parameter: the value in the
    parameter's kind (PARAM_KINDS). ParamError names what is wrong; ranges are check_overrides'."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise ParamError(repr(text), "expected NAME=VALUE")
    if name not in PARAM_KINDS:
        raise ParamError(name, f"unknown parameter (known: {', '.join(PARAM_NAMES)})")
    try:
        return name, PARAM_KINDS[name](raw)
    except ValueError:
        raise ParamError(name, f"{raw!r} is not a number") from None


# The policy new jobs get (issue 21, docs/policy-study.md): the backlog gate of 8 packets with
# k = 0.001, chosen on the choosing seeds and measured on held-out ones. It sits under the
# controller config's [defaults] (Config.defaults): the paper's policy is gate_depth = 0 with
# k = 0.01 (JobParams' own defaults, kept as the paper's algorithm).
SHIPPED_POLICY: Mapping[str, Any] = {"k": 0.001, "gate_depth": 8}


def check_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Reject unknown names, wrong types and out-of-range values; return a clean copy."""
    clean: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in PARAM_TYPES:
            raise ParamError(name, f"unknown parameter (known: {', '.join(PARAM_NAMES)})")
        if isinstance(value, bool) or not isinstance(value, PARAM_TYPES[name]):
            raise ParamError(name, f"wrong type {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ParamError(name, f"must be finite, got {value}")
        if PARAM_KINDS[name] is float and isinstance(value, int | float):
            value = float(value)
        clean[name] = value
        # One field at a time so the error names the field that is wrong.
        try:
            JobParams().merged({name: value}).validate()
        except ValueError as exc:
            raise ParamError(name, _reason(name, exc)) from exc
    try:
        JobParams().merged(clean).validate()
    except ValueError as exc:
        raise ParamError("params", str(exc)) from exc
    return clean


def effective(*layers: Mapping[str, Any]) -> JobParams:
    """JobParams from the model defaults overlaid with each layer in turn."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer)
    params = JobParams().merged(merged)
    params.validate()
    return params


def _reason(name: str, exc: ValueError) -> str:
    """The model's message without its own "field: " prefix (the caller adds the full path)."""
    text = str(exc)
    return text[len(name) + 2 :] if text.startswith(f"{name}: ") else text


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
