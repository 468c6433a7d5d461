"""The regime map (evaluation/fabric/regime_map.py): its 32-node cells are the cross-validation's
configurations (so ns-3's verdicts apply to them), the advice follows its stated rule, cells
carry the cross-validation's status, and a small map runs end to end from the command line."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import regime_map as rm
from evaluation.fabric.scenarios import Run
from evaluation.fabric.sweep import RunStore, config_hash

MiB = 1 << 20


@pytest.mark.parametrize(
    ("layout", "chunk", "scenario"),
    [
        ("2d", 8 * MiB, "table1"),
        ("2d", MiB, "table1-1MiB"),
        ("rings", 8 * MiB, "ecmp-8MiB"),
        ("rings", MiB, "ecmp-1MiB"),
    ],
)
@pytest.mark.parametrize("nic", rm.NICS)
@pytest.mark.parametrize("option", ["dcqcn", "ack", "paper", "ack+paper"])
def test_the_checked_cells_run_the_cross_validations_configs(
    layout: str, chunk: int, scenario: str, nic: str, option: str
) -> None:
    o = rm.BY_NAME[option]
    regime = xr_regime = rm.XVAL_REGIME[(nic, o.ack)]
    variant = "symphony" if o.mode == "symphony" else "baseline"
    mine = rm.config(rm.Regime(layout, nic, 32, chunk), o)
    theirs = xr.scenario_config(scenario, regime, variant)
    assert config_hash(Run("", "", "", mine, 0)) == config_hash(Run("", "", "", theirs, 0)), (
        xr_regime
    )


def test_the_options_switch_what_they_say() -> None:
    reg = rm.Regime("2d", "rate-only", 128, MiB)
    cfgs = {o.name: rm.config(reg, o) for o in rm.OPTIONS}
    assert cfgs["dcqcn"].mode == "baseline" and cfgs["dcqcn"].cc.ack_queue == "data"
    assert cfgs["ack"].mode == "baseline" and cfgs["ack"].cc.ack_queue == "control"
    assert cfgs["pq"].mode == "pq"
    assert cfgs["shipped"].symphony.gate_depth == 8 and cfgs["shipped"].symphony.k == 0.001
    assert cfgs["paper"].symphony.gate_depth == 0
    assert cfgs["ack+shipped"].cc.ack_queue == "control" and cfgs["ack+shipped"].mode == "symphony"
    assert all(not c.cc.has_win and c.hosts == 128 and c.chunk_bytes == MiB for c in cfgs.values())
    assert rm.config(rm.Regime("2d", "windowed", 32, MiB), rm.BY_NAME["dcqcn"]).cc.has_win


def test_the_grid_runs_512_nodes_as_table_1_does_and_refuses_other_layouts() -> None:
    g = rm.Grid(hosts=(32, 512))
    big = [r for r in g.regimes() if r.hosts == 512]
    assert {(r.layout, r.chunk_bytes) for r in big} == {("2d", 8 * MiB)}
    assert len(big) == len(rm.NICS)
    cfg = rm.base(big[0])
    assert cfg.fabric == "multipod" and cfg.n_pods == 4 and cfg.oversub == 8.0
    with pytest.raises(ValueError, match="rings layout"):
        rm.base(rm.Regime("rings", "windowed", 512, 8 * MiB))
    with pytest.raises(ValueError, match="unknown layout"):
        rm.base(rm.Regime("torus", "windowed", 32, MiB))


def _cell(name: str, ccts: list[float], ref: list[float], status: str = "validated") -> rm.Cell:
    rng = np.random.default_rng(0)
    boot = (xr.bootstrap_medians(rng, ccts) / xr.bootstrap_medians(rng, ref) - 1) * 100
    lo, hi = np.percentile(boot, [5, 95])
    change = (float(np.median(ccts)) / float(np.median(ref)) - 1) * 100
    reg = rm.Regime("2d", "windowed", 32, 8 * MiB)
    seeds = list(range(100, 100 + len(ccts)))
    return rm.Cell(reg, rm.BY_NAME[name], seeds, ccts, 1.0, change, (lo, hi), status)


REF = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]


def _shift(x: float, jitter: float = 0.3, phase: int = 0) -> list[float]:
    """x per seed, with a seed-to-seed spread (the phase decides which seeds are high)."""
    return [x + jitter * (((i + phase) % 3) - 1) for i in range(len(REF))]


def test_nothing_is_advised_where_no_shipped_option_is_resolved_faster() -> None:
    cells = [
        _cell("dcqcn", REF, REF),
        _cell("ack", _shift(100.0, 2.0), REF),
        _cell("pq", _shift(60.0), REF),  # PQ is a comparison, not a deployment
        _cell("shipped", _shift(103.0), REF),
    ]
    a = rm.advise(cells)
    assert a.deploy == "dcqcn" and not a.symphony_helps and a.validated


def test_the_simpler_option_wins_a_tie_the_seeds_cannot_break() -> None:
    cells = [
        _cell("dcqcn", REF, REF),
        _cell("ack", _shift(80.2, 1.0), REF),
        _cell("shipped", _shift(80.0, 1.0, phase=1), REF),
        _cell("ack+shipped", _shift(79.9, 1.0, phase=2), REF),
    ]
    a = rm.advise(cells)
    assert a.deploy == "ack" and a.symphony_helps and a.ack_as_good


def test_a_resolved_faster_option_wins_over_a_simpler_one() -> None:
    cells = [
        _cell("dcqcn", REF, REF),
        _cell("ack", _shift(90.0), REF),
        _cell("shipped", _shift(70.0), REF, status="unchecked"),
    ]
    a = rm.advise(cells)
    assert a.deploy == "shipped" and not a.ack_as_good and not a.validated


def test_cells_take_the_cross_validations_status() -> None:
    """Kernel runs equal to ns-3's medians make the checked cells validated; where ns-3's runs
    lie far away the cell differs; a regime ns-3 never ran is unchecked."""
    kernel = {k: list(n.cct_ms.values()) for k, n in xr.NS3.items()}
    reg = rm.Regime("rings", "windowed", 32, 8 * MiB)
    assert rm.cell_status(reg, rm.BY_NAME["paper"], kernel) == "validated"
    far = dict(kernel)
    far[("ecmp-8MiB", "ack-priority", "baseline")] = [
        2 * x for x in kernel[("ecmp-8MiB", "ack-priority", "baseline")]
    ]
    assert rm.cell_status(reg, rm.BY_NAME["ack"], far) == "differs"
    assert rm.cell_status(reg, rm.BY_NAME["paper"], far) == "validated"  # another regime
    for other in (
        rm.Regime("rings", "windowed", 128, 8 * MiB),
        rm.Regime("2d", "windowed", 32, 128 * rm.KB),
    ):
        assert rm.cell_status(other, rm.BY_NAME["dcqcn"], kernel) == "unchecked"
    # the 2D ring at 1 MiB is checked since issue 45 ran it in ns-3 (`table1-1MiB`)
    assert rm.cell_status(rm.Regime("2d", "windowed", 32, MiB), rm.BY_NAME["dcqcn"], kernel) == (
        "validated"
    )


def test_a_small_map_runs_from_the_command_line_and_resumes(tmp_path: Path) -> None:
    args = ["--hosts", "32", "--layout", "rings", "--nic", "windowed", "--chunk-kb", "128"]
    args += ["--seeds-32", "3", "--option", "dcqcn", "--option", "ack", "--option", "shipped"]
    args += ["--jobs", "2", "--out", str(tmp_path)]
    rm.main(args)
    with open(tmp_path / "regime-map.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["option"] for r in rows] == ["dcqcn", "ack", "shipped"]
    assert all(r["seeds"] == "100 101 102" and r["validation"] == "unchecked" for r in rows)
    assert sum(int(r["deploy"]) for r in rows) == 1
    assert rows[0]["change_pct"] == "0.0" and float(rows[0]["bound_ms"]) > 0
    assert (tmp_path / "regime-map-rings.png").stat().st_size > 0
    with open(tmp_path / "runs.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 9  # 3 options x 3 seeds
    text = (tmp_path / "table.md").read_text()
    assert "| rings | windowed | 32 | 128 KB | 100-102 |" in text
    deploy = next(r["option"] for r in rows if r["deploy"] == "1")
    glance = next(
        line for line in text.splitlines() if line.startswith("| 4 rings (ECMP), windowed")
    )
    assert f"**{rm.SHORT[deploy]}" in glance and "(unvalidated)" in glance
    stored = (tmp_path / "runs.jsonl").read_text()
    rm.main(args)  # resumed: every run read back from the store, none run again
    assert (tmp_path / "runs.jsonl").read_text() == stored
    # the report alone, of a wider grid: the cells never run are left out, nothing runs
    (tmp_path / "table.md").unlink()
    rm.main([*args, "--option", "paper", "--report-only"])
    assert (tmp_path / "runs.jsonl").read_text() == stored
    row = next(r for r in (tmp_path / "table.md").read_text().splitlines() if "| 128 KB |" in r)
    assert row.count(" - |") == len(rm.OPTIONS) - 3


def test_the_map_refuses_to_run_without_its_reference(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        rm.main(["--option", "ack", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="no complete cell"):
        rm.main(["--hosts", "32", "--report-only", "--out", str(tmp_path)])


def test_a_run_that_hits_its_cap_is_run_again_under_a_larger_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every run of this grid capped at 0.5 ms of simulated time (a 4-ring 128 KB collective
    # takes ~4 ms): each stops there, flagged, and is run again under LONG_RUN_MAX_MS
    grid_runs = rm.runs
    monkeypatch.setattr(
        rm,
        "runs",
        lambda grid: [replace(r, cfg=replace(r.cfg, max_ms=0.5)) for r in grid_runs(grid)],
    )
    args = ["--hosts", "32", "--layout", "rings", "--nic", "windowed", "--chunk-kb", "128"]
    args += ["--seeds-32", "2", "--option", "dcqcn", "--option", "ack", "--jobs", "2"]
    args += ["--no-plots", "--out", str(tmp_path)]
    rm.main(args)
    stored = RunStore.read(tmp_path / "runs.jsonl")
    assert len(stored) == 8  # 2 options x 2 seeds, each capped and again
    assert sum(rm.capped(r.row) for r in stored.values()) == 4
    with open(tmp_path / "regime-map.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert all(float(r["min_ms"]) > 0.5 for r in rows)  # the reruns' CCTs, not the cap
    text = (tmp_path / "runs.jsonl").read_text()
    rm.main([*args, "--report-only"])  # read back: the reruns stand in for the capped runs
    assert (tmp_path / "runs.jsonl").read_text() == text
    with open(tmp_path / "regime-map.csv") as fh:
        assert list(csv.DictReader(fh)) == rows
