"""The experiments' bookkeeping (evaluation/hosts/runs.py), without a switch: which runs the
harness spoiled, how often one is redone, and how a stopped experiment resumes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evaluation.hosts import runs
from evaluation.hosts.losses import (
    PLACES,
    HostCounts,
    Iface,
    Link,
    Snapshot,
    Switch,
    Topology,
    attribute,
)

LIMIT_MS = 3.6


def clean_row(**over: object) -> dict:
    row = {
        "complete": True,
        "max_lag_ms": 1.0,
        "send_errors": 0,
        "lost_unattributed": 0,
        **{f"lost_{p}": 0 for p in PLACES},
    }
    return row | over


# -- judge ------------------------------------------------------------------------------------
def test_a_clean_run_is_valid() -> None:
    assert runs.judge(clean_row(), LIMIT_MS) is None


def test_queue_drops_are_a_result_even_when_a_flow_could_not_complete() -> None:
    assert runs.judge(clean_row(lost_queue=7, complete=False), LIMIT_MS) is None


@pytest.mark.parametrize("place", [p for p in PLACES if p != "queue"])
def test_a_frame_lost_anywhere_but_a_queue_spoils_the_run(place: str) -> None:
    why = runs.judge(clean_row(**{f"lost_{place}": 2}), LIMIT_MS)
    assert why is not None and f"2 {place}" in why
    assert runs.reason_kinds(why) == ["frames lost by the harness"]


def test_lateness_over_the_limit_spoils_the_run() -> None:
    assert runs.judge(clean_row(max_lag_ms=LIMIT_MS), LIMIT_MS) is None
    why = runs.judge(clean_row(max_lag_ms=LIMIT_MS + 0.1), LIMIT_MS)
    assert why is not None and runs.reason_kinds(why) == ["host lateness"]


def test_a_lone_flow_slower_than_its_line_time_spoils_the_run() -> None:
    assert runs.judge(clean_row(link_stretch=1.02), LIMIT_MS) is None
    why = runs.judge(clean_row(link_stretch=1.15), LIMIT_MS)
    assert why is not None and runs.reason_kinds(why) == ["switch behind its queue rate"]
    assert "1.15 x" in why


def test_counters_that_do_not_add_up_spoil_the_run() -> None:
    why = runs.judge(clean_row(lost_unattributed=-1), LIMIT_MS)
    assert why is not None and runs.reason_kinds(why) == ["unattributed"]


def test_incomplete_without_a_queue_drop_spoils_the_run() -> None:
    why = runs.judge(clean_row(complete=False), LIMIT_MS)
    assert why is not None and runs.reason_kinds(why) == ["incomplete"]


def test_every_reason_is_named() -> None:
    why = runs.judge(
        clean_row(complete="False", lost_socket=1, max_lag_ms=99.0, send_errors=2), LIMIT_MS
    )
    assert why is not None
    assert set(runs.reason_kinds(why)) == {
        "frames lost by the harness",
        "host lateness",
        "sends refused",
        "incomplete",
    }


# -- run_cell ---------------------------------------------------------------------------------
def test_a_spoiled_run_is_redone_until_valid_and_counts_its_reruns() -> None:
    rows = [clean_row(lost_capture=3), clean_row(max_lag_ms=50.0), clean_row()]
    seen: list[int] = []
    logged: list[tuple[str, int]] = []

    def attempt(n: int) -> dict:
        seen.append(n)
        return dict(rows[n])

    res = runs.run_cell(
        attempt,
        lambda r: runs.judge(r, LIMIT_MS),
        max_reruns=3,
        on_spoiled=lambda _r, why, n: logged.append((why, n)),
    )
    assert seen == [0, 1, 2]
    assert res.row is not None and res.row["reruns"] == 2 == res.reruns
    assert [n for _w, n in logged] == [0, 1]
    assert "3 capture" in logged[0][0] and "lateness" in logged[1][0]


def test_a_valid_first_run_is_not_redone() -> None:
    calls = []
    res = runs.run_cell(
        lambda n: calls.append(n) or clean_row(lost_queue=5),
        lambda r: runs.judge(r, LIMIT_MS),
        max_reruns=3,
    )
    assert calls == [0] and res.row is not None and res.row["reruns"] == 0


def test_reruns_are_bounded_and_the_cell_reports_why() -> None:
    calls = []
    res = runs.run_cell(
        lambda n: calls.append(n) or clean_row(lost_socket=1),
        lambda r: runs.judge(r, LIMIT_MS),
        max_reruns=2,
    )
    assert calls == [0, 1, 2]
    assert res.row is None and len(res.attempts) == 3 and res.reruns == 2
    assert "1 socket" in res.attempts[-1][1]


# -- RunLog: appended as runs end, resumed ----------------------------------------------------
def test_runs_are_appended_one_by_one_and_a_new_log_skips_them(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    log = runs.RunLog(path, ("variant", "offset_frac", "seed"))
    log.append({"variant": "baseline", "offset_frac": 0.5, "seed": 0, "A_fct_s": 1.0, "_t": [1]})
    # On disk at once, without the private "_" columns.
    with path.open() as f:
        assert list(csv.DictReader(f)) == [
            {"variant": "baseline", "offset_frac": "0.5", "seed": "0", "A_fct_s": "1.0"}
        ]
    log.append({"variant": "k=0.01", "offset_frac": 0.5, "seed": 0, "A_fct_s": 2.0})
    again = runs.RunLog(path, ("variant", "offset_frac", "seed"))
    assert again.done(variant="baseline", offset_frac=0.5, seed=0)
    assert again.done(variant="k=0.01", offset_frac="0.5", seed="0.0")
    assert not again.done(variant="baseline", offset_frac=0.25, seed=0)
    assert not again.done(variant="baseline", offset_frac=0.5, seed=1)
    assert len(again.rows) == 2


def test_a_row_with_a_new_column_rewrites_the_header(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    log = runs.RunLog(path, ("seed",))
    log.append({"seed": 0, "complete": False})
    log.append({"seed": 1, "complete": True, "overlap_s": 2.5})
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert rows == [
        {"seed": "0", "complete": "False", "overlap_s": ""},
        {"seed": "1", "complete": "True", "overlap_s": "2.5"},
    ]
    assert runs.RunLog(path, ("seed",)).done(seed=1)


# -- open_results: same settings resume, others refuse or start fresh -------------------------
SETTINGS = {"queue_depth": 1000, "pair": {"line_pps": 4000.0, "flow_packets": 10000}}
FILES = ("fig9_runs.csv", "traces", "meta.json")


def test_an_empty_folder_starts_fresh_and_records_the_settings(tmp_path: Path) -> None:
    note = runs.open_results(tmp_path, SETTINGS, fresh=False, files=FILES)
    assert note.startswith("starting fresh")
    assert json.loads((tmp_path / runs.SETTINGS_FILE).read_text()) == SETTINGS


def test_the_same_settings_resume(tmp_path: Path) -> None:
    runs.open_results(tmp_path, SETTINGS, fresh=False, files=FILES)
    (tmp_path / "fig9_runs.csv").write_text("seed\n0\n")
    note = runs.open_results(tmp_path, json.loads(json.dumps(SETTINGS)), fresh=False, files=FILES)
    assert note.startswith("resuming")
    assert (tmp_path / "fig9_runs.csv").read_text() == "seed\n0\n"


def test_other_settings_are_refused_naming_what_changed(tmp_path: Path) -> None:
    runs.open_results(tmp_path, SETTINGS, fresh=False, files=FILES)
    (tmp_path / "fig9_runs.csv").write_text("seed\n0\n")
    other = {**SETTINGS, "pair": {"line_pps": 3000.0, "flow_packets": 10000}}
    with pytest.raises(runs.SettingsChanged, match=r"pair\.line_pps: 4000\.0 -> 3000\.0"):
        runs.open_results(tmp_path, other, fresh=False, files=FILES)
    assert (tmp_path / "fig9_runs.csv").exists()  # nothing was thrown away


def test_results_without_recorded_settings_are_refused(tmp_path: Path) -> None:
    (tmp_path / "fig9_runs.csv").write_text("seed\n0\n")
    with pytest.raises(runs.SettingsChanged, match="did not record"):
        runs.open_results(tmp_path, SETTINGS, fresh=False, files=FILES)


def test_fresh_discards_the_old_runs(tmp_path: Path) -> None:
    runs.open_results(tmp_path, SETTINGS, fresh=False, files=FILES)
    (tmp_path / "fig9_runs.csv").write_text("seed\n0\n")
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "pair-x.json").write_text("{}")
    other = {**SETTINGS, "queue_depth": 500}
    note = runs.open_results(tmp_path, other, fresh=True, files=FILES)
    assert "removed 2" in note
    assert not (tmp_path / "fig9_runs.csv").exists() and not (tmp_path / "traces").exists()
    assert json.loads((tmp_path / runs.SETTINGS_FILE).read_text()) == other


# -- attribute: the arithmetic of the places, on made-up counters ----------------------------
def test_attribution_counts_each_place_once() -> None:
    h0, s0, h2, s2 = Iface("h0"), Iface("s0"), Iface("h2"), Iface("s2")
    topo = Topology(
        switches=(Switch("s1", 9090, ((0, s0), (2, s2))),),
        links=(Link(h0, s0), Link(h2, s2)),
    )
    zero = dict.fromkeys(("rx_packets", "tx_packets", "rx_dropped", "tx_dropped"), 0)
    # Host 0 sent 100: 1 dropped by its veth (counted on both ends, as a backlog drop is),
    # 99 reached the switch's interface, bmv2 captured 97, its program dropped 1, queue 2
    # dropped 5, 91 left, 1 failed to reach the kernel, 90 crossed to host 2, whose socket
    # dropped 3: 87 received.
    diff = Snapshot(
        ifaces={
            h0: zero | {"tx_packets": 99, "tx_dropped": 1},
            s0: zero | {"rx_packets": 99, "rx_dropped": 1},
            s2: zero | {"tx_packets": 90},
            h2: zero | {"rx_packets": 90},
        },
        switches={"s1": {0: (97, 0, 0), 2: (0, 96, 91)}},
    )
    losses = attribute(diff, topo, HostCounts(sent=100, received=87, socket_drops=3))
    assert losses.places == {
        "veth": 1,
        "capture": 2,
        "pipeline": 1,
        "queue": 5,
        "output": 1,
        "socket": 3,
    }
    assert losses.unattributed == 0
    assert losses.harness == 8
    assert losses.detail["s1 port 2 queue"] == 5 and losses.detail["h0->s0 veth"] == 1
    row = losses.row()
    assert row["lost_queue"] == 5 and row["lost_unattributed"] == 0
    assert runs.judge(clean_row(**{k: v for k, v in row.items() if k.startswith("lost_")}), 9)


def test_a_frame_nobody_counted_is_unattributed() -> None:
    s0 = Iface("s0")
    topo = Topology(switches=(Switch("s1", 9090, ((0, s0),)),), links=())
    zero = dict.fromkeys(("rx_packets", "tx_packets", "rx_dropped", "tx_dropped"), 0)
    diff = Snapshot(ifaces={s0: zero}, switches={"s1": {0: (0, 0, 0)}})
    losses = attribute(diff, topo, HostCounts(sent=3, received=1, socket_drops=0))
    assert losses.unattributed == 2
    assert "unattributed 2" in losses.describe()
