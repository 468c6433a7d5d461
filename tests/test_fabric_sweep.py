"""Sweeps (evaluation/fabric/sweep.py): a 2-worker Dask LocalCluster gives the process pool's
runs.csv; a worker killed mid-sweep still leaves every run stored exactly once; a driver killed
mid-sweep is resumed by running only what its store lacks. Waits are bounded, nothing is timed."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from evaluation.fabric.__main__ import main
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.rows import FIELDS
from evaluation.fabric.scenarios import Run
from evaluation.fabric.sweep import STORE_NAME, Result, RunStore, run_key, run_sweep

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ["--quick", "--scenario", "ecmp", "--scenario", "2d", "--seeds", "2", "--no-plots"]
COMPARED = [f for f in FIELDS if f != "wall_s"]  # where a run ran shows only in its wall time
WAIT_S = 120.0


@pytest.fixture(scope="module")
def cluster() -> LocalCluster:
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        yield c


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return [{k: r[k] for k in COMPARED} for r in csv.DictReader(fh)]


def _lines(path: Path) -> list[str]:
    """The store's complete lines (a driver killed mid-write leaves a torn last one)."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            json.loads(line)
        except json.JSONDecodeError:
            continue
        out.append(line)
    return out


def test_cluster_sweep_gives_the_process_pool_runs_csv(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    main([*SWEEP, "--jobs", "2", "--out", str(tmp_path / "pool")])
    main([*SWEEP, "--cluster", cluster.scheduler_address, "--out", str(tmp_path / "dask")])
    pool, dask = _csv(tmp_path / "pool" / "runs.csv"), _csv(tmp_path / "dask" / "runs.csv")
    assert len(pool) == 12 and pool == dask


def _slow_runs() -> list[Run]:
    cfg = FabricConfig(hosts=16, chunk_bytes=64 << 10, passes=8)
    return [
        Run("kill", m, "", replace(cfg, mode=m), s)
        for m in ("baseline", "symphony")
        for s in range(4)
    ]


def test_a_killed_worker_loses_no_run_and_doubles_none(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    runs = _slow_runs()
    local = RunStore(tmp_path / "local.jsonl")
    want = {r.key: r.row for r in run_sweep(runs, local, workers=2, progress=False)}
    local.close()
    killed: list[int] = []
    with Client(cluster.scheduler_address) as ctl:

        def kill_a_busy_worker(_: Result) -> None:
            if killed:
                return
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                busy = [w for w, keys in ctl.processing().items() if keys]
                if busy:
                    pid = ctl.run(os.getpid, workers=busy[:1])[busy[0]]
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
                time.sleep(0.01)

        store = RunStore(tmp_path / STORE_NAME)
        got = run_sweep(
            runs,
            store,
            cluster=cluster.scheduler_address,
            on_result=kill_a_busy_worker,
            progress=False,
        )
        store.close()
        ctl.wait_for_workers(2, timeout=WAIT_S)  # the nanny restarts it for the next test
    assert killed, "no worker was busy after the first result"
    keys = [json.loads(line)["key"] for line in _lines(tmp_path / STORE_NAME)]
    assert sorted(keys) == sorted({run_key(r) for r in runs})  # each run once
    drop = "wall_s"
    assert [{k: v for k, v in r.row.items() if k != drop} for r in got] == [
        {k: v for k, v in want[run_key(r)].items() if k != drop} for r in runs
    ]


def test_a_killed_driver_resumes_with_what_is_missing(tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "evaluation.fabric", "--quick", "--scenario", "ecmp",
        "--seeds", "6", "--passes", "40", "--jobs", "1", "--no-plots", "--out", str(tmp_path),
    ]  # fmt: skip
    store = tmp_path / STORE_NAME
    # its own process group, so that the kill takes its pool's worker too (as a crash of the
    # driver's machine would) and leaves no orphan computing after the test
    first = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + WAIT_S
    while len(_lines(store)) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=WAIT_S)
    before = _lines(store)
    total = 18
    assert 2 <= len(before) < total, "the driver was not killed mid-sweep"
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    assert f"{total} runs ({total - len(before)} run now" in done.stdout
    after = _lines(store)
    assert after[: len(before)] == before  # the finished runs were not run again
    keys = [json.loads(line)["key"] for line in after]
    assert len(keys) == len(set(keys)) == total
    assert len(_csv(tmp_path / "runs.csv")) == total


def test_a_store_of_another_kernel_version_is_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runs.jsonl written by a kernel that gave other runs (an older RESULTS_VERSION) is not
    read back as this kernel's results."""
    import evaluation.fabric.sweep as sweep

    run = Run("s", "baseline", "", FabricConfig(hosts=8), 0)
    store = RunStore(tmp_path / STORE_NAME)
    store.add(Result(run_key(run), {"cct_us": 1.0}, None))
    store.close()
    monkeypatch.setattr(sweep, "RESULTS_VERSION", sweep.RESULTS_VERSION + 1)
    assert run_key(run) not in RunStore(tmp_path / STORE_NAME)


def test_the_local_cluster_never_takes_a_busy_worker_for_dead() -> None:
    """A run holds the GIL for its whole length; the scheduler must not time its worker out."""
    from evaluation.fabric.sweep import local_cluster

    with local_cluster(1) as address, Client(address) as client:
        assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.worker_ttl) is None
