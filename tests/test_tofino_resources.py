"""The Tofino2 resource report counts what the compiler's resources.json says."""

import json
from pathlib import Path

from symphony.tofino import resources


def test_report_counts_units_per_table(tmp_path: Path) -> None:
    logs = tmp_path / "pipe" / "logs"
    logs.mkdir(parents=True)
    stage = {
        "stage_number": 3,
        "rams": {
            "srams": [
                {
                    "row": 0,
                    "column": 2,
                    "usages": [{"used_by": "job_state.step_min", "used_for": "register"}],
                }
            ]
            * 4
        },
        "tcams": {
            "tcams": [
                {
                    "row": 1,
                    "column": 0,
                    "usages": [{"used_by": "throttle.log_p", "used_for": "match"}],
                }
            ]
        },
        "meter_alus": {
            "meters": [
                {"row": 1, "usages": [{"used_by": "job_state.step_min", "used_for": "stateful"}]}
            ]
        },
    }
    (logs / "resources.json").write_text(
        json.dumps({"resources": {"mau": {"nStages": 20, "mau_stages": [stage]}}})
    )
    report = resources.summarize(tmp_path, max_jobs=16384)
    assert "Stages used: **1 of 20** (3)" in report
    assert "| `job_state.step_min` | 3 | 4 | 0 | 0 | 1 | 0 |" in report
    assert "| `throttle.log_p` | 3 | 0 | 1 | 0 | 0 | 0 |" in report
    assert "16383 jobs fit" in report


def test_missing_logs_are_reported(tmp_path: Path) -> None:
    assert "No resources.json" in resources.summarize(tmp_path)
