"""The desired state: jobs, their Job_IDs, parameters. Survives kill -9 at any point.

`BaseJobStore` holds the store's logic once; `JobStore` is the embedded SQLite default (one
controller per file) and `symphony.jobs.pg_store.PgJobStore` the PostgreSQL store that several
controller replicas share (docs/operations.md). Both run the same SQL apart from a dialect hook
or two, the same numbered schema (jobs/migrations.py) and the same transactions.

Why this is crash safe (SQLite; PostgreSQL commits durably by default):
- WAL journal with ``synchronous=FULL``: a commit is durable once ``commit()`` returns, and a
  crash mid-transaction leaves the database as it was before the transaction.
- Every state change is one transaction (``BEGIN IMMEDIATE`` takes the write lock first, so the
  read of the used IDs and the insert of the new one cannot interleave with another writer).
- The API answers only after the commit, so an ID a caller has seen is on disk.
- The database itself refuses a second live row with the same Job_ID (partial unique index), so
  even a logic bug cannot hand one ID to two live jobs.

A job's life: ``active`` -> (Release) ``releasing`` with ``pending`` = its switches -> each
switch that has deleted its entries and zeroed its registers is removed from ``pending`` ->
``released`` when none is left. Only then is its Job_ID free. Released rows are kept so that a
retried Allocate with the same request key still gets the same answer.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symphony.jobs import allocator, migrations
from symphony.jobs.errors import JobError, Kind

CURSOR_KEY = "allocator.cursor"
PARAMS_KEY = "params"


@dataclass(frozen=True)
class Job:
    uid: int
    job_id: int
    request_key: str
    name: str
    mode: str
    hosts: tuple[str, ...]
    switches: tuple[str, ...]
    params: Mapping[str, Any]
    state: str
    pending: tuple[str, ...]
    created_at: float
    released_at: float | None

    @property
    def live(self) -> bool:
        return self.state != "released"


def canonical_request(
    name: str, mode: str, hosts: Iterable[str], switches: Iterable[str], params: Mapping[str, Any]
) -> str:
    return json.dumps(
        {
            "name": name,
            "mode": mode,
            "hosts": sorted(hosts),
            "switches": list(switches),
            "params": dict(params),
        },
        sort_keys=True,
    )


class BaseJobStore:
    """The store's operations over a DB-API-like connection ``_db`` whose rows are addressable
    by column name and position; a subclass opens it and provides ``_tx`` (one write
    transaction) and the dialect's host-list lookup."""

    # SQL that selects the rows of live_hosts whose host is in a list parameter (_hosts_param).
    _HOSTS_IN: str
    _db: Any

    def __init__(self) -> None:
        # Job_ID -> (name, switches) of every active job, for active_labels(): read from the
        # table once (16k rows take 10 ms of the event loop), then kept up to date by allocate
        # and release, the only writes that make a job active or not. They stage their change
        # (None: no longer active) and _tx applies it once the transaction has committed.
        self._active: dict[int, tuple[str, tuple[str, ...]]] | None = None
        self._staged: dict[int, tuple[str, tuple[str, ...]] | None] = {}

    def close(self) -> None:
        self._db.close()

    def invalidate(self) -> None:
        """Forget what is cached from the table (the labels): another process may have written
        since (a replica that was a follower, now the leader)."""
        self._active = None

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    @staticmethod
    def _hosts_param(hosts: list[str]) -> Any:
        raise NotImplementedError

    def _committed(self) -> None:
        """Apply the staged label changes of a transaction that has just committed."""
        if self._active is not None:
            for job_id, label in self._staged.items():
                if label is None:
                    self._active.pop(job_id, None)
                else:
                    self._active[job_id] = label

    # ---- reads -------------------------------------------------------------------------------

    def get(self, job_id: int) -> Job | None:
        """The live job holding ``job_id``, if any."""
        row = self._db.execute(
            "SELECT * FROM jobs WHERE job_id = ? AND state != 'released'", (job_id,)
        ).fetchone()
        return _job(row) if row else None

    def by_uid(self, uid: int) -> Job | None:
        row = self._db.execute("SELECT * FROM jobs WHERE uid = ?", (uid,)).fetchone()
        return _job(row) if row else None

    def get_by_name(self, name: str) -> Job | None:
        row = self._db.execute(
            "SELECT * FROM jobs WHERE name = ? AND state != 'released'", (name,)
        ).fetchone()
        return _job(row) if row else None

    def get_by_key(self, request_key: str) -> Job | None:
        row = self._db.execute(
            "SELECT * FROM jobs WHERE request_key = ?", (request_key,)
        ).fetchone()
        return _job(row) if row else None

    def list(self, include_released: bool = False) -> list[Job]:
        sql = "SELECT * FROM jobs"
        if not include_released:
            sql += " WHERE state != 'released'"
        return [_job(r) for r in self._db.execute(sql + " ORDER BY job_id, uid")]

    def active_labels(self) -> builtins.list[tuple[int, str, tuple[str, ...]]]:
        """(Job_ID, name, switches) of every active job, by Job_ID: what telemetry labels its
        series with."""
        if self._active is None:
            rows = self._db.execute(
                "SELECT job_id, name, switches FROM jobs WHERE state = 'active'"
            )
            paths: dict[str, tuple[str, ...]] = {}  # most jobs share a path: decode each once
            self._active = {}
            for job_id, name, switches in rows:
                path = paths.get(switches)
                if path is None:
                    path = paths[switches] = tuple(json.loads(switches))
                self._active[job_id] = (name, path)
        return [(job_id, *label) for job_id, label in sorted(self._active.items())]

    def count_by_state(self) -> dict[str, int]:
        """Live jobs per state."""
        rows = self._db.execute(
            "SELECT state, COUNT(*) FROM jobs WHERE state != 'released' GROUP BY state"
        )
        return {r[0]: r[1] for r in rows}

    def global_params(self) -> dict[str, Any]:
        row = self._db.execute("SELECT value FROM globals WHERE key = ?", (PARAMS_KEY,)).fetchone()
        return json.loads(row[0]) if row else {}

    # ---- writes ------------------------------------------------------------------------------

    def allocate(
        self,
        request_key: str,
        name: str,
        mode: str,
        hosts: Iterable[str],
        switches: Iterable[str],
        params: Mapping[str, Any],
    ) -> tuple[Job, bool]:
        """Create a job, or return the one this request key already made: (job, created)."""
        hosts = tuple(hosts)
        switches = tuple(switches)
        request = canonical_request(name, mode, hosts, switches, params)
        with self._tx() as db:
            row = db.execute("SELECT * FROM jobs WHERE request_key = ?", (request_key,)).fetchone()
            if row is not None:
                if row["request"] != request:
                    raise JobError(
                        Kind.CONFLICT,
                        "request_key",
                        f"{request_key!r} was used for a different request (job "
                        f"{row['job_id']} {row['name']!r})",
                    )
                return _job(row), False
            # Indexed lookups only: the cost of an allocation does not grow with the live jobs.
            same_name = db.execute(
                "SELECT job_id FROM jobs WHERE name = ? AND state != 'released'", (name,)
            ).fetchone()
            if same_name is not None:
                raise JobError(
                    Kind.CONFLICT, "name", f"job {same_name[0]} is already named {name!r}"
                )
            if mode == "hosts" and hosts:
                # hosts mode: a source address can belong to one job only (job_by_src is exact).
                clash = db.execute(
                    "SELECT l.host, j.job_id FROM live_hosts l JOIN jobs j USING (uid)"
                    f" WHERE {self._HOSTS_IN} ORDER BY l.host",
                    (self._hosts_param(list(hosts)),),
                ).fetchall()
                if clash:
                    owner = clash[0][1]
                    mine = sorted(h for h, j in clash if j == owner)
                    raise JobError(
                        Kind.CONFLICT, "hosts", f"{_some(mine)} already belong to job {owner}"
                    )
            cursor = self._global(db, CURSOR_KEY, 0)
            job_id = allocator.search(lambda lo, hi: _first_free(db, lo, hi), mode, cursor)
            if job_id is None:
                raise JobError(
                    Kind.EXHAUSTED, "", f"every Job_ID a {mode}-mode job can use is taken"
                )
            now = time.time()
            uid = db.execute(
                "INSERT INTO jobs (job_id, request_key, request, name, mode, hosts, switches,"
                " params, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', ?)"
                " RETURNING uid",
                (
                    job_id,
                    request_key,
                    request,
                    name,
                    mode,
                    json.dumps(list(hosts)),
                    json.dumps(list(switches)),
                    json.dumps(dict(params), sort_keys=True),
                    now,
                ),
            ).fetchone()[0]
            if mode == "hosts":
                db.executemany(
                    "INSERT INTO live_hosts (host, uid) VALUES (?, ?)", [(h, uid) for h in hosts]
                )
            self._set_global(db, CURSOR_KEY, job_id)
            self._staged[job_id] = (name, switches)
            row = db.execute("SELECT * FROM jobs WHERE uid = ?", (uid,)).fetchone()
            return _job(row), True

    def release(self, job_id: int) -> Job:
        """Start releasing a live job (idempotent for one that is already releasing)."""
        with self._tx() as db:
            row = db.execute(
                "SELECT * FROM jobs WHERE job_id = ? AND state != 'released'", (job_id,)
            ).fetchone()
            if row is None:
                raise JobError(Kind.NOT_FOUND, "job_id", f"no live job {job_id}")
            if row["state"] == "active":
                db.execute(
                    "UPDATE jobs SET state = 'releasing', pending = switches WHERE uid = ?",
                    (row["uid"],),
                )
                self._staged[job_id] = None
                row = db.execute("SELECT * FROM jobs WHERE uid = ?", (row["uid"],)).fetchone()
            return _job(row)

    def mark_cleared(self, uid: int, switch: str) -> Job:
        """``switch`` holds nothing of releasing job ``uid`` any more; free the ID when it was the
        last one."""
        with self._tx() as db:
            row = db.execute("SELECT * FROM jobs WHERE uid = ?", (uid,)).fetchone()
            if row is None:
                raise JobError(Kind.NOT_FOUND, "uid", f"no job row {uid}")
            if row["state"] != "releasing":
                return _job(row)
            pending = [s for s in json.loads(row["pending"]) if s != switch]
            if pending:
                db.execute("UPDATE jobs SET pending = ? WHERE uid = ?", (json.dumps(pending), uid))
            else:
                db.execute(
                    "UPDATE jobs SET pending = '[]', state = 'released', released_at = ?"
                    " WHERE uid = ?",
                    (time.time(), uid),
                )
                db.execute("DELETE FROM live_hosts WHERE uid = ?", (uid,))
            return _job(db.execute("SELECT * FROM jobs WHERE uid = ?", (uid,)).fetchone())

    def set_job_params(self, job_id: int, overrides: Mapping[str, Any]) -> Job:
        with self._tx() as db:
            row = db.execute(
                "SELECT * FROM jobs WHERE job_id = ? AND state = 'active'", (job_id,)
            ).fetchone()
            if row is None:
                raise JobError(Kind.NOT_FOUND, "job_id", f"no active job {job_id}")
            params = {**json.loads(row["params"]), **overrides}
            db.execute(
                "UPDATE jobs SET params = ? WHERE uid = ?",
                (json.dumps(params, sort_keys=True), row["uid"]),
            )
            return _job(db.execute("SELECT * FROM jobs WHERE uid = ?", (row["uid"],)).fetchone())

    def set_global_params(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        with self._tx() as db:
            params = {**self._global(db, PARAMS_KEY, {}), **overrides}
            self._set_global(db, PARAMS_KEY, params)
            return params

    @staticmethod
    def _global(db: Any, key: str, default: Any) -> Any:
        row = db.execute("SELECT value FROM globals WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    @staticmethod
    def _set_global(db: Any, key: str, value: Any) -> None:
        db.execute(
            "INSERT INTO globals (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value, sort_keys=True)),
        )


class JobStore(BaseJobStore):
    """The embedded store: one SQLite file, one controller (db_lock.py)."""

    _HOSTS_IN = "l.host IN (SELECT value FROM json_each(?))"

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, so nothing commits implicitly.
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=5000")
        with self._tx() as db:
            db.execute(migrations.VERSION_TABLE.format(real="REAL"))
            row = db.execute("SELECT MAX(version) AS v FROM schema_version").fetchone()
            for m in migrations.pending(row["v"] or 0):
                for statement in m.statements("sqlite"):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO schema_version (version, what, applied_at) VALUES (?, ?, ?)",
                    (m.version, m.what, time.time()),
                )
            # live_hosts is derived: rebuild it, so a database from before it existed (or one
            # whose copy was lost) gets it too. One controller owns the file, so it may.
            db.execute("DELETE FROM live_hosts")
            db.execute(
                "INSERT OR IGNORE INTO live_hosts (host, uid) SELECT h.value, j.uid"
                " FROM jobs j, json_each(j.hosts) h"
                " WHERE j.state != 'released' AND j.mode = 'hosts'"
            )

    @staticmethod
    def _hosts_param(hosts: list[str]) -> Any:
        # One JSON parameter, not one per host: a job may list thousands.
        return json.dumps(hosts)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        self._staged.clear()
        try:
            yield self._db
            self._db.execute("COMMIT")
        except BaseException:
            # A failed COMMIT (disk full, I/O error) can leave the transaction open: roll it back
            # so that the connection is usable again and nothing of it is kept.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._committed()


def _first_free(db: Any, lo: int, hi: int) -> int | None:
    """The lowest Job_ID in lo..hi that no live job holds, or None: bisection on counts of the
    live_job_id index (counted inside SQLite), so an allocation costs about a millisecond even
    when the range is all but full, instead of listing every live ID."""

    def used(a: int, b: int) -> int:
        return int(
            db.execute(
                "SELECT COUNT(*) FROM jobs WHERE state != 'released' AND job_id BETWEEN ? AND ?",
                (a, b),
            ).fetchone()[0]
        )

    if lo > hi or used(lo, hi) == hi - lo + 1:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if used(lo, mid) < mid - lo + 1:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _some(items: list[str], shown: int = 8) -> str:
    """A few of a long list for an error message: gRPC carries the message in a header, and a
    4,096-host clash spelled out (55 KB) broke the reply (the caller got RESOURCE_EXHAUSTED)."""
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def _job(row: Any) -> Job:
    return Job(
        uid=row["uid"],
        job_id=row["job_id"],
        request_key=row["request_key"],
        name=row["name"],
        mode=row["mode"],
        hosts=tuple(json.loads(row["hosts"])),
        switches=tuple(json.loads(row["switches"])),
        params=json.loads(row["params"]),
        state=row["state"],
        pending=tuple(json.loads(row["pending"])),
        created_at=row["created_at"],
        released_at=row["released_at"],
    )
