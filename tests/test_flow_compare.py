"""flow_compare's pieces that need no switch: a rate timeline cut to its message, the bmv2
side read from a trace (cuts counted as rate decreases), the totals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.hosts import flow_compare as fc


def test_a_timeline_spans_its_message_with_the_rate_in_force() -> None:
    log = [(0.0, 1.0), (2.0, 0.5), (3.0, 0.75), (9.0, 1.0)]
    assert fc._span(log, 2.5, 5.0) == [(2.5, 0.5), (3.0, 0.75), (5.0, 0.75)]
    assert fc._span([], 1.0, 2.0) == [(1.0, 1.0), (2.0, 1.0)]  # never set: line rate


def test_bmv2_flows_count_decreases_as_cuts() -> None:
    trace = {
        "messages": [
            {"send": 0, "src": 0, "dst": 1, "step": 0, "first_tx": 1.0, "last_rx": 3.0,
             "packets": 10, "received": 10},
        ],
        "qps": [{"send": 0, "rate_log": [[0.0, 1000.0], [1.5, 500.0], [2.0, 750.0],
                                         [2.5, 250.0]], "cnps": 2}],
    }  # fmt: skip
    (f,) = fc.bmv2_flows(trace, 1000.0).values()
    assert f["dur"] == 2.0 and f["cnps"] == 2 and f["cuts"] == 2 and f["min_rate"] == 0.25


def test_a_trace_without_qp_records_is_refused() -> None:
    with pytest.raises(ValueError, match="no per-QP records"):
        fc.bmv2_flows({"messages": [], "qps": []}, 1000.0)


def test_totals() -> None:
    p = fc.FlowPair(0, 0, 1, 0, 1.0, 2.0, 1, 3, 1, 2, 0.5, 0.25)
    q = fc.FlowPair(1, 1, 2, 0, 3.0, 2.0, 0, 0, 0, 0, 1.0, 1.0)
    t = fc.totals([p, q])
    assert t["sum_s_bmv2"] == t["sum_s_sim"] == 4.0
    assert t["cnps_sim"] == 3 and t["sends_slower_in_sim"] == 1
