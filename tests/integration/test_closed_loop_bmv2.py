"""The closed loop's plumbing on the real switch (the smoke variant of `make experiment`):
emulated DCQCN hosts send tagged RoCEv2 through bmv2, the job comes from the controller's API,
marks come back as CNPs and slow the sender. No timing is asserted: only that packets flow, that
CNPs return, and that Symphony's marks fall on the outpacing flow alone.

Starts its own bmv2 (veth40-47, P4Runtime 9759, Thrift 9290) and controller; needs root,
simple_switch_grpc and `make build`. Skips, naming what is missing, outside CI.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from evaluation.hosts import experiments as ex  # noqa: E402
from evaluation.hosts.testbed import Testbed  # noqa: E402
from symphony_tools.testbed import bmv2_missing  # noqa: E402

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(bmv2_missing() is not None, reason=f"bmv2 test skipped: {bmv2_missing()}"),
]

SETUP = ex.Setup(line_pps=2000.0)
PACKETS = 600


@pytest.fixture(scope="module")
def quiet_queue(tmp_path_factory: pytest.TempPathFactory):
    """Queue-depth marking out of reach: every CE mark is Symphony's."""
    with Testbed(tmp_path_factory.mktemp("closed-loop"), k_min=500000, k_max=524287) as tb:
        yield tb


def pair(tb: Testbed, k: float, name: str) -> dict:
    return ex.run_pair(
        tb,
        SETUP,
        ex.Variant(name, k),
        offset=0.5 * PACKETS / SETUP.line_pps,
        packets=PACKETS,
        seed=3,
        name=name,
        keep_trace=True,
    )


# First in the file: it runs a testbed of its own on the same ports and veths, so it must end
# before the module's `quiet_queue` testbed starts (a second controller left running would
# take the switch's primary role from this one).
def test_queue_marking_reaches_both_flows(tmp_path: Path) -> None:
    """With the paper's RED thresholds and no Symphony, a shared bottleneck marks both flows
    and DCQCN answers on both."""
    with Testbed(tmp_path) as tb:
        row = ex.run_pair(
            tb,
            SETUP,
            ex.BASELINE,
            offset=0.0,
            packets=PACKETS,
            seed=4,
            name="smoke-queue",
        )
    assert row["complete"], row
    assert row["A_lost"] == row["B_lost"] == 0
    assert row["symphony_marks"] == 0
    assert row["queue_marks"] == row["A_ce"] + row["B_ce"] > 0
    assert row["A_cnps"] > 0 and row["B_cnps"] > 0


def test_symphony_marks_only_the_outpacing_flow_and_cnps_slow_it(quiet_queue: Testbed) -> None:
    row = pair(quiet_queue, 1.0, "smoke-on")
    assert row["complete"], row
    assert row["A_lost"] == row["B_lost"] == 0
    assert row["unexpected_frames"] == 0
    # Marks: on B (step 1, ahead) only, and only once A (step 0) is in progress.
    assert row["A_ce"] == 0
    assert row["B_ce"] > 0
    assert row["symphony_marks"] == row["B_ce"]
    assert row["queue_marks"] == 0
    arrivals = row["_trace"]["arrivals"]
    first_a = arrivals["A"][0][0]
    assert all(t > first_a for t, _step, ce in arrivals["B"] if ce)
    # CNPs went back through the switch to B's QP and cut its rate.
    assert row["B_cnps"] > 0
    assert row["A_cnps"] == 0
    assert min(rate for _t, rate in row["_trace"]["rates"]["B"]) < SETUP.line_pps
    # The switch tracked every data packet of the job.
    assert row["switch_packets"] == row["A_sent"] + row["B_sent"]


def test_baseline_is_symphony_off_through_the_controller(quiet_queue: Testbed) -> None:
    row = pair(quiet_queue, 0.0, "smoke-off")
    assert row["complete"], row
    assert row["A_ce"] == row["B_ce"] == row["symphony_marks"] == 0
    assert row["A_cnps"] == row["B_cnps"] == 0
    assert row["switch_packets"] == row["A_sent"] + row["B_sent"]
