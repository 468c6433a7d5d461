"""The fabric table (evaluation/hosts/fabric_table.py): medians per (setup, profile, variant),
both instruments' changes against their own baseline, and issue 44's tolerance applied as
written (10 % on the CCT, 5 points and the same sign on a policy's change)."""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.hosts import fabric_table as ft
from evaluation.hosts.fabric_experiment import FabricSetup


def write_run(
    d: Path, bmv2: dict[str, list[float]], sim: dict[str, list[float]], ack_class: str = "data"
) -> Path:
    d.mkdir()
    s = FabricSetup(
        2, 2, 2, 2000.0, 1, 500, 1000, 2.0, 50.0, profile="hpcc-config", ack_class=ack_class
    )
    (d / "settings.json").write_text(json.dumps(asdict(s)))
    for name, rows, key in (("runs.csv", bmv2, "cct_s"), ("sim.csv", sim, "sim_cct_s")):
        with (d / name).open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["variant", "seed", key])
            for v, xs in rows.items():
                for i, x in enumerate(xs):
                    w.writerow([v, 100 + i, x])
    return d


def test_cells_compare_medians_and_changes(tmp_path: Path) -> None:
    d = write_run(
        tmp_path / "a",
        {"baseline": [10, 11, 12], "k=0.01": [15, 16, 17], "gate8-k0.001": [9, 9.5, 10]},
        {"baseline": [10.5, 11.5, 12.5], "k=0.01": [12, 12.5, 13], "gate8-k0.001": [11, 11, 11]},
    )
    by = {c.variant: c for c in ft.cells(d)}
    base, paper, shipped = by["baseline"], by["k=0.01"], by["gate8-k0.001"]
    assert base.bmv2_s == 11 and base.sim_s == 11.5 and base.within
    assert paper.bmv2_change == pytest.approx(100 * 16 / 11 - 100)
    assert paper.sim_change == pytest.approx(100 * 12.5 / 11.5 - 100)
    assert not paper.within  # +45.5 % against +8.7 %: 36.8 points apart
    # -13.6 % on bmv2, -4.3 % in the simulator: 9.3 points apart, same sign, still outside
    assert shipped.change_off == pytest.approx(shipped.sim_change - shipped.bmv2_change)
    assert not shipped.within
    assert "**no**" in ft.markdown(ft.cells(d))


def test_a_change_of_the_other_sign_is_outside_however_small(tmp_path: Path) -> None:
    d = write_run(
        tmp_path / "b",
        {"baseline": [10.0], "gate8-k0.001": [9.9]},
        {"baseline": [10.0], "gate8-k0.001": [10.1]},
    )
    c = {c.variant: c for c in ft.cells(d)}["gate8-k0.001"]
    assert abs(c.change_off) < 5 and abs(c.cct_off) < 0.1 and not c.within


def test_a_directory_without_runs_is_refused(tmp_path: Path) -> None:
    assert ft.main([str(tmp_path / "missing")]) == 2


def test_the_ack_class_is_measured_against_dcqcn_alone(tmp_path: Path) -> None:
    """With the class on, every cell's change is against the data queue's baseline of the same
    setup and profile: the class alone is a row of its own, not the zero of its directory."""
    data = write_run(tmp_path / "data", {"baseline": [10.0]}, {"baseline": [10.5]})
    prio = write_run(
        tmp_path / "prio",
        {"baseline": [8.0], "gate8-k0.001": [7.0]},
        {"baseline": [8.4], "gate8-k0.001": [8.4]},
        ack_class="priority",
    )
    cells = ft.against_dcqcn_alone(ft.cells(data) + ft.cells(prio))
    by = {c.name: c for c in cells}
    assert set(by) == {"baseline", "ACK priority", "ACK priority + gate8-k0.001"}
    alone, both = by["ACK priority"], by["ACK priority + gate8-k0.001"]
    assert alone.bmv2_change == pytest.approx(-20.0) and alone.sim_change == pytest.approx(-20.0)
    assert both.bmv2_change == pytest.approx(-30.0) and both.sim_change == pytest.approx(-20.0)
    assert alone.within and not both.within  # the same change; 10 points apart
    assert by["baseline"].is_reference and not alone.is_reference
    # without the data queue's run the class's cells keep their own baseline
    own = {c.name: c for c in ft.against_dcqcn_alone(ft.cells(prio))}
    assert own["ACK priority"].bmv2_change == 0.0


def test_the_shared_port_column_is_the_class_on_a_real_switch(tmp_path: Path) -> None:
    """The simulator's run with ACKs taking their port's time (sim.csv's sim_shared_port_cct_s,
    written for the class's runs only) is shown beside, against DCQCN alone as well."""
    data = write_run(tmp_path / "data", {"baseline": [10.0]}, {"baseline": [10.0]})
    prio = write_run(
        tmp_path / "prio", {"baseline": [8.0]}, {"baseline": [8.0]}, ack_class="priority"
    )
    with (prio / "sim.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "seed", "sim_cct_s", "sim_shared_port_cct_s"])
        w.writerow(["baseline", 100, 8.0, 9.5])
    by = {c.name: c for c in ft.against_dcqcn_alone(ft.cells(data) + ft.cells(prio))}
    assert by["baseline"].sim_shared_s is None
    assert by["ACK priority"].sim_shared_s == 9.5
    assert by["ACK priority"].sim_shared_change == pytest.approx(-5.0)
    table = ft.markdown(list(by.values()))
    assert "9.500 s (-5.0 %)" in table
