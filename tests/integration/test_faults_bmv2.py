"""Faults in the controller's world, on a real bmv2 (docs/robustness.md): the switch killed
(SIGKILL) in the middle of installing a job and in the middle of releasing one, the switch
unreachable when a job is allocated, and another P4Runtime client taking the primary role.

Same switch and the same skip rules as test_controller_bmv2.py (whose helpers this reuses): the
module starts its own bmv2 (the instance the SYMPHONY_* variables name) and stops it at the end.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
import time

import grpc
import pytest
from scapy.config import conf
from test_controller_bmv2 import (
    ENV,
    T_JOB_BY_SRC,
    T_JOB_BY_TAG,
    Controller,
    bmv2,
    bmv2_running,
    entries_on_switch,
    expected_state,
    masked,
    packets,
    send,
    setup,  # noqa: F401 - the fixture: this module's own bmv2 and controller
    wait_packets,
)

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.switch.registers import ThriftJobRegisters
from symphony.switch.thrift_registers import Bmv2Thrift
from symphony_tools.testbed import bmv2_missing

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(bmv2_missing() is not None, reason=f"bmv2 test skipped: {bmv2_missing()}"),
]
# The most hosts one job may list: 4096 job_by_src entries take several write batches (500
# each), so a kill can land between them.
HOSTS = [f"10.{100 + i // 256}.{i % 256}.1" for i in range(4096)]


@pytest.fixture(scope="module", autouse=True)
def _fresh_interfaces(setup):  # noqa: F811 - the imported fixture
    """The switch's veth ports are new (test_controller_bmv2 deleted and this module's switch
    re-created them); scapy caches interface indexes per process and would send to the old ones
    (ENODEV). Nothing is cached yet when no test sent before (conf.ifaces is None)."""
    if conf.ifaces is not None:
        conf.ifaces.reload()


def stub_of(ctl: Controller) -> pb_grpc.JobServiceStub:
    return pb_grpc.JobServiceStub(grpc.insecure_channel(ctl.api))


def kill_switch_when(pred, limit_s: float = 30.0) -> int:
    """SIGKILL the switch the moment `pred(entries in job_by_src)` holds; returns that count.
    The count comes from bmv2's Thrift API, cheap enough to poll while the controller writes."""
    pid = bmv2_running()
    assert pid is not None
    thrift = Bmv2Thrift(ENV.grpc_host, ENV.thrift_port)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        n = int(thrift._std.bm_mt_get_num_entries(0, T_JOB_BY_SRC))
        if pred(n):
            os.kill(pid, signal.SIGKILL)
            while bmv2_running() is not None:
                time.sleep(0.01)
            return n
    raise AssertionError("the switch never reached the state to kill it in")


def restart_killed_switch(ctl: Controller) -> None:
    bmv2("start")  # start.sh sees the dead PID and starts a fresh, empty switch
    ctl.wait_ready()


def in_background(fn) -> tuple[threading.Thread, dict]:
    """Run one API call in a thread; its reply (or RpcError) lands in the returned dict."""
    out: dict = {}

    def run():
        try:
            out["reply"] = fn()
        except grpc.RpcError as exc:
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    return t, out


def job_entries(job_id: int) -> dict[str, int]:
    """Per table, how many entries on the switch name this job."""
    out: dict[str, int] = {}
    for e in entries_on_switch().values():
        if f"{job_id}" in e.action or f"'job_id': {job_id}" in e.match:
            out[e.table] = out.get(e.table, 0) + 1
    return out


