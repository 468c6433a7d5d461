"""One adapter per implementation of Symphony's per-packet algorithm (`Implementation`)."""

from __future__ import annotations

from conformance.adapters.kernel import KernelAdapter
from conformance.adapters.model import ModelAdapter
from conformance.adapters.t2na import T2naModelAdapter
from conformance.implementation import Implementation


def in_process() -> list[Implementation]:
    """Every implementation one Python process drives: the model's variants, the fabric kernel
    and t2na (skipped without a Tofino model). bmv2 runs inside the PTF suite instead."""
    return [ModelAdapter("bmv2"), ModelAdapter("tofino2"), KernelAdapter(), T2naModelAdapter()]
