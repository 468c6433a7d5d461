"""A sweep: every run of a list as one task, on a local process pool (the default, no service) or
on a Dask distributed cluster (`cluster=` a scheduler address), each result stored the moment it
arrives in a JSON-lines file beside runs.csv (`RunStore`), keyed by (scenario, variant, param,
seed, config hash, the kernel's RESULTS_VERSION). A restarted sweep runs only the keys the store
lacks; a run whose worker was lost is resubmitted by Dask's scheduler, and the store keeps the
first result of a key, so no run counts twice. A run's result is a function of (config, seed)
and the kernel's version alone: where it ran shows only in wall_s.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as pool_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from evaluation.fabric.kernel import RESULTS_VERSION
from evaluation.fabric.rows import keeps_series, row
from evaluation.fabric.scenarios import Run
from evaluation.fabric.sim import simulate

STORE_NAME = "runs.jsonl"


def config_hash(run: Run) -> str:
    """A digest of everything the run's configuration says (nested dataclasses included)."""
    text = json.dumps(asdict(run.cfg), sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_key(run: Run) -> str:
    """The store's key: a run of another kernel version (one that gave other runs) is not it."""
    return "|".join(
        (
            run.scenario,
            run.variant,
            run.param,
            str(run.seed),
            config_hash(run),
            f"v{RESULTS_VERSION}",
        )
    )


@dataclass(frozen=True)
class Result:
    key: str
    row: dict[str, Any]  # the runs.csv line
    series: dict[str, Any] | None  # overlap, rx_gbps, sample_us (keeps_series runs only)


def execute(run: Run) -> Result:
    """One run, anywhere (a pool process or a cluster worker)."""
    res = simulate(run.cfg, run.seed)
    series = None
    if keeps_series(run):
        series = {
            "overlap": res.overlap_series.tolist(),
            "rx_gbps": res.rx_gbps_series.tolist(),
            "sample_us": res.sample_us,
        }
    return Result(run_key(run), row(run, res), series)


class RunStore:
    """Results as JSON lines, appended and flushed to disk one by one, so that a driver killed
    at any moment loses at most the line it was writing (a torn last line is ignored)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.results = self.read(path)
        self._fh = open(path, "a")  # noqa: SIM115 (held for the sweep, closed by close())
        if self._fh.tell() and not path.read_text().endswith("\n"):
            self._fh.write("\n")  # start after a torn line, never inside it

    @staticmethod
    def read(path: Path) -> dict[str, Result]:
        """A store's results, the file left as it is (a sweep may be appending to it)."""
        results: dict[str, Result] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    d = json.loads(line)
                except json.JSONDecodeError:
                    continue  # the line a killed driver was writing
                results.setdefault(d["key"], Result(d["key"], d["row"], d.get("series")))
        return results

    def __contains__(self, key: str) -> bool:
        return key in self.results

    def add(self, r: Result) -> bool:
        """Store a result; False (and nothing written) if its key is stored already."""
        if r.key in self.results:
            return False
        self.results[r.key] = r
        self._fh.write(json.dumps({"key": r.key, "row": r.row, "series": r.series}) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        return True

    def close(self) -> None:
        self._fh.close()


# a sweep's task kinds: the scenarios' runs (`Run`, `execute`, `run_key`) by default;
# training iterations bring their own (`training_eval.py`)
Execute = Callable[[Any], Result]
Key = Callable[[Any], str]


def _local(runs: list[Any], workers: int, fn: Execute = execute) -> Iterator[Result]:
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fn, r) for r in runs]
        for fut in pool_completed(futures):
            yield fut.result()


# A run holds the GIL for its whole length (the numba kernel), so its worker answers no
# heartbeat meanwhile; the scheduler's default `worker-ttl` (5 minutes) then takes a 128-node
# run for a dead worker, kills it and reschedules the run (seen: a worker unresponsive for 306 s,
# killed). Releasing the GIL in the kernel would be the deeper fix; until then, runs of any
# length need the TTL off: here for a LocalCluster, and for a scheduler started
# by hand, DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL=None in its environment (docs/evaluation.md).
NO_WORKER_TTL = {"distributed.scheduler.worker-ttl": None}


@contextmanager
def local_cluster(workers: int) -> Iterator[str]:
    """A Dask LocalCluster of `workers` single-threaded processes; yields its address."""
    import dask
    from distributed import LocalCluster

    with (
        dask.config.set(NO_WORKER_TTL),
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as lc,
    ):
        yield lc.scheduler_address


def _dask(
    runs: list[Any], address: str, fn: Execute = execute, key: Key = run_key
) -> Iterator[Result]:
    from distributed import Client, as_completed

    with Client(address) as client:
        # The run key names the task: resubmitting a key already on the cluster is a no-op.
        futures = [client.submit(fn, r, key=f"fabric-run-{key(r)}") for r in runs]
        for fut in as_completed(futures):
            yield fut.result()
            fut.release()


def run_sweep(
    runs: Iterable[Any],
    store: RunStore,
    workers: int = 1,
    cluster: str | None = None,
    on_result: Callable[[Result], None] | None = None,
    progress: bool = True,
    fn: Execute = execute,
    key: Key = run_key,
) -> list[Result]:
    """Run what the store lacks; return every run's result in the order of `runs`. `fn` runs
    one task anywhere and `key` names its result (the scenarios' runs by default)."""
    runs = list(runs)
    keys = [key(r) for r in runs]
    todo, queued = [], set()
    for r, k in zip(runs, keys, strict=True):
        if k not in store and k not in queued:
            todo.append(r)
            queued.add(k)
    bar = tqdm(
        total=len(set(keys)),
        initial=len(set(keys)) - len(todo),
        desc="runs",
        unit="run",
        disable=not progress,
    )
    if todo:
        results = _dask(todo, cluster, fn, key) if cluster else _local(todo, workers, fn)
        for res in results:
            if store.add(res):
                bar.update(1)
            if on_result is not None:
                on_result(res)
    bar.close()
    return [store.results[k] for k in keys]


def series_arrays(results: Iterable[tuple[Run, Result]]) -> dict[str, np.ndarray]:
    """series.npz's arrays: `scenario/variant/name` of every run that kept its series."""
    out: dict[str, np.ndarray] = {}
    for run, res in results:
        if res.series is not None:
            for name, value in res.series.items():
                out[f"{run.scenario}/{run.variant}/{name}"] = np.asarray(value)
    return out
