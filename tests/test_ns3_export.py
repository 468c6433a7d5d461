"""The files our ns-3 driver reads say exactly what the kernel runs (fabric/ns3_export.py),
and the regime table judges cells by the stated tolerance (crossval_regimes.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import ns3_export, ns3_run
from evaluation.fabric import symphony_kernel as sk
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.sim import TICK_NS

SMALL = replace(xr.SCENARIOS["ecmp-1MiB"], hosts=16, tors=2, spines=2, chunk_bytes=64 * 1024)


def _records(text: str, kind: str) -> list[list[int]]:
    return [
        [int(x) for x in line.split()[1:]] for line in text.splitlines() if line.startswith(kind)
    ]


def test_the_workload_file_is_the_kernels_workload(tmp_path: Path) -> None:
    wl = ns3_export.write(SMALL, 7, tmp_path)
    text = (tmp_path / "workload.txt").read_text()
    flows = np.array(_records(text, "flow "))
    assert (flows[:, 0] == np.arange(wl.f_src.shape[0])).all()
    np.testing.assert_array_equal(flows[:, 1], wl.f_src)
    np.testing.assert_array_equal(flows[:, 2], wl.f_dst)
    np.testing.assert_array_equal(flows[:, 3], wl.f_npk * SMALL.payload_bytes)
    np.testing.assert_array_equal(flows[:, 4], wl.f_sport)
    np.testing.assert_array_equal(
        flows[:, 5:11].T, [wl.f_job, wl.f_step, wl.f_psn0, wl.f_slot, wl.f_sig, wl.f_start_ps]
    )
    edges = _records(text, "edge ")
    assert len(edges) == wl.dag.succ_idx.shape[0] > 0
    npred = np.bincount([b for _, b in edges], minlength=flows.shape[0])
    np.testing.assert_array_equal(npred, wl.dag.npred)
    # roots start at a time, the others when their predecessors are delivered
    assert ((flows[:, 10] >= 0) == (npred == 0)).all()
    # the same seed gives the same file (the kernel's draws in the kernel's order)
    assert ns3_export.workload_text(SMALL, ns3_export.workload(SMALL, 7)) == text
    assert ns3_export.workload_text(SMALL, ns3_export.workload(SMALL, 8)) != text


def test_the_topology_numbers_nodes_as_the_kernels_ecmp_hash() -> None:
    lines = ns3_export.topology_text(xr.SCENARIOS["table1"]).splitlines()
    assert lines[0] == "40 8 48"  # 32 hosts, 4 ToRs, 4 spines; 32 host links + 16 uplinks
    assert lines[1].split() == [str(n) for n in range(32, 40)]
    links = [line.split() for line in lines[2:]]
    assert links[0] == ["0", "32", "10Gbps", "1us", "0"] and links[31][:2] == ["31", "35"]
    assert {(a, b) for a, b, *_ in links[32:]} == {
        (str(t), str(s)) for t in range(32, 36) for s in range(36, 40)
    }


@pytest.mark.parametrize("regime", sorted(xr.REGIMES))
def test_the_config_carries_the_regime(regime: str) -> None:
    cfg = xr.scenario_config("table1", regime)
    conf = dict(line.split(" ", 1) for line in ns3_export.config_text(cfg).splitlines())
    window = regime in ("default", "ack-priority")
    assert conf["HAS_WIN"] == conf["VAR_WIN"] == str(int(window))
    assert conf["SWITCH_ACK_HIGH_PRIO"] == str(int(regime in ("ack-priority", "both")))
    assert conf["CC_MODE"] == "1" and conf["PACKET_PAYLOAD_SIZE"] == "1000"
    # HPCC's 50 / 100 KB, which the kernel's 48 / 96 frames of 1036 B stand for
    assert conf["KMIN_MAP"] == "1 10000000000 50" and conf["KMAX_MAP"] == "1 10000000000 100"
    assert conf["RP_TIMER"] == "900" and conf["MIN_RATE"] == "100Mb/s"
    assert conf["BUFFER_SIZE"] == "32"


def test_the_paper_nics_rules_are_not_exported() -> None:
    with pytest.raises(ValueError, match="Mellanox"):
        ns3_export.config_text(FabricConfig(dcqcn="dcqcn-paper"))
    # bmv2's per-queue rates (the fabric experiment's model of its ACK class): no ns-3 switch
    bmv2_class = replace(FabricConfig().cc, ack_queue="control-bmv2")
    with pytest.raises(ValueError, match="bmv2"):
        ns3_export.config_text(FabricConfig(dcqcn=bmv2_class))


def test_symphony_file_has_the_kernels_tables_and_rows() -> None:
    cfg = xr.scenario_config("ecmp-8MiB", "default", "symphony")
    lines = ns3_export.symphony_text(cfg, 2).splitlines()
    log_tab, alpha_tab, thr_tab = sk.golden_tables()
    tabs = {line.split()[0]: [int(x) for x in line.split()[2:]] for line in lines[1:4]}
    assert tabs["logtab"] == log_tab.tolist() and tabs["alphatab"] == alpha_tab.tolist()
    assert tabs["thrtab"] == thr_tab.tolist()
    row = sk.action_row(cfg.symphony.to_action_params(TICK_NS)).tolist()
    assert lines[4] == "job 1 " + " ".join(map(str, row)) and lines[5].startswith("job 2 ")
    base = ns3_export.symphony_text(replace(cfg, mode="baseline"), 1).splitlines()[4].split()
    assert int(base[2 + sk.P_MARK_ENABLE]) == 0  # k = 0: DCQCN alone marks nothing


@contextmanager
def ns3_cells(cells: dict[tuple[str, str, str], xr.Ns3Runs]) -> Iterator[None]:
    """crossval_regimes.NS3 holding only `cells` for the block, restored after it."""
    saved = dict(xr.NS3)
    xr.NS3.clear()
    xr.NS3.update(cells)
    try:
        yield
    finally:
        xr.NS3.clear()
        xr.NS3.update(saved)


def test_the_regime_table_judges_by_the_tolerance() -> None:
    key = ("ecmp-1MiB", "default")
    kernel = {(*key, "baseline"): [100.0, 101.0, 99.0], (*key, "symphony"): [96.0, 97.0, 95.0]}

    def rows(ns3_symphony: float, kernel: dict = kernel) -> dict[str, str]:
        cells = {
            (*key, "baseline"): xr.Ns3Runs({100: 104.0, 101: 104.5}),
            (*key, "symphony"): xr.Ns3Runs({100: ns3_symphony, 101: ns3_symphony}),
        }
        with ns3_cells(cells):
            return {line.split(" | ")[2]: line for line in xr.table(kernel).splitlines()[2:]}

    inside = rows(99.0)  # CCT -3.0 %; change -4.0 % against -5.0 %: 1.0 pts
    assert "| -4.1 % [" in inside["baseline"] and inside["baseline"].endswith("| yes |")
    assert "| +1.0 [" in inside["symphony"] and inside["symphony"].endswith("| yes |")
    outside = rows(90.0)  # change -4.0 % against -13.7 %: 9.7 pts, every resample over 3
    assert "| +9.7 [" in outside["symphony"] and outside["symphony"].endswith("| **no** |")
    # 4.9 pts again, but with the kernel's seeds this far apart resampling reaches inside 3 pts
    unresolved = rows(95.0, {**kernel, (*key, "symphony"): [90.0, 96.0, 102.0]})
    assert "| +4.9 [" in unresolved["symphony"] and unresolved["symphony"].endswith("| sampling |")
    with ns3_cells({}):
        unrun = xr.table({("table1", "both", "baseline"): [1.0]}).splitlines()[2]
    assert "| not run |" in unrun


def test_the_driver_output_gives_the_cct() -> None:
    assert xr.parse_driver_output("fct 0 0 1 5 0 9\nstat cct_ns 1234567.5\n") == 1.2345675
    with pytest.raises(ValueError, match="cct_ns"):
        xr.parse_driver_output("fct 0 0 1 5 0 9\n")


def test_every_regime_cell_has_its_ns3_runs() -> None:
    cells = {(s, r, v) for s in xr.SCENARIOS for r in xr.REGIMES for v in xr.VARIANTS}
    assert set(xr.NS3) == cells
    for cell, n in xr.NS3.items():
        # RngRuns 100, 101, ... with none left out (a cell with more ran more because the
        # first five did not resolve it)
        assert len(n.cct_ms) >= 5 and sorted(n.cct_ms) == list(range(100, 100 + len(n.cct_ms))), (
            cell
        )


def _driver(tmp_path: Path, body: str) -> str:
    """A stand-in for our ns-3 driver at its command-line boundary: what it is given is logged."""
    exe = tmp_path / "driver"
    exe.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "argv"}\n{body}\n')
    exe.chmod(0o755)
    return str(exe)


def test_the_driver_runs_any_config_with_its_files_and_rngrun(tmp_path: Path) -> None:
    ns3 = _driver(tmp_path, 'echo "stat cct_ns 2500000"; echo "stat cnps 17"')
    d = tmp_path / "cell"
    r = ns3_run.run_driver(ns3, SMALL, 7, d, post="direct")
    assert (r.cct_ms, r.stats) == (2.5, {"cct_ns": 2500000.0, "cnps": 17.0})
    argv = (tmp_path / "argv").read_text().split()
    assert argv == [
        f"--config={d / 'config.txt'}",
        f"--topo={d / 'topology.txt'}",
        f"--workload={d / 'workload.txt'}",
        f"--symphony={d / 'symphony.txt'}",
        "--RngRun=7",
        "--post=direct",
    ]
    assert all((d / f).is_file() for f in ("config.txt", "topology.txt", "workload.txt"))
    assert (d / "ns3.out").read_text().startswith("stat cct_ns")


def test_a_failing_driver_is_reported_with_its_directory(tmp_path: Path) -> None:
    ns3 = _driver(tmp_path, 'echo "no such topology" >&2; exit 3')
    with pytest.raises(RuntimeError, match=r"cell.*exit 3.*no such topology"):
        ns3_run.run_driver(ns3, SMALL, 7, tmp_path / "cell")
