"""The emulation sizes itself to the machine, on the real switch: with stalls injected on every
core (evaluation/hosts/jitter.py: 10 ms every 500 ms, above the hosts' loop and bmv2), the
calibration of `python -m evaluation.hosts` sees them and either lowers the rate until the
lateness limit tolerates them (the runs then go on at that rate) or refuses at once, naming
what it measured; it never runs at the planned rate that the stalls would spoil.

Starts its own bmv2 (veth40-47, P4Runtime 9759, Thrift 9290) and controller; needs root,
simple_switch_grpc and `make build`. Skips, naming what is missing, outside CI.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from evaluation.hosts import __main__ as hosts_cli  # noqa: E402
from evaluation.hosts.jitter import injected_stalls  # noqa: E402
from symphony_tools.testbed import bmv2_missing  # noqa: E402

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(bmv2_missing() is not None, reason=f"bmv2 test skipped: {bmv2_missing()}"),
]

# 4 stalls a second. The calibration sees only those that land while a send is due (about
# 0.6 of them: a run's loop also waits for its last frames), and the plan keeps the planned rate
# when fewer than about 1.3 a second show (exp(rate x 0.55 s) < 2, the wall time of x0.5): at 2
# a second, CI's run of 2026-12-05 saw 5 over 7.2 ms in 4.3 s and kept x1 (then lost 94 % of its
# attempts, since a periodic stall meets every run that outlasts its period). At 4 a second about
# 10 show, far from that edge. They take 4 % of bmv2's time, within runs.LINK_STRETCH_LIMIT.
STALL_MS, PERIOD_MS = 10.0, 250.0
PLANNED_PPS = 4000.0  # lateness limit 7.2 ms: every injected stall spoils a run at this rate
ARGS = [
    "--only", "pair", "--reps", "1", "--offsets", "0", "--ks", "", "--gates", "",
    "--flow-packets", "1000", "--line-pps", str(PLANNED_PPS), "--calibrate-s", "3",
]  # fmt: skip


def test_injected_stalls_lower_the_rate_or_refuse(tmp_path: Path) -> None:
    with injected_stalls(STALL_MS, PERIOD_MS):
        rc = hosts_cli.main([*ARGS, "--out", str(tmp_path)])
    if rc == 2:  # refused at once, before any run, with what was measured
        cal = json.loads((tmp_path / "calibration.json").read_text())
        assert cal["refused"] and "stalls" in cal["refused"]
        assert not (tmp_path / "fig9_runs.csv").exists()
        return
    # 0: every run valid at the lowered rate. 1: a cell spoiled in all its attempts: on a
    # machine that also stalls by itself (the hypervisor's, docs/experiments.md) the runs can
    # still be unlucky; what this test holds is that the calibration answered the injection.
    assert rc in (0, 1)
    meta = json.loads((tmp_path / "meta.json").read_text())
    cal = meta["calibration"]
    assert cal["worst_ms"] >= 0.8 * STALL_MS  # it saw the stalls
    assert meta["rate_factor"] < 1.0
    assert meta["pair"]["line_pps"] == pytest.approx(PLANNED_PPS * meta["rate_factor"])
    assert meta["pair"]["lateness_limit_ms"] > STALL_MS  # the limit now tolerates them
    summary = (tmp_path / "summary.md").read_text()
    assert "## Calibration and spoiled attempts" in summary
    assert f"{meta['pair']['line_pps']:g} packets/s" in summary
