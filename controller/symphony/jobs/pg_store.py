"""The job store in PostgreSQL (psycopg 3), shared by the controller replicas.

The same operations, transactions and answers as the SQLite store (`BaseJobStore` holds them
once); what differs:

- **Fenced writes.** Every write transaction first locks the lease row (``SELECT ... FOR
  UPDATE``, jobs/lease.py) and goes on only while its epoch is the one this replica holds
  (`epoch`). A takeover updates that row, so it is ordered before or after each write: a deposed
  leader's transaction either committed before the new leader's epoch began (the new leader
  reads it when it reconciles) or is refused with NOT_LEADER, never interleaved. The lock also
  serialises the writers, as SQLite's ``BEGIN IMMEDIATE`` does.
- **A paused writer cannot hold the lock.** ``idle_in_transaction_session_timeout`` ends a
  transaction that waits on its client (the store's transactions never wait on anything but the
  database), so a leader frozen inside one (SIGSTOP, a VM pause) loses it and the lease row is
  free for the takeover.
- **Reads** are single autocommit statements, each on a fresh snapshot: a follower answers
  from what the leader committed.
- **Errors** become `StoreError` (UNAVAILABLE at the API). A connection that broke is replaced
  on the next call; a break during COMMIT says that the outcome is unknown (the request key
  makes the retry safe).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import RowMaker

from symphony.jobs import migrations
from symphony.jobs.errors import StoreError, not_leader
from symphony.jobs.store import BaseJobStore

LOG = logging.getLogger(__name__)

# How long a transaction may wait on its client before PostgreSQL ends it (see above); the
# store's transactions take milliseconds.
IDLE_IN_TX_MS = 1000
STATEMENT_TIMEOUT_MS = 10000
# Serialises replicas that apply migrations at the same time (any constant of our own).
MIGRATION_LOCK = 0x53594D50  # "SYMP"


def connect(url: str, application_name: str = "symphony") -> psycopg.Connection[Any]:
    """An autocommit connection with the store's session settings; StoreError if it fails.

    TCP keepalives and a user timeout make a dead database (or a cut network) an error within
    seconds instead of a call that hangs the controller's event loop."""
    try:
        conn = psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=5,
            application_name=application_name,
            keepalives=1,
            keepalives_idle=5,
            keepalives_interval=2,
            keepalives_count=2,
            tcp_user_timeout=10000,
            row_factory=_rows,
        )
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL: {_reason(exc)}") from exc
    conn.execute(f"SET idle_in_transaction_session_timeout = {IDLE_IN_TX_MS}")
    conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
    return conn


class Row(tuple):  # type: ignore[type-arg]
    """A result row addressable by position and by column name, as sqlite3.Row is (the shared
    store code uses both)."""

    _index: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)


def _rows(cursor: Any) -> RowMaker[Row]:
    index = {c.name: i for i, c in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        row = Row(values)
        row._index = index
        return row

    return make


def _reason(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class _Db:
    """The store's connection: the SQLite-style ``?`` placeholders of the shared SQL become
    psycopg's ``%s``, and a broken connection is replaced on the next call."""

    def __init__(self, url: str, application_name: str) -> None:
        self.url = url
        self.application_name = application_name
        self._conn: psycopg.Connection[Any] | None = None
        self._sql: dict[str, str] = {}

    def conn(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = connect(self.url, self.application_name)
        return self._conn

    def _pg(self, sql: str) -> str:
        got = self._sql.get(sql)
        if got is None:
            got = self._sql[sql] = sql.replace("?", "%s")
        return got

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        try:
            return self.conn().execute(self._pg(sql), params)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL: {_reason(exc)}") from exc

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            with self.conn().cursor() as cur:
                cur.executemany(self._pg(sql), list(rows))
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL: {_reason(exc)}") from exc

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class PgJobStore(BaseJobStore):
    """The shared store. Writes need the epoch of the lease this replica holds (`epoch`; None:
    a follower, whose writes are refused with NOT_LEADER before anything is written)."""

    _HOSTS_IN = "l.host = ANY(?)"

    def __init__(self, url: str, application_name: str = "symphony") -> None:
        super().__init__()
        self.url = url
        self.epoch: int | None = None
        self._db = _Db(url, application_name)
        self._migrate()

    @staticmethod
    def _hosts_param(hosts: list[str]) -> Any:
        return hosts

    def _migrate(self) -> None:
        """Apply the missing migrations, one replica at a time (an advisory lock), in one
        transaction (PostgreSQL's DDL is transactional)."""
        with self._plain_tx() as db:
            db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            db.execute(migrations.VERSION_TABLE.format(real="DOUBLE PRECISION"))
            row = db.execute("SELECT MAX(version) AS v FROM schema_version").fetchone()
            for m in migrations.pending((row["v"] if row else None) or 0):
                for statement in m.statements("postgres"):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO schema_version (version, what, applied_at)"
                    " VALUES (?, ?, extract(epoch FROM now()))",
                    (m.version, m.what),
                )
                LOG.info("job database: migration %d applied (%s)", m.version, m.what)

    @contextmanager
    def _plain_tx(self) -> Iterator[_Db]:
        """One transaction, committed when the block ends without an exception."""
        db = self._db
        db.execute("BEGIN")
        try:
            yield db
        except BaseException:
            with contextlib.suppress(Exception):
                conn = db.conn()
                if not conn.closed:
                    conn.execute("ROLLBACK")
            raise
        try:
            db.conn().execute("COMMIT")
        except psycopg.Error as exc:
            raise StoreError(
                f"PostgreSQL: {_reason(exc)} during COMMIT", outcome_unknown=True
            ) from exc

    @contextmanager
    def _tx(self) -> Iterator[_Db]:
        if self.epoch is None:
            raise not_leader("this replica does not hold the lease")
        self._staged.clear()
        with self._plain_tx() as db:
            row = db.execute(
                "SELECT epoch, holder, address FROM leader_lease WHERE id = 1 FOR UPDATE"
            ).fetchone()
            if row is None or row["epoch"] != self.epoch:
                raise not_leader(
                    f"epoch {self.epoch} has ended (replica {row['holder']!r} leads with epoch "
                    f"{row['epoch']})"
                    if row is not None
                    else "no lease row",
                    row["address"] if row is not None else "",
                )
            yield db
        self._committed()
