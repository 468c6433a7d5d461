"""The kernel against ns-3 packet by packet, without ns-3: every switch arrival of a recorded
ns-3 run (issue 45), as a count and a digest (`kernel.arrivals_digest`), against the kernel's
on the same workload. The numbers in tests/data/ns3_arrivals.json were measured with our ns-3
driver, built by hand outside the repository (docs/evaluation.md, "Cross-validation against
ns-3"), by `pktdiff.py --digest` (docs/measurements/crossval-regimes-2026-12-07). Every arrival
agrees in time: a kernel whose rules depart from ns-3's anywhere on this workload, the order of
two frames in one instant included, fails here (kernel versions 4 and 5 did)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import kernel as kn
from evaluation.fabric import ns3_export
from evaluation.fabric.sim import simulate

RECORDED = json.loads((Path(__file__).parent / "data" / "ns3_arrivals.json").read_text())


@pytest.mark.parametrize("rec", RECORDED["runs"], ids=lambda r: r["regime"])
def test_every_switch_arrival_is_ns3s(rec: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    ns3_export.whole_ns_transmissions(monkeypatch.setattr)  # ns-3's whole-ns frame times
    cfg = xr.packet_level_config(rec["regime"], rec["splits"])
    res = simulate(cfg, rec["seed"], cc_trace_rows=rec["trace_rows"], hop_trace_us=rec["until_us"])
    assert res.stats["error"] == 0
    rows = res.cc_trace[: int((res.cc_trace[:, 2] != 0).sum())]
    assert len(rows) < rec["trace_rows"], "the trace filled up: raise trace_rows"
    hops = rows[rows[:, 2] == kn.TR_HOP]
    code = hops[:, 7].astype(np.int64)
    flow, t = hops[:, 1].astype(np.int64), hops[:, 0].astype(np.int64)
    got = kn.arrivals_digest(np.column_stack([code & 3, flow, (code >> 2) & 0xFFFFFF, t]))
    assert got == (rec["arrivals"], rec["sha256"])
