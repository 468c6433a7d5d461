"""deploy/: the Prometheus config and rules checked and unit-tested by promtool (Debian's
prometheus package; scripts/install_test_deps.sh installs it), the Grafana dashboard JSON as
grafana-foundation-sdk generates it. Its queries run against a real Prometheus in
tests/integration/test_controller_bmv2.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from symphony_tools import dashboard

ROOT = Path(__file__).resolve().parents[1]
PROM = ROOT / "deploy" / "prometheus"
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from services import missing_tools, which  # noqa: E402

_why = missing_tools("promtool")
needs_promtool = pytest.mark.skipif(_why is not None, reason=f"promtool test skipped: {_why}")


def promtool(*args: str) -> str:
    out = subprocess.run(
        [str(which("promtool")), *args], capture_output=True, text=True, cwd=PROM, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@needs_promtool
def test_rules_and_config_check():
    assert "SUCCESS: 4 rules found" in promtool("check", "rules", "symphony-rules.yml")
    assert "SUCCESS" in promtool("check", "config", "prometheus.yml")


@needs_promtool
def test_rules_unit_tests():
    # Fires for overlap 6 held 5 minutes, not for a 3-minute spike to 9 (the .test.yml cases).
    assert "SUCCESS" in promtool("test", "rules", "symphony-rules.test.yml")


def test_alert_threshold_is_the_dashboards():
    rules = (PROM / "symphony-rules.yml").read_text()
    assert re.search(rf"symphony:job_step_overlap:max > {dashboard.OVERLAP_ALERT}\n", rules)


def test_dashboard_json_is_generated():
    assert dashboard.main(["--check"]) == 0, "run python -m symphony_tools.dashboard"
    committed = json.loads(dashboard.OUT.read_text())
    assert committed["uid"] == "symphony"
    titles = {t for t, _ in dashboard.queries(committed)}
    assert {
        "Live jobs",
        "Step overlap",
        "Symphony marks / s",
        "Alpha",
        "Switch connection",
    } <= titles
