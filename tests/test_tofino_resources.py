"""The Tofino2 resource report counts what the compiler's resources.json says."""

import json
from pathlib import Path

from symphony_tools import tofino_resources as resources


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
    context = {
        "tables": [
            {"table_type": "stateful", "name": "SymphonyIngress.job_state.step_min",
             "size": 16384, "alu_width": 16, "dual_width_mode": False},
            {"table_type": "stateful", "name": "SymphonyIngress.job_state.psn_rec",
             "size": 16384, "alu_width": 32, "dual_width_mode": False},
            {"table_type": "stateful", "name": "SymphonyIngress.psn.flow_base",
             "size": 16384, "alu_width": 32, "dual_width_mode": True},
            {"table_type": "statistics", "name": "SymphonyIngress.job_state.packets",
             "size": 16384, "packet_counter_resolution": 32, "byte_counter_resolution": 0},
        ]
    }  # fmt: skip
    (tmp_path / "pipe" / "context.json").write_text(json.dumps(context))
    report = resources.summarize(tmp_path, max_jobs=16384)
    # Stage 3 is the only one used, so the pipeline runs through stages 0..3.
    assert "Pipeline depth: **4 of 20 stages**; stages holding tables: 1 (3)" in report
    assert "| `job_state.step_min` | 3 | 4 | 0 | 0 | 1 | 0 |" in report
    assert "| `throttle.log_p` | 3 | 0 | 1 | 0 | 0 | 0 |" in report
    # Job state: step_min (2 bytes) + psn_rec (4); the hashed flow slots are not per job,
    # even with as many slots as jobs.
    assert "**6 bytes of registers** + 4 bytes of counters" in report
    assert "**16383 jobs fit**" in report
    assert "`SymphonyIngress.psn.flow_base` (register, 16384 x 64 bits, not per job)" in report


def test_missing_logs_are_reported(tmp_path: Path) -> None:
    assert "No resources.json" in resources.summarize(tmp_path)


def test_compiler_warnings_fail_the_build_but_assembler_notes_do_not() -> None:
    from symphony_tools.tofino_build import compiler_warnings

    log = "\n".join(
        [
            "p4src/t2na/include/parser.p4(5): [--Wwarn=uninitialized-out-param] warning: x",
            "warning: No size defined for table 'classify_opcode_class'",
            "/tmp/out/pipe/symphony.bfa:434: warning: Can't match parser state",
            "warning: No known conversion to standard P4Info for 'DynHash' extern type",
            "0 errors, 0 warnings generated.",
        ]
    )
    # The summary line counts warnings; it is not one.
    assert compiler_warnings(log) == log.splitlines()[:2]
