"""The job manager when a switch session's write is cancelled under it (the switch died mid-write:
finsy cancels the in-flight call). The request must still be answered - stored, pending - rather
than end without a reply (found by tests/integration/test_faults_bmv2.py, here without a switch).
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from test_api_service import Server, make_config

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.switch.session import SessionStatus


class DroppedSession:
    """A ready session whose sync is cancelled, as finsy cancels a write on a dead channel."""

    def __init__(self, name: str) -> None:
        self.is_ready = True
        self.status = SessionStatus(name, "stand-in", "bmv2", state="ready")

    async def sync(self, job_ids=None) -> int:
        await asyncio.sleep(0)
        raise asyncio.CancelledError


@pytest.fixture
def api(tmp_path):
    srv = Server(make_config(tmp_path))
    srv.manager.sessions["s1"] = DroppedSession("s1")
    channel = grpc.insecure_channel(srv.cfg.api.listen)
    yield pb_grpc.JobServiceStub(channel), srv
    channel.close()
    srv.close()


def test_a_write_cancelled_under_the_request_still_gets_an_answer(api):
    stub, srv = api
    req = pb.AllocateRequest(request_key="k", name="n", mode="tag", switches=["s1", "s2"])
    reply = stub.Allocate(req, timeout=10)  # before the fix: no reply, DEADLINE_EXCEEDED
    assert reply.created
    status = {s.switch: s.status for s in reply.switches}
    assert status["s1"] == "pending: the switch connection dropped during the write"
    assert status["s2"].startswith("pending")
    assert srv.store.get(reply.job.job_id) is not None
    rel = stub.Release(pb.JobRef(job="n"), timeout=10)
    assert rel.job.state == "releasing" and set(rel.job.pending) == {"s1", "s2"}
