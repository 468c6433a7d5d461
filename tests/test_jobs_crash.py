"""Crash safety: kill -9 the real daemon at random instants while a client streams allocations
and releases, restart it, and check that nothing acknowledged was lost and no Job_ID was handed
out twice. 100 rounds by default (SYMPHONY_CRASH_ROUNDS to change).

What "acknowledged" means: the client got the gRPC answer. The daemon answers only after the
SQLite commit, so every acknowledged allocation must survive with its Job_ID, every acknowledged
release must stay released, and a retry of any request key must get the same Job_ID back.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time

import grpc
import pytest

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony_tools.ports import free_port

ROUNDS = int(os.environ.get("SYMPHONY_CRASH_ROUNDS", "100"))


def write_config(tmp_path, api_port: int, metrics_port: int):
    (tmp_path / "p4info.txtpb").write_text("")
    (tmp_path / "bmv2.json").write_text("{}")
    dead = free_port()  # nothing listens there: the switch stays down, the API still works
    path = tmp_path / "controller.toml"
    path.write_text(f"""
database = "jobs.db"
[controller]
install_timeout_s = 0.5
backoff_initial_s = 1.0
[api]
listen = "127.0.0.1:{api_port}"
[metrics]
listen = "127.0.0.1:{metrics_port}"
[pipelines.bmv2]
p4info = "p4info.txtpb"
device_config = "bmv2.json"
[[switches]]
name = "s1"
address = "127.0.0.1:{dead}"
device_id = 0
target = "bmv2"
""")
    return path


def start_daemon(cfg_path, log):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "symphony.daemon",
            "--config",
            str(cfg_path),
            "--log-level",
            "ERROR",
        ],
        stdout=log,
        stderr=log,
    )


def wait_api(stub, proc):
    for _ in range(400):
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited with {proc.returncode}")
        try:
            stub.List(pb.ListRequest(), timeout=0.5, wait_for_ready=True)
            return
        except grpc.RpcError:
            time.sleep(0.025)
    raise AssertionError("API did not come up")


class Client:
    """Streams requests until the daemon dies; records what was acknowledged."""

    def __init__(self, stub, rng: random.Random, round_no: int):
        self.stub = stub
        self.rng = rng
        self.round = round_no
        self.acked_alloc: dict[str, tuple[int, str, str, tuple[str, ...]]] = {}
        self.acked_release: set[int] = set()
        self.in_flight: pb.AllocateRequest | None = None
        self.active: list[int] = []

    def run(self, known_active: list[int]):
        self.active = list(known_active)
        i = 0
        while True:
            i += 1
            try:
                if self.active and self.rng.random() < 0.35:
                    job_id = self.active.pop(self.rng.randrange(len(self.active)))
                    self.stub.Release(pb.JobRef(job=str(job_id)), timeout=5)
                    self.acked_release.add(job_id)
                else:
                    key = f"r{self.round}-{i}"
                    mode = self.rng.choice(["tag", "hosts"])
                    hosts = (
                        [f"10.{self.round % 250}.{i // 250}.{i % 250 + 1}"]
                        if mode == "hosts"
                        else []
                    )
                    req = pb.AllocateRequest(
                        request_key=key, name=f"job-{key}", mode=mode, hosts=hosts, switches=["s1"]
                    )
                    self.in_flight = req
                    reply = self.stub.Allocate(req, timeout=5)
                    self.in_flight = None
                    self.acked_alloc[key] = (reply.job.job_id, mode, req.name, tuple(hosts))
                    self.active.append(reply.job.job_id)
            except grpc.RpcError:
                return  # the daemon is gone


def check(stub, acked_alloc, acked_release, in_flight):
    jobs = stub.List(pb.ListRequest(include_released=True), timeout=5).jobs
    by_key = {j.request_key: j for j in jobs}
    live_ids = [j.job_id for j in jobs if j.state != "released"]
    assert len(live_ids) == len(set(live_ids)), "a Job_ID is held by two live jobs"
    for key, (job_id, *_rest) in acked_alloc.items():
        assert key in by_key, f"acknowledged allocation {key} lost"
        assert by_key[key].job_id == job_id, f"{key} changed Job_ID"
    for job in jobs:
        if job.job_id in acked_release and job.request_key in acked_alloc:
            assert job.state != "active", f"acknowledged release of {job.job_id} lost"
    # The request in flight at the kill: its retry gets one consistent answer.
    if in_flight is not None:
        r = stub.Allocate(in_flight, timeout=5)
        if in_flight.request_key in by_key:
            assert not r.created and r.job.job_id == by_key[in_flight.request_key].job_id
        else:
            assert r.created and r.job.job_id not in live_ids
    return [j.job_id for j in stub.List(pb.ListRequest(), timeout=5).jobs if j.state == "active"]


@pytest.mark.skipif(ROUNDS <= 0, reason="SYMPHONY_CRASH_ROUNDS=0")
def test_kill_9_during_allocations_loses_nothing(tmp_path):
    rng = random.Random(20261130)
    api_port, metrics_port = free_port(), free_port()
    cfg = write_config(tmp_path, api_port, metrics_port)
    acked_alloc: dict[str, tuple] = {}
    acked_release: set[int] = set()
    in_flight = None
    active: list[int] = []
    kills = 0
    with (
        open(tmp_path / "daemon.log", "ab") as log,
        grpc.insecure_channel(f"127.0.0.1:{api_port}") as channel,
    ):
        stub = pb_grpc.JobServiceStub(channel)
        for round_no in range(ROUNDS):
            proc = start_daemon(cfg, log)
            try:
                wait_api(stub, proc)
                active = check(stub, acked_alloc, acked_release, in_flight)
                if in_flight is not None:
                    # check() retried it; it is now acknowledged.
                    r = stub.Allocate(in_flight, timeout=5)
                    acked_alloc[in_flight.request_key] = (r.job.job_id,)
                    in_flight = None
                # Retried requests from earlier rounds still get their Job_ID.
                for key in rng.sample(sorted(acked_alloc), min(3, len(acked_alloc))):
                    job = next(
                        j
                        for j in stub.List(pb.ListRequest(include_released=True), timeout=5).jobs
                        if j.request_key == key
                    )
                    retry = stub.Allocate(
                        pb.AllocateRequest(
                            request_key=key,
                            name=job.name,
                            mode=job.mode,
                            hosts=job.hosts,
                            switches=job.switches,
                        ),
                        timeout=5,
                    )
                    assert not retry.created and retry.job.job_id == acked_alloc[key][0]
                client = Client(stub, rng, round_no)
                t = threading.Thread(target=client.run, args=(active,))
                t.start()
                time.sleep(rng.uniform(0.0, 0.25))
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
                kills += 1
                t.join(30)
                assert not t.is_alive()
                acked_alloc.update(client.acked_alloc)
                acked_release |= client.acked_release
                in_flight = client.in_flight
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
        # Final restart and check.
        proc = start_daemon(cfg, log)
        try:
            wait_api(stub, proc)
            check(stub, acked_alloc, acked_release, in_flight)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
    assert kills == ROUNDS
    assert len(acked_alloc) > ROUNDS, "too few allocations acknowledged to mean anything"
