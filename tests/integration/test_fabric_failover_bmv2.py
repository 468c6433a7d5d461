"""A spine lost and back (issue 31, item 5), on the 2 x 2 bmv2 fabric with the controller daemon:
spine0's process SIGKILLed -> the controller takes it out of the leaves' ECMP groups, so frames
of every hash bucket between the leaves arrive through spine1 alone; spine0 restarted (a fresh
bmv2, no program) -> the controller pushes its pipeline, routes and the job's entries and puts
it back, so the buckets the hash gives spine0 cross it again; no job entry is missing on any
switch and every switch's live state is readable.

Behaviour, not speed: the bounds (20 s to reroute, 30 s to restore) are generous; the times are
measured by evaluation/hosts/fabric_failover.py (docs/experiments.md, "A spine lost").
Same ports as test_fabric_bmv2.py (the fabric's): they do not run at the same time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evaluation.hosts.fabric_probe import (
    Prober,
    bucket_sports,
    pipeline_cookie,
    table_entries,
    table_ids,
)
from symphony import p4names as n
from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony_tools.daemon_process import ControllerProcess
from symphony_tools.fabric import Bmv2Fabric, Topology, fabric_missing
from symphony_tools.fabric import running as fabric_running
from symphony_tools.testbed import P4INFO

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(
        fabric_missing() is not None, reason=f"bmv2 fabric test skipped: {fabric_missing()}"
    ),
]

REROUTE_BOUND_S = 20.0
RESTORE_BOUND_S = 30.0


class Bed:
    def __init__(self, fabric: Bmv2Fabric, controller: ControllerProcess) -> None:
        self.fabric, self.controller = fabric, controller

    @property
    def stub(self) -> pb_grpc.JobServiceStub:
        assert self.controller.stub is not None
        return self.controller.stub

    def states(self) -> dict[str, str]:
        reply = self.stub.SwitchStatus(pb.SwitchStatusRequest(), timeout=5)
        return {s.name: s.state for s in reply.switches}

    def entries(self) -> dict[str, dict[int, set[bytes]]]:
        return {sw.name: table_entries(sw.grpc_addr) for sw in self.fabric.topo.switches}


@pytest.fixture
def bed(tmp_path: Path) -> Iterator[Bed]:
    # A fabric of `make fabric` holds the same ports: start() refuses, naming them.
    # No periodic reconciliation: whatever spine0 holds after its return, its session's
    # reconnection wrote.
    with fabric_running(Topology(2, 2, 2), tmp_path) as (fabric, controller):
        yield Bed(fabric, controller)
    assert fabric.leftovers() == []


def _until(bound_s: float, check: Callable[[], object], what: str) -> float:
    start = time.monotonic()
    last = None
    while time.monotonic() - start < bound_s:
        last = check()
        if last is True:
            return time.monotonic() - start
        time.sleep(0.2)
    raise AssertionError(f"{what} not within {bound_s:g} s: {last}")


def test_a_spine_lost_and_back(bed: Bed) -> None:
    fabric, topo = bed.fabric, bed.fabric.topo
    reply = bed.stub.Allocate(
        pb.AllocateRequest(
            request_key="ring", name="ring", mode="tag", hosts=[h.name for h in topo.hosts]
        ),
        timeout=30,
    )
    assert reply.job.state == "active", reply
    assert {r.switch for r in reply.switches} == {s.name for s in topo.switches}
    src, dst = topo.host("h0"), topo.host("h2")
    sports = [s for v in bucket_sports(src, dst).values() for s in v]  # one flow per bucket
    on_spine = {
        j: [s for s in sports if topo.spine_for(src, dst, 17, s, 4791) == j] for j in (0, 1)
    }
    assert on_spine[0] and on_spine[1]
    before = bed.entries()
    ids = table_ids(P4INFO)
    job_tables = [ids[n.JOB_PARAMS], ids[n.JOB_BY_TAG]]
    for name, tables in before.items():
        for t in job_tables:
            assert tables.get(t), f"{name}: no entry in table {t} before the loss"

    probe = Prober(fabric, src, dst)
    try:
        r = probe.round(sports)
        assert r.lost == [] and r.via == {0: len(on_spine[0]), 1: len(on_spine[1])}, r

        fabric.kill("spine0")

        def rerouted() -> object:
            r = probe.round(sports, timeout_s=0.5)
            return True if not r.lost and r.via == {0: 0, 1: len(sports)} else r

        _until(REROUTE_BOUND_S, rerouted, "every bucket through spine1")
        assert bed.states()["spine0"] != "ready"

        fabric.restart("spine0")

        def restored() -> object:
            r = probe.round(sports, timeout_s=0.5)
            want = {0: len(on_spine[0]), 1: len(on_spine[1])}
            return True if not r.lost and r.via == want else r

        _until(RESTORE_BOUND_S, restored, "spine0 carrying its buckets again")
        assert bed.states() == {s.name: "ready" for s in topo.switches}
    finally:
        probe.close()

    # The restarted spine holds what it held before the loss (what the controller wrote then:
    # routes, lookup tables, the job's entries), and so does every other switch (the leaves'
    # ECMP groups have spine0's uplink back).
    after = bed.entries()
    for name in before:
        assert after[name] == before[name], f"{name}: entries differ after spine0's return"
    # The spines of this fabric hold the same entries (each leaf's hosts on the port of that
    # leaf, the job's entries): the restarted one equals the one that stayed up, and runs the
    # same pipeline.
    assert after["spine0"] == after["spine1"]
    cookies = {sw.name: pipeline_cookie(sw.grpc_addr) for sw in topo.switches}
    assert len(set(cookies.values())) == 1 and cookies["spine0"] != 0, cookies
    live = bed.stub.Get(pb.JobRef(job="ring"), timeout=30).live
    assert {x.switch for x in live if x.available} == {s.name for s in topo.switches}, live
