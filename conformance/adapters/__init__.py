"""One adapter per implementation of Symphony's per-packet algorithm (`Implementation`).

The golden model's variants, bmv2 (through the PTF suite) and t2na have theirs here. An
implementation that lives in a higher layer keeps its adapter beside it and registers it under
the entry-point group `symphony.conformance` of an installed distribution: the fabric kernel's
(evaluation/fabric/conformance_adapter.py) by symphony-tools, whose pyproject.toml
(controller/symphony_tools/) declares it. So the suite runs it without importing evaluation/.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from conformance.adapters.model import ModelAdapter
from conformance.adapters.t2na import T2naModelAdapter
from conformance.implementation import Implementation

ENTRY_POINTS = "symphony.conformance"


def registered() -> dict[str, Callable[[], Implementation]]:
    """Implementation name -> its adapter's factory, for every entry point in `ENTRY_POINTS` of
    the installed distributions. One that does not load is an error naming it, never a skip."""
    found = {}
    for ep in sorted(entry_points(group=ENTRY_POINTS), key=lambda ep: ep.name):
        try:
            found[ep.name] = ep.load()
        except ImportError as exc:
            raise RuntimeError(
                f"conformance implementation {ep.name!r} ({ep.value}, registered by"
                f" {ep.dist.name if ep.dist else 'an installed distribution'}) does not"
                f" import: {exc} (run from the repository root, after `make setup`)"
            ) from exc
    return found


def in_process() -> list[Implementation]:
    """Every implementation one Python process drives: the model's variants, the registered
    ones (the fabric kernel) and t2na (skipped without a Tofino model). bmv2 runs inside the
    PTF suite instead."""
    plugins = [factory() for factory in registered().values()]
    return [ModelAdapter("bmv2"), ModelAdapter("tofino2"), *plugins, T2naModelAdapter()]
