"""flow_compare's pieces that need no switch: a rate timeline cut to its message, the bmv2
side read from a trace (cuts counted as rate decreases), the totals."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric.sim import FabricResult
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


def _row(t: float, f: int, code: int, idx: int) -> list[float]:
    return [t, f, code, 0, 0, 0, idx, 0]


def test_sim_waits_are_one_way_delays_above_the_flows_least() -> None:
    k = fc.kn
    tr = np.array(
        [
            _row(0, 0, k.TR_SEND, 0),
            _row(1, 0, k.TR_SEND, 1),
            _row(10, 0, k.TR_RECV, 0),  # 10: the least, the empty path
            _row(11, 0, k.TR_CUT, 0),  # a rate event: not a frame
            _row(15, 0, k.TR_RECV, 1),  # 14: waited 4
            _row(15, 0, k.TR_RECV, 1),  # a duplicate arrival: skipped
            _row(20, 0, k.TR_SEND, 1),  # resent: the wait counts from the last send
            _row(32, 0, k.TR_RECV, 1),  # 12: waited 2
            _row(5, 1, k.TR_SEND, 0),
            _row(7, 1, k.TR_RECV, 0),
        ],
        dtype=np.int64,
    )
    assert fc.sim_waits(tr, 0.5) == {0: [0.0, 2.0, 1.0], 1: [0.0]}


def test_waits_per_send_and_in_the_totals() -> None:
    assert fc._wait_ms([0.001, 0.003, 0.002]) == (2.0, 3.0)
    assert all(math.isnan(x) for x in fc._wait_ms([]))
    p = fc.FlowPair(0, 0, 1, 0, 1.0, 2.0, 1, 3, 1, 2, 0.5, 0.25, 2.0, 1.0, 9.0, 3.0)
    q = fc.FlowPair(1, 1, 2, 0, 3.0, 2.0, 0, 0, 0, 0, 1.0, 1.0)  # no frames recorded: NaN
    t = fc.totals([p, q])
    assert t["wait_ms_median_bmv2"] == 2.0 and t["wait_ms_max_bmv2"] == 9.0
    assert t["wait_ms_median_sim"] == 1.0 and t["wait_ms_max_sim"] == 3.0


def test_cuts_are_rate_decreases_in_both_instruments() -> None:
    # a cut at the floor (0.1 -> 0.1) changes nothing: the hosts never log it, so neither counts
    assert fc.rate_decreases([1.0, 0.5, 0.25, 0.1, 0.1, 0.1, 0.2, 0.1]) == 4
    assert fc.rate_decreases([]) == 0 and fc.rate_decreases([1.0]) == 0


def test_the_simulators_cuts_at_the_floor_are_not_counted() -> None:
    k, line = fc.kn, fc.LINE_GBPS
    # flow 0: two cuts, then three TR_CUT rows at the floor; a TR_CNP row carries the rate too
    rates = [(k.TR_CUT, 0.5), (k.TR_CUT, 0.1), (k.TR_CNP, 0.1), (k.TR_CUT, 0.1), (k.TR_CUT, 0.1)]
    tr = np.array(
        [[t, 0, code, r * line, 0, 0, 0, 0] for t, (code, r) in enumerate(rates)], dtype=float
    )
    result = FabricResult(
        seed=0, cct_us=[1.0], max_overlap=[1], mean_overlap=[1.0],
        overlap_series=np.zeros((1, 1)), rx_gbps_series=np.zeros((1, 1)), sample_us=1.0,
        step_span_us=np.zeros((1, 1)), stats={}, wall_s=0.0, lockstep_us=1.0,
        flow_done_us=np.array([10.0]), flow_begin_us=np.array([0.0]), cc_trace=tr,
    )  # fmt: skip
    f = fc.sim_flows(result, 1.0, paper=False)[0]
    assert f["cuts"] == 2 and f["cnps"] == 1 and f["min_rate"] == 0.1