def test_switch_killed_while_installing_a_job(setup):  # noqa: F811 - the imported fixture
    ctl = setup
    stub = stub_of(ctl)
    # T_win = 0, as expected_state assumes (every packet closes a window): with the default
    # 100 us, two packets bmv2 takes in one burst (a loaded machine) share a window.
    zero_window = pb.Params(t_win_us=0)
    req = pb.AllocateRequest(
        request_key="kill-install", name="big", mode="hosts", hosts=HOSTS, switches=["s1"],
        params=zero_window,
    )  # fmt: skip
    t, out = in_background(lambda: stub.Allocate(req, timeout=60))
    at = kill_switch_when(lambda n: 0 < n < len(HOSTS))
    t.join(60)
    reply = out["reply"]  # the request is answered, not failed
    print(f"switch killed with {at} of {len(HOSTS)} host entries installed")
    assert reply.created and reply.job.state == "active"
    assert reply.switches[0].status.startswith("pending"), reply.switches
    # Stored: the API shows the job, its live state unavailable while the switch is down.
    got = stub.Get(pb.JobRef(job="big"), timeout=30)
    assert got.job.job_id == reply.job.job_id
    restart_killed_switch(ctl)
    # The new switch holds the whole job, not half of it.
    on_switch = entries_on_switch().values()
    srcs = {e.match for e in on_switch if e.table == T_JOB_BY_SRC}
    assert len(srcs) == len(HOSTS)
    # And tracks it from a zero state.
    pkts = packets(0, steps=(4, 4), src=HOSTS[7], tag=False)
    send(pkts)
    live = wait_packets(ctl, "big", 2)
    assert masked(live) == expected_state(reply.job.job_id, pkts, tag=False)
    # Releasing it now works in the ordinary way.
    rel = stub.Release(pb.JobRef(job="big"), timeout=60)
    assert rel.job.state == "released", rel


def test_switch_killed_while_releasing_a_job(setup):  # noqa: F811 - the imported fixture
    ctl = setup
    stub = stub_of(ctl)
    req = pb.AllocateRequest(
        request_key="kill-release", name="big2", mode="hosts", hosts=HOSTS, switches=["s1"]
    )
    reply = stub.Allocate(req, timeout=60)
    assert [s.status for s in reply.switches] == ["installed"]
    job_id = reply.job.job_id
    send(packets(0, steps=(3, 3), src=HOSTS[1], tag=False))
    wait_packets(ctl, "big2", 2)
    # Kill the switch the moment the release is committed (the store says "releasing"): the
    # controller is then deleting the job's entries.
    db = sqlite3.connect(ctl.tmp / "jobs.db")
    thrift = Bmv2Thrift(ENV.grpc_host, ENV.thrift_port)
    pid = bmv2_running()
    assert pid is not None
    t, out = in_background(lambda: stub.Release(pb.JobRef(job="big2"), timeout=60))
    while db.execute("SELECT state FROM jobs WHERE name = 'big2'").fetchone()[0] == "active":
        pass
    # Then, as soon as the first deletes landed (or a deadline: the switch may be slow to start).
    deadline = time.monotonic() + 2
    while (at := int(thrift._std.bm_mt_get_num_entries(0, T_JOB_BY_SRC))) == len(HOSTS):
        if time.monotonic() > deadline:
            break
    os.kill(pid, signal.SIGKILL)
    db.close()
    t.join(60)
    assert "reply" in out, out
    rel = out["reply"]
    print(f"switch killed with {at} of {len(HOSTS)} host entries left to delete")
    while bmv2_running() is not None:
        time.sleep(0.01)
    assert rel.job.state == "releasing" and list(rel.job.pending) == ["s1"], rel
    # The Job_ID stays taken while the release is pending.
    jobs = stub.List(pb.ListRequest(include_released=True), timeout=30).jobs
    assert [(j.job_id, j.state) for j in jobs if j.name == "big2"] == [(job_id, "releasing")]
    restart_killed_switch(ctl)
    # Back: nothing of the job is on the switch, its state is zero, and the release completed.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        jobs = stub.List(pb.ListRequest(include_released=True), timeout=30).jobs
        if [j.state for j in jobs if j.name == "big2"] == ["released"]:
            break
        time.sleep(0.05)
    assert [j.state for j in jobs if j.name == "big2"] == ["released"]
    assert not any(e.table == T_JOB_BY_SRC for e in entries_on_switch().values())
    state = asyncio.run(ThriftJobRegisters(ENV.grpc_host, ENV.thrift_port).read([job_id]))
    assert state[job_id].packets == 0 and state[job_id].window_packets == 0


