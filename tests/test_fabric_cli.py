"""`python -m evaluation.fabric`'s flags that change the model: each reaches the runs it names
and shows in runs.csv."""

from __future__ import annotations

import csv
from pathlib import Path

from evaluation.fabric.__main__ import main

QUICK = ["--quick", "--scenario", "2d", "--seeds", "1", "--variant", "baseline", "--no-plots"]


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "runs.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_ack_queue_control_is_run_and_named(tmp_path: Path) -> None:
    main([*QUICK, "--jobs", "1", "--out", str(tmp_path / "data"), "--ack-queue", "data"])
    main([*QUICK, "--jobs", "1", "--out", str(tmp_path / "control"), "--ack-queue", "control"])
    (data,), (control,) = _rows(tmp_path / "data"), _rows(tmp_path / "control")
    # data is the profile's own queue: the profile keeps its name; control renames it
    assert data["profile"] == "hpcc-config"
    assert control["profile"] == "hpcc-config+ack-control"
    # ACKs that no longer wait behind data change the run (its events at least)
    assert (data["events"], data["cct_us"]) != (control["events"], control["cct_us"])
