"""The replicated controller under chaos: concurrent clients allocate and release while the
leader is SIGKILLed at random points; afterwards nothing acknowledged may be lost or doubled,
and after each failover the switch must hold exactly what the store says.

Used by tests/integration/test_replicas_bmv2.py (short) and bench/failover_bench.py (long,
with the failover times). Each client thread runs its own `symphony.client.Client` over every
replica's address, with request keys ``<client>-<n>`` and job names ``c<client>-<n>``; it
releases its oldest job once it holds a few, by name (a retry of a release that landed gets
NOT_FOUND, which `missing_ok` turns into success).

What is checked (`ChaosResult.problems` lists every violation):

- every acknowledged allocation is in the store under its request key with the acknowledged
  Job_ID (0 lost); every acknowledged release left its job releasing or released;
- no two live jobs share a Job_ID (0 duplicates), and every request key made exactly one job
  (the store's unique key, read back: one row per key, none unacknowledged and doubled);
- after each failover, with the clients paused and the new leader settled, the job entries on
  the switch equal those derived from the store (`switch_job_entries` vs `store_job_entries`).

Failover time = last reply from the old leader to the first reply from the new one, as the
clients saw them (`ChaosResult.failover_s`).
"""

from __future__ import annotations

import asyncio
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import finsy
from finsy.proto import p4r

from symphony.client import ApiError, Client, Retry
from symphony.config import Config
from symphony.jobs.pg_store import PgJobStore
from symphony.jobs.store import Job
from symphony.model import params as model_params
from symphony.sizes import TICK_NS
from symphony.switch import desired, entries, raw_read
from symphony_tools.replicas import ReplicaSet

# Rides out a failover: a few lease polls, a start, a reconnect and a reconciliation.
PATIENT = Retry(attempts=80, first_delay_s=0.05, max_delay_s=0.5)
HELD = 4  # jobs a client holds before it releases its oldest


@dataclass
class Ack:
    t: float
    replica: str  # the API address that answered


@dataclass
class ChaosResult:
    allocated: dict[str, int] = field(default_factory=dict)  # request key -> acked Job_ID
    released: set[str] = field(default_factory=set)  # names whose release was acked
    errors: list[str] = field(default_factory=list)  # client calls that failed for good
    failover_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    kills: int = 0
    acks: list[Ack] = field(default_factory=list)


def store_jobs(url: str) -> tuple[list[Job], dict[str, Any]]:
    """Every job row (released ones too) and the global parameters, read afresh."""
    store = PgJobStore(url, "symphony-chaos-check")
    try:
        return store.list(include_released=True), store.global_params()
    finally:
        store.close()


def store_job_entries(url: str, cfg: Config, switch: str, schema: Any) -> dict[Any, bytes]:
    """The job-table entries the store says ``switch`` must hold (as the session derives
    them), encoded."""
    jobs, global_params = store_jobs(url)
    tick = TICK_NS[cfg.switch(switch).target]
    out: dict[Any, bytes] = {}
    for job in jobs:
        if job.state != "active" or switch not in job.switches:
            continue
        params = model_params.effective(cfg.defaults, global_params, job.params)
        for spec in desired.job_entries(job, params.to_action_params(tick)):
            pb = entries.encode(spec, schema)
            out[entries.key_of(pb)] = pb.SerializeToString(deterministic=True)
    return out


async def _switch_job_entries(address: str, device_id: int) -> tuple[dict[Any, bytes], Any]:
    # A reader with a low election id: never the primary while a replica leads.
    opts = finsy.SwitchOptions(device_id=device_id, initial_election_id=1)
    async with finsy.Switch("chaos-reader", address, opts) as sw:
        schema = sw.p4info
        job_tables = {schema.tables[t].id for t in desired.JOB_TABLES}
        got = await raw_read.table_entries(sw, p4r.TableEntry())
        out = {
            entries.key_of(e): entries.strip_for_compare(e).SerializeToString(deterministic=True)
            for e in got
            if e.table_id in job_tables
        }
        return out, schema


def switch_job_entries(address: str, device_id: int) -> tuple[dict[Any, bytes], Any]:
    """The job-table entries on the switch, encoded, and its P4Info schema."""
    return asyncio.run(_switch_job_entries(address, device_id))


