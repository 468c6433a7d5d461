"""Three controller replicas on a real PostgreSQL (Debian's server, our own cluster on
loopback), without a switch: one leader at a time, followers refuse changes naming it and
answer reads from the store, the client and symphonyctl find the leader among several
addresses, the Slurm hooks work through them, a SIGKILLed leader is replaced and a retried
request key gets its one job, a paused leader that resumes after the takeover writes nothing,
and the replica metrics say who leads, with which epoch, after how many takeovers.

The switch-side checks (fencing on bmv2, the chaos test) are in test_replicas_bmv2.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from symphony import slurm
from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.client import Client, Retry
from symphony_tools.ports import free_port
from symphony_tools.replicas import ReplicaSet

# Long enough to ride out a failover (a few lease polls and a start).
PATIENT = Retry(attempts=40, first_delay_s=0.1, max_delay_s=0.5)


def body(tmp: Path) -> object:
    (tmp / "p4info.txtpb").write_text("")
    (tmp / "bmv2.json").write_text("{}")
    dead = free_port()  # nothing listens there: the switch stays down, the API still works

    def config(api: str, metrics: str) -> str:
        return f"""[controller]
install_timeout_s = 0.2
backoff_initial_s = 1.0
[api]
listen = "{api}"
[metrics]
listen = "{metrics}"
[pipelines.bmv2]
p4info = "{tmp}/p4info.txtpb"
device_config = "{tmp}/bmv2.json"
[[switches]]
name = "s1"
address = "127.0.0.1:{dead}"
device_id = 0
target = "bmv2"
"""

    return config


@pytest.fixture
def replicas(tmp_path, pg):
    rs = ReplicaSet(tmp_path, pg.new_database(), 3, body(tmp_path), ttl_s=1.5)
    rs.start()
    try:
        yield rs
    finally:
        rs.stop()


def stub(address: str) -> pb_grpc.JobServiceStub:
    return pb_grpc.JobServiceStub(grpc.insecure_channel(address))


def allocate_req(key: str, name: str) -> pb.AllocateRequest:
    return pb.AllocateRequest(request_key=key, name=name, mode="tag", switches=["s1"])


def test_one_leader_followers_refuse_naming_it_and_read_the_store(replicas):
    leader = replicas.leader()
    followers = [r for r in replicas.replicas if r is not leader]
    with Client(replicas.addresses, retry=PATIENT, timeout_s=10) as c:
        job = c.allocate("k1", "alpha", switches=["s1"]).job
        assert c.current == leader.api
    for f in followers:
        with pytest.raises(grpc.RpcError) as err:
            stub(f.api).Allocate(allocate_req("k2", "beta"), timeout=10)
        e = err.value
        assert e.code() == grpc.StatusCode.UNAVAILABLE
        assert "not the leader" in e.details() and leader.api in e.details()
        assert ("symphony-leader", leader.api) in tuple(e.trailing_metadata())
        # Reads answer from the store; the live state says why this replica has none.
        listed = stub(f.api).List(pb.ListRequest(), timeout=10).jobs
        assert [(j.job_id, j.name) for j in listed] == [(job.job_id, "alpha")]
        got = stub(f.api).Get(pb.JobRef(job="alpha"), timeout=10)
        assert got.job.job_id == job.job_id and "follower" in got.live[0].error
        assert f.metric("symphony_replica_role", role="follower") == 1.0
    assert leader.metric("symphony_replica_epoch") == 1.0
    assert leader.metric("symphony_replica_failovers_total") == 1.0
    # A client that starts at a follower is sent to the leader and stays there.
    with Client(f"{followers[0].api},{followers[1].api},{leader.api}", retry=PATIENT) as c:
        again = c.allocate("k1", "alpha", switches=["s1"])
        assert not again.created and again.job.job_id == job.job_id
        assert c.current == leader.api


def test_failover_keeps_every_job_and_a_retried_key_gets_its_one_job(replicas):
    first = replicas.leader()
    with Client(replicas.addresses, retry=PATIENT, timeout_s=10) as c:
        jobs = {f"k{i}": c.allocate(f"k{i}", f"j{i}", switches=["s1"]).job for i in range(5)}
        first.signal(signal.SIGKILL)
        second = replicas.leader(exclude=first)
        assert second.metric("symphony_replica_epoch") == 2.0
        assert second.metric("symphony_replica_failovers_total") == 1.0
        for key, job in jobs.items():
            again = c.allocate(key, job.name, switches=["s1"])
            assert not again.created and again.job.job_id == job.job_id
        new = c.allocate("k-new", "j-new", switches=["s1"]).job
        assert new.job_id not in {j.job_id for j in jobs.values()}
        c.release("j0")
        # The killed replica comes back as a follower.
        first.start()
        replicas.leader()
        assert replicas.leader() is second
        # Every job kept its Job_ID; j0 waits for the (down) switch to clear it.
        listed = {j.name: (j.job_id, j.state) for j in c.list()}
        want = {j.name: (j.job_id, "active") for j in jobs.values()}
        assert listed == {**want, "j0": (jobs["k0"].job_id, "releasing"),
                          "j-new": (new.job_id, "active")}  # fmt: skip


def test_a_paused_leader_resumes_as_a_follower_and_writes_nothing(replicas):
    old = replicas.leader()
    with Client(replicas.addresses, retry=PATIENT, timeout_s=10) as c:
        c.allocate("k1", "alpha", switches=["s1"])
    old.signal(signal.SIGSTOP)
    new = replicas.leader(exclude=old)
    old.signal(signal.SIGCONT)
    # Its gate closed at its lease's deadline, before the takeover: a write sent to it now is
    # refused whatever its loop has noticed yet, and it then follows.
    with pytest.raises(grpc.RpcError) as err:
        stub(old.api).Allocate(allocate_req("k2", "beta"), timeout=10)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "not the leader" in err.value.details()
    assert replicas.leader() is new
    with Client(replicas.addresses, retry=PATIENT) as c:
        assert [j.name for j in c.list()] == ["alpha"]
    assert new.metric("symphony_replica_epoch") == 2.0


def test_symphonyctl_and_the_slurm_hooks_find_the_leader(replicas, tmp_path, capsys):
    replicas.leader()
    out = subprocess.run(
        [sys.executable, "-m", "symphony.cli", "--api", replicas.addresses, "--json",
         "job", "allocate", "--name", "ctl", "--mode", "tag", "--switch", "s1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["created"]
    toml = tmp_path / "slurm.toml"
    api_list = ", ".join(f'"{r.api}"' for r in replicas.replicas)
    toml.write_text(
        f'api = [{api_list}]\nstate_dir = "{tmp_path}/spool"\n[switches]\n"*" = ["s1"]\n'
    )
    cfg = slurm.load_config(toml)
    env = {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "n1", "SLURM_CLUSTER_NAME": "c"}
    assert slurm.prolog(cfg, env) == 0
    with Client(replicas.addresses, retry=PATIENT) as c:
        assert {j.name for j in c.list()} == {"ctl", "slurm-77"}
        replicas.leader().signal(signal.SIGKILL)
        assert slurm.epilog(cfg, env) == 0  # through the failover, or pending for the next run
        slurm.flush(cfg, c)
        replicas.leader()
        # Released (the switch being down, it waits there to be cleared).
        assert {(j.name, j.state) for j in c.list()} == {
            ("ctl", "active"),
            ("slurm-77", "releasing"),
        }
    capsys.readouterr()


def test_bad_replica_configs_are_refused_naming_the_field(tmp_path):
    from symphony.config import ConfigError, parse

    (tmp_path / "p4info.txtpb").write_text("")
    (tmp_path / "bmv2.json").write_text("{}")
    base = {
        "pipelines": {"bmv2": {"p4info": "p4info.txtpb", "device_config": "bmv2.json"}},
        "switches": [{"name": "s1", "address": "127.0.0.1:1", "device_id": 0, "target": "bmv2"}],
    }
    cases = [
        ({"database": "j.db", "store": {"url": "postgresql://x/y"}}, "store.url", "not both"),
        ({"store": {"url": "sqlite:///j.db"}}, "store.url", "postgresql://"),
        ({"store": {"url": "postgresql://x/y", "lease_ttl_s": 0}}, "store.lease_ttl_s", "in"),
        ({"store": {"url": "postgresql://x/y", "replica": "a b"}}, "store.replica", "name"),
        ({"store": {"url": "postgresql://x/y", "advertise": "0.0.0.0:1"}}, "store.advertise",
         "cannot reach"),
        ({"store": {"url": "postgresql://x/y", "ttl": 3}}, "store.ttl", "unknown key"),
        ({}, "database", "is required"),
    ]  # fmt: skip
    for extra, field, words in cases:
        with pytest.raises(ConfigError) as err:
            parse({**base, **extra}, base_dir=tmp_path)
        assert err.value.field == field and words in str(err.value), (extra, err.value)
    cfg = parse({**base, "store": {"url": "postgresql://db/sym", "replica": "a"}}, tmp_path)
    assert cfg.database is None and cfg.store is not None and cfg.store.advertise == cfg.api.listen
