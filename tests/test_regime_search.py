"""The regime search (evaluation/hosts/regime_search.py): it searches only what the bmv2 fabric
can carry here, on seeds the bmv2 runs never use, and ranks by the shipped policy's change."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.hosts import regime_search as rs


def test_candidates_are_fabrics_this_machine_emulates() -> None:
    cands = rs.candidates()
    assert cands
    for c in cands:
        s = c.setup
        hosts = s.leaves * s.hosts_per_leaf
        assert s.leaves == 2 and s.spines <= 2  # at most 4 bmv2 switches
        assert hosts <= 8 and hosts * s.line_pps == rs.FRAMES_PER_S
        assert hosts % s.rings == 0 and hosts // s.rings >= 3
        s.sim_config(rs.VARIANTS[0])  # each is a valid simulator configuration


def test_runs_carry_the_profile_and_the_variants_symphony() -> None:
    c = rs.candidates()[0]
    runs = rs.runs_of([c], ["hpcc-config"], [0, 1])
    assert len(runs) == len(rs.VARIANTS) * 2
    assert {r.cfg.cc.name for r in runs} == {"hpcc-config"}
    by = {r.variant: r.cfg for r in runs}
    assert by["baseline"].mode == "baseline" and by[rs.SHIPPED].mode == "symphony"
    assert by[rs.SHIPPED].symphony.gate_depth == 8


def test_table_ranks_by_the_paired_change() -> None:
    c = rs.candidates()[0]
    runs = rs.runs_of([c], ["dcqcn-paper"], [0, 1, 2])
    cct = {"baseline": [100, 100, 100], rs.SHIPPED: [90, 110, 80], rs.PAPER: [150, 150, 150]}
    rows = [{"cct_us": cct[r.variant][r.seed]} for r in runs]
    (t,) = rs.table(runs, rows)
    assert t["shipped_change_pct"] == pytest.approx(-10.0) and t["shipped_seeds_faster"] == 2
    assert t["paper_change_pct"] == pytest.approx(50.0) and t["paper_seeds_faster"] == 0


def test_choosing_seeds_stay_below_the_held_out_ones() -> None:
    assert rs.main(["--seeds", "100"]) == 2
