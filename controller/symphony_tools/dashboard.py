"""The Grafana dashboard of a Symphony fabric, generated with grafana-foundation-sdk (Grafana's own
typed builders): ``python -m symphony_tools.dashboard [--check]`` writes (or checks)
deploy/grafana/symphony.json.

Every panel queries the controller's metrics (symphony/telemetry.py) through a Prometheus data
source chosen on import (the ``datasource`` variable). The test suite runs each query of the
committed JSON against a real Prometheus scraping a real controller
(tests/integration/test_controller_bmv2.py), and checks the JSON is what this module generates.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import dashboard as d
from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "symphony.json"
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
# The step overlap above which the alert rule fires (deploy/prometheus/symphony-rules.yml).
OVERLAP_ALERT = 4

BY_JOB = "{{job_name}} ({{job_id}})"
PER_JOB = "sum by (job_id, job_name)"
AT_SWITCH = "{{job_name}} @ {{switch}}"


@dataclass(frozen=True)
class PanelSpec:
    title: str
    unit: str
    about: str
    queries: tuple[tuple[str, str], ...]  # (PromQL, legend)
    kind: Any = timeseries


ROWS: list[tuple[str, list[PanelSpec]]] = [
    (
        "Jobs and switches",
        [
            PanelSpec(
                "Live jobs",
                "none",
                "Jobs with a Job_ID, and released jobs not yet cleared on every switch.",
                (
                    ('sum(symphony_jobs{state="active"})', "active"),
                    ('sum(symphony_jobs{state="releasing"})', "releasing"),
                ),
                stat,
            ),
            PanelSpec(
                "Switch connection",
                "none",
                "1 when the controller is connected to the switch and has reconciled it.",
                (("symphony_switch_up", "{{switch}}"),),
                statetimeline,
            ),
            PanelSpec(
                "Telemetry read errors",
                "short",
                "Failed reads of job state per switch over 5 minutes.",
                (
                    (
                        "sum by (switch) (increase(symphony_telemetry_read_errors_total[5m]))",
                        "{{switch}}",
                    ),
                ),
            ),
        ],
    ),
    (
        "Per job",
        [
            PanelSpec(
                "Step overlap",
                "none",
                "step_max - step_min + 1 in the current window, the highest over the job's "
                f"switches; the alert fires above {OVERLAP_ALERT}.",
                (("max by (job_id, job_name) (symphony_job_step_overlap)", BY_JOB),),
            ),
            PanelSpec(
                "Symphony marks / s",
                "ops",
                "ECN marks from Symphony's decision, over the job's switches.",
                ((f"{PER_JOB} (rate(symphony_job_symphony_marks_total[1m]))", BY_JOB),),
            ),
            PanelSpec(
                "Queue-depth marks / s",
                "ops",
                "ECN marks from the queue-depth marker.",
                ((f"{PER_JOB} (rate(symphony_job_queue_marks_total[1m]))", BY_JOB),),
            ),
            PanelSpec(
                "Alpha",
                "none",
                "Marking aggressiveness per job and switch.",
                (("symphony_job_alpha", AT_SWITCH),),
            ),
            PanelSpec(
                "Window-ahead share",
                "percentunit",
                "Share of the current window's packets of a step ahead of step_min (eq. 5).",
                (
                    (
                        "symphony_job_window_ahead_packets"
                        " / clamp_min(symphony_job_window_packets, 1)",
                        AT_SWITCH,
                    ),
                ),
            ),
        ],
    ),
]


def _panel(spec: PanelSpec) -> Any:
    p = spec.kind.Panel().title(spec.title).description(spec.about).unit(spec.unit)
    p = p.datasource(DS).height(8).span(8)
    for i, (expr, legend) in enumerate(spec.queries):
        q = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id("ABCDEFGH"[i])
        p = p.with_target(q.datasource(DS))
    return p


def build() -> dict[str, Any]:
    dash = (
        d.Dashboard("Symphony")
        .uid("symphony")
        .description("Symphony jobs on the fabric: step overlap, marks, alpha, switches.")
        .tags(["symphony", "rdma"])
        .refresh("10s")
        .time("now-1h", "now")
        .with_variable(d.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    for row, panels in ROWS:
        dash = dash.with_row(d.Row(row))
        for panel in panels:
            dash = dash.with_panel(_panel(panel))
    out: dict[str, Any] = json.loads(JSONEncoder(sort_keys=True, indent=2).encode(dash.build()))
    return out


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, PromQL) of every target in a dashboard JSON."""
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="fail if the committed JSON is stale")
    args = p.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT} is stale: run python -m symphony_tools.dashboard", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