def test_switch_unreachable_when_a_job_is_allocated(setup):  # noqa: F811 - the imported fixture
    ctl = setup
    stub = stub_of(ctl)
    bmv2("stop", "--keep-ports")
    deadline = time.monotonic() + 10
    while ctl.status()["state"] == "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    req = pb.AllocateRequest(
        request_key="while-down", name="late", mode="tag", switches=["s1"],
        params=pb.Params(t_win_us=0),  # as expected_state assumes: not the switch's clock
    )  # fmt: skip
    reply = stub.Allocate(req, timeout=30)
    # Stored, and the answer says the switch has not got it yet.
    assert reply.created and reply.job.state == "active"
    assert reply.switches[0].status.startswith("pending: switch"), reply.switches
    got = stub.Get(pb.JobRef(job="late"), timeout=30)
    assert [(s.switch, s.available) for s in got.live] == [("s1", False)]
    bmv2("start")
    ctl.wait_ready()
    # Installed on the new switch without another request; a retry says so.
    assert any(e.table == T_JOB_BY_TAG for e in entries_on_switch().values())
    again = stub.Allocate(req, timeout=30)
    assert not again.created and [s.status for s in again.switches] == ["installed"]
    pkts = packets(reply.job.job_id, steps=(8, 8, 9))
    send(pkts)
    assert masked(wait_packets(ctl, "late", 3)) == expected_state(reply.job.job_id, pkts)
    stub.Release(pb.JobRef(job="late"), timeout=30)


class OtherClient:
    """A second P4Runtime client (finsy) in its own loop thread, with its own election id."""

    def __init__(self, election_id: int) -> None:
        import finsy

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        opts = finsy.SwitchOptions(device_id=ENV.device_id, initial_election_id=election_id)
        self.sw = finsy.Switch("other", ENV.grpc_addr, opts)
        self.call(self.sw.__aenter__())

    def call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def delete_table(self, table: str) -> int:
        from finsy import P4TableEntry

        async def run() -> int:
            found = [e async for e in self.sw.read(P4TableEntry(table))]
            await self.sw.delete(found)
            return len(found)

        return self.call(run())

    def close(self) -> None:
        self.call(self.sw.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def test_another_client_takes_the_primary_role(setup):  # noqa: F811 - the imported fixture
    ctl = setup
    stub = stub_of(ctl)
    first = stub.Allocate(
        pb.AllocateRequest(request_key="before", name="before", mode="tag", switches=["s1"]),
        timeout=30,
    )
    assert [s.status for s in first.switches] == ["installed"]
    other = OtherClient(election_id=1 << 40)  # above the controller's: the switch's primary now
    try:
        assert other.sw.is_primary
        # The other primary deletes the controller's job entries...
        assert other.delete_table(T_JOB_BY_TAG) == 1
        # ...and the controller, a backup now, cannot write: a new job is stored and pending.
        second = stub.Allocate(
            pb.AllocateRequest(request_key="during", name="during", mode="tag", switches=["s1"]),
            timeout=30,
        )
        assert second.created and second.switches[0].status.startswith("pending"), second
    finally:
        other.close()
    # The other client left: the controller is primary again and puts back what it wants.
    deadline = time.monotonic() + 10
    want = {first.job.job_id, second.job.job_id}
    tags: set = set()
    while time.monotonic() < deadline:
        tags = {e.match for e in entries_on_switch().values() if e.table == T_JOB_BY_TAG}
        if len(tags) == 2:
            break
        time.sleep(0.1)
    assert len(tags) == 2 and all(any(str(j) in m for m in tags) for j in want), tags
    for name in ("before", "during"):
        stub.Release(pb.JobRef(job=name), timeout=30)
