"""Job parameter overrides: type checks here, range checks by the golden model.

Parameters come from three layers, later ones winning: the config's ``[defaults]``, the global
values set at run time (``SetParams`` without a job), and the job's own overrides. Only the
overrides are stored; the effective ``JobParams`` is computed when entries are built, so changing
a global default reaches every job that does not override it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# name -> accepted Python types (bool is excluded explicitly: it is an int subclass).
PARAM_TYPES: dict[str, tuple[type, ...]] = {
    "k": (int, float),
    "tau": (int, float),
    "t_win_us": (int, float),
    "n_warmup": (int,),
    "n_sample": (int,),
    "alpha_max": (int,),
    "psn_mode": (str,),
}


class ParamError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def check_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Reject unknown names, wrong types and out-of-range values; return a clean copy."""
    from symphony.model.params import JobParams

    clean: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in PARAM_TYPES:
            raise ParamError(name, f"unknown parameter (known: {', '.join(PARAM_TYPES)})")
        if isinstance(value, bool) or not isinstance(value, PARAM_TYPES[name]):
            raise ParamError(name, f"wrong type {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ParamError(name, f"must be finite, got {value}")
        if name in ("k", "tau", "t_win_us"):
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


def effective(*layers: Mapping[str, Any]) -> Any:
    """JobParams from the model defaults overlaid with each layer in turn."""
    from symphony.model.params import JobParams

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