class Chaos:
    def __init__(
        self,
        replicas: ReplicaSet,
        url: str,
        *,
        clients: int = 8,
        allocations: int = 200,
        kills: int = 3,
        seed: int = 1,
        settled: Callable[[], list[str]] | None = None,
        hosts_share: float = 0.25,
    ) -> None:
        """``settled()`` returns the differences between the switches and the store ([] when
        they agree); called after each failover with the clients paused, until it is [] or a
        deadline passes."""
        self.replicas = replicas
        self.url = url
        self.clients = clients
        self.allocations = allocations
        self.kills = kills
        self.rng = random.Random(seed)
        self.settled = settled
        self.hosts_share = hosts_share
        self.result = ChaosResult()
        self._lock = threading.Lock()
        self._done = 0  # allocations acknowledged
        self._go = threading.Event()
        self._go.set()
        self._idle = threading.Semaphore(0)
        self._stop = threading.Event()

    # ---- the clients ---------------------------------------------------------------------------

    def _worker(self, w: int, count: int) -> None:
        held: list[str] = []
        with Client(self.replicas.addresses, retry=PATIENT, timeout_s=20) as c:
            for n in range(count):
                self._pause_point()
                key, name = f"{w}-{n}", f"c{w}-{n}"
                mode = "hosts" if self.rng.random() < self.hosts_share else "tag"
                hosts = [f"10.{100 + w}.{n // 250}.{n % 250 + 1}"] if mode == "hosts" else []
                try:
                    reply = c.allocate(key, name, switches=["s1"], mode=mode, hosts=hosts)
                    self._ack(c)
                    with self._lock:
                        self.result.allocated[key] = reply.job.job_id
                        self._done += 1
                    held.append(name)
                except ApiError as exc:
                    with self._lock:
                        self.result.errors.append(f"allocate {key}: {exc}")
                if len(held) > HELD:
                    self._pause_point()
                    old = held.pop(0)
                    try:
                        c.release(old, missing_ok=True)
                        self._ack(c)
                        with self._lock:
                            self.result.released.add(old)
                    except ApiError as exc:
                        with self._lock:
                            self.result.errors.append(f"release {old}: {exc}")

    def _ack(self, c: Client) -> None:
        with self._lock:
            self.result.acks.append(Ack(time.monotonic(), c.current))

    def _pause_point(self) -> None:
        if not self._go.is_set():
            self._idle.release()
            self._go.wait()

    def _pause_clients(self, running: list[threading.Thread]) -> None:
        """Stop the clients between two calls and wait until each one is there (or done)."""
        self._go.clear()
        waiting = 0
        while waiting < sum(t.is_alive() for t in running):
            if self._idle.acquire(timeout=0.2):
                waiting += 1

    # ---- the chaos ----------------------------------------------------------------------------

    def run(self) -> ChaosResult:
        per = [self.allocations // self.clients] * self.clients
        per[0] += self.allocations - sum(per)
        threads = [
            threading.Thread(target=self._worker, args=(w, n), daemon=True)
            for w, n in enumerate(per)
        ]
        # Kill points: spread over the run, each at a random point of its stretch.
        stretch = self.allocations / (self.kills + 1)
        points = sorted(
            int(stretch * (k + 1) + self.rng.uniform(-0.3, 0.3) * stretch)
            for k in range(self.kills)
        )
        self.replicas.leader()
        for t in threads:
            t.start()
        for point in points:
            while self._done < point and any(t.is_alive() for t in threads):
                time.sleep(0.01)
            if not any(t.is_alive() for t in threads):
                break
            self._kill_leader(threads)
        for t in threads:
            t.join()
        self._verify()
        return self.result

    def _kill_leader(self, threads: list[threading.Thread]) -> None:
        old = self.replicas.leader()
        # A random instant within the next few requests.
        time.sleep(self.rng.uniform(0.0, 0.05))
        t_kill = time.monotonic()
        old.signal(signal.SIGKILL)
        self.result.kills += 1
        new = self.replicas.leader(exclude=old)
        # The first reply from the new leader ends the failover.
        deadline = time.monotonic() + 120
        first_new = None
        while first_new is None and time.monotonic() < deadline:
            with self._lock:
                first_new = next(
                    (a.t for a in self.result.acks if a.t > t_kill and a.replica == new.api), None
                )
            if first_new is None:
                if not any(t.is_alive() for t in threads):
                    break
                time.sleep(0.01)
        with self._lock:
            last_old = max((a.t for a in self.result.acks if a.replica == old.api), default=t_kill)
        if first_new is not None:
            self.result.failover_s.append(first_new - last_old)
        self._pause_clients(threads)
        self._check_switch(f"after failover {self.result.kills} ({old.name} -> {new.name})")
        old.start()  # as systemd restarts it: back as a follower
        self._go.set()

    def _check_switch(self, when: str) -> None:
        if self.settled is None:
            return
        deadline = time.monotonic() + 60
        diff = self.settled()
        while diff and time.monotonic() < deadline:
            time.sleep(0.2)
            diff = self.settled()
        if diff:
            self.result.problems.append(f"{when}: switch differs from the store: {diff[:5]}")

    def _verify(self) -> None:
        r = self.result
        jobs, _ = store_jobs(self.url)
        by_key: dict[str, list[Any]] = {}
        for j in jobs:
            by_key.setdefault(j.request_key, []).append(j)
        for key, job_id in r.allocated.items():
            rows = by_key.get(key, [])
            if len(rows) != 1:
                r.problems.append(f"request key {key}: {len(rows)} jobs")
            elif rows[0].job_id != job_id:
                r.problems.append(f"request key {key}: acked Job_ID {job_id}, stored {rows[0]}")
        for key, rows in by_key.items():
            if len(rows) != 1:
                r.problems.append(f"request key {key}: {len(rows)} jobs")
        live: dict[int, str] = {}
        for j in jobs:
            if j.live:
                if j.job_id in live:
                    r.problems.append(f"Job_ID {j.job_id} held by {live[j.job_id]} and {j.name}")
                live[j.job_id] = j.name
        states = {j.name: j.state for j in jobs}
        for name in r.released:
            if states.get(name) not in ("releasing", "released"):
                r.problems.append(f"acked release of {name}, but it is {states.get(name)}")
        if self.settled is not None:
            self._check_switch("at the end")


def switch_settled(url: str, cfg: Config, address: str, device_id: int) -> Callable[[], list[str]]:
    """A `Chaos.settled` for one bmv2 switch named "s1": job entries on it vs the store."""

    def check() -> list[str]:
        try:
            have, schema = switch_job_entries(address, device_id)
        except Exception as exc:  # the switch busy with a new primary: not settled yet
            return [f"cannot read the switch: {exc}"]
        want = store_job_entries(url, cfg, "s1", schema)
        out = [f"missing {k}" for k in want.keys() - have.keys()]
        out += [f"stale {k}" for k in have.keys() - want.keys()]
        out += [f"differs {k}" for k in want.keys() & have.keys() if want[k] != have[k]]
        jobs, _ = store_jobs(url)
        out += [f"job {j.job_id} still releasing" for j in jobs if j.state == "releasing"]
        return out

    return check
