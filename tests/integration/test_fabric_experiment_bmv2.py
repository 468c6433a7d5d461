"""`make experiment-fabric`'s machinery on the real fabric, small: one run of each variant of a
ring all-reduce of 4 hosts across 2 leaves x 2 spines (evaluation/hosts/fabric_experiment.py).
The job lands on every switch of its hosts' paths, every message of the collective is
delivered, nothing is lost, each switch's registers were sampled and saw at most the steps the
wire carried at once, the baseline marks nothing, and the simulator's run of the same
configuration is written beside it. Needs what tests/integration/test_fabric_bmv2.py needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.hosts import fabric_experiment as fx
from evaluation.hosts import runs
from symphony_tools.fabric import fabric_missing

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(fabric_missing() is not None, reason=f"skipped: {fabric_missing()}"),
]


def test_one_small_run_per_variant(tmp_path: Path) -> None:
    out = tmp_path / "fx"
    rc = fx.main(["--seeds", "1", "--first-seed", "0", "--chunk", "60", "--out", str(out)])
    assert rc == 0
    rows = runs.read_rows(out / "runs.csv")
    sims = runs.read_rows(out / "sim.csv")
    assert [r["variant"] for r in rows] == ["baseline", "k=0.01", "gate8-k0.001"]
    assert len(sims) == 3
    for r in rows:
        assert r["complete"] == "True"
        assert r["job_switches"] == "leaf0 leaf1 spine0 spine1"
        assert int(r["sent"]) == int(r["received"]) == 4 * 6 * 60  # 4 hosts, 6 steps
        assert int(r["lost"]) == 0 and int(r["lost_unattributed"]) == 0
        assert int(r["samples"]) > 0
        for sw in ("leaf0", "leaf1", "spine0", "spine1"):
            assert int(r[f"packets_{sw}"]) > 0
            assert int(r[f"overlap_max_{sw}"]) <= int(r["wire_overlap_max"]) + 1
        # cross-leaf messages: 2 of the ring's 4 hops, every step
        assert int(r["crossing_messages"]) == 2 * 6
    assert int(rows[0]["symphony_marks"]) == 0  # the baseline: Symphony off
    assert (out / "summary.md").is_file()
    assert (out / "overlap_per_switch.png").is_file() and (out / "cct_per_variant.png").is_file()


def test_hpccs_nic_acknowledges_every_frame_through_the_fabric(tmp_path: Path) -> None:
    """HPCC's profile on the real fabric: a RoCEv2 ACK for every data frame crosses bmv2 back to
    its sender, every frame (data and ACK) is accounted for, and no round trip is shorter than
    the latency the hosts emulate (two links each way within a leaf)."""
    out = tmp_path / "hpcc"
    args = ["--profile", "hpcc-config", "--seeds", "1", "--first-seed", "0", "--chunk", "60"]
    args += ["--ks", "", "--gates", "", "--calibrate-s", "0", "--max-reruns", "6"]
    assert fx.main([*args, "--out", str(out)]) == 0
    (r,) = runs.read_rows(out / "runs.csv")
    assert r["complete"] == "True"
    sent = 4 * 6 * 60
    assert int(r["sent"]) == int(r["received"]) == int(r["acks"]) == sent
    assert int(r["frames_sent"]) == int(r["frames_received"]) == 2 * sent  # data and ACKs
    assert int(r["lost"]) == 0 and int(r["lost_unattributed"]) == 0
    setup = fx.FabricSetup(2, 2, 2, 2000.0, 1, 60, 1000, 2.0, 50.0, profile="hpcc-config")
    within_leaf_rtt_ms = 2 * setup.prop_s(0, 1) * 1e3
    assert float(r["rtt_min_ms"]) >= within_leaf_rtt_ms
