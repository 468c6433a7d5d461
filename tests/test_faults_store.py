"""Faults under the job store: its filesystem read-only, its disk full, a second controller on
the same database (docs/robustness.md).

The database lives on a small tmpfs mounted for the test (a real filesystem: remounting it
read-only and filling it are what an operator's disk does), so these tests need root.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from test_api_service import Server, free_port
from test_jobs_crash import start_daemon, wait_api, write_config

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.config import parse

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def api(tmp_path, small_fs):
    (tmp_path / "p4info.txtpb").write_text("")
    (tmp_path / "bmv2.json").write_text("{}")
    cfg = parse(
        {
            "database": str(small_fs / "jobs.db"),
            "pipelines": {"bmv2": {"p4info": "p4info.txtpb", "device_config": "bmv2.json"}},
            "switches": [
                {"name": "s1", "address": "127.0.0.1:1", "device_id": 0, "target": "bmv2"}
            ],
            "api": {"listen": f"127.0.0.1:{free_port()}"},
        },
        base_dir=tmp_path,
    )
    srv = Server(cfg)
    channel = grpc.insecure_channel(cfg.api.listen)
    yield pb_grpc.JobServiceStub(channel), srv, small_fs
    channel.close()
    srv.close()


def allocate(stub, i: int):
    req = pb.AllocateRequest(request_key=f"key-{i}", name=f"job-{i}", mode="tag", switches=["s1"])
    return stub.Allocate(req, timeout=10)


def rows(path: Path) -> dict[str, tuple[int, str]]:
    """request_key -> (job_id, state), read through a connection of our own; the database must
    pass SQLite's integrity check."""
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {k: (j, s) for k, j, s in db.execute("SELECT request_key, job_id, state FROM jobs")}
    finally:
        db.close()


def assert_store_error(err: grpc.RpcError) -> None:
    assert err.code() == grpc.StatusCode.UNAVAILABLE, (err.code(), err.details())
    assert err.details().startswith("job database"), err.details()


def daemon_on(tmp_path: Path, database: Path) -> tuple[Path, int]:
    """A daemon config (switch down, as in test_jobs_crash) with its database at `database`."""
    api_port = free_port()
    cfg = write_config(tmp_path, api_port, free_port())
    cfg.write_text(cfg.read_text().replace('database = "jobs.db"', f'database = "{database}"'))
    return cfg, api_port


def test_read_only_database_refuses_to_start_and_keeps_everything(tmp_path, small_fs):
    """A filesystem cannot be remounted read-only under an open database (the kernel refuses
    while a writer is open), so the fault is met where it shows: at the controller's start."""
    cfg, api_port = daemon_on(tmp_path, small_fs / "jobs.db")
    stub = pb_grpc.JobServiceStub(grpc.insecure_channel(f"127.0.0.1:{api_port}"))
    with open(tmp_path / "daemon.log", "ab") as log:
        proc = start_daemon(cfg, log)
        wait_api(stub, proc)
        acked = {f"key-{i}": (allocate(stub, i).job.job_id, "active") for i in range(2)}
        proc.terminate()
        proc.wait(10)
    before = (small_fs / "jobs.db").read_bytes()
    mount("-o", "remount,ro", str(small_fs))
    try:
        out = subprocess.run(
            [sys.executable, "-m", "symphony.daemon", "--config", str(cfg)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 1, out.stderr
        assert "job database" in out.stderr and "Read-only file system" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
        assert (small_fs / "jobs.db").read_bytes() == before
    finally:
        mount("-o", "remount,rw", str(small_fs))
    # Writable again: everything acknowledged is there and the controller goes on.
    with open(tmp_path / "daemon.log", "ab") as log:
        proc = start_daemon(cfg, log)
        try:
            wait_api(stub, proc)
            acked["key-2"] = (allocate(stub, 2).job.job_id, "active")
        finally:
            proc.terminate()
            proc.wait(10)
    assert rows(small_fs / "jobs.db") == acked


def test_disk_full_refuses_writes_and_keeps_everything(api):
    stub, _, fs = api
    acked = {}
    for i in range(3):
        r = allocate(stub, i)
        acked[f"key-{i}"] = (r.job.job_id, "active")
    # Fill the filesystem.
    with open(fs / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass
    refused = 0
    for i in range(3, 400):  # until the store cannot grow (free pages first)
        try:
            r = allocate(stub, i)
            acked[f"key-{i}"] = (r.job.job_id, "active")
        except grpc.RpcError as err:
            assert_store_error(err)
            assert "full" in err.details(), err.details()
            refused = i
            break
    assert refused, "the store never ran out of space"
    (fs / "filler").unlink()
    # Space again: the controller goes on; every acknowledged job is there, the refused one not.
    r = allocate(stub, refused)
    acked[f"key-{refused}"] = (r.job.job_id, "active")
    assert rows(fs / "jobs.db") == acked
    assert len({j for j, _ in acked.values()}) == len(acked)


def test_second_controller_on_the_same_database_is_refused(tmp_path):
    api_port, metrics_port = free_port(), free_port()
    cfg = write_config(tmp_path, api_port, metrics_port)
    with open(tmp_path / "first.log", "wb") as log:
        first = start_daemon(cfg, log)
    try:
        stub = pb_grpc.JobServiceStub(grpc.insecure_channel(f"127.0.0.1:{api_port}"))
        wait_api(stub, first)
        allocate(stub, 0)
        # The second one: same config file and database, its own API and metrics ports.
        second_cfg = tmp_path / "second.toml"
        second_cfg.write_text(
            cfg.read_text()
            .replace(f":{api_port}", f":{free_port()}")
            .replace(f":{metrics_port}", f":{free_port()}")
        )
        out = subprocess.run(
            [sys.executable, "-m", "symphony.daemon", "--config", str(second_cfg)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode != 0
        assert "another controller" in out.stderr, out.stderr
        # The first keeps running and answering.
        time.sleep(0.2)
        assert first.poll() is None
        allocate(stub, 1)
        names = [j.name for j in stub.List(pb.ListRequest(), timeout=10).jobs]
        assert names == ["job-0", "job-1"]
    finally:
        first.terminate()
        first.wait(10)
