"""The leader lease of replicated controllers: one row in PostgreSQL (migration 2).

A replica leads while it holds the lease: ``holder`` is its name, ``epoch`` counts the
takeovers (each one adds 1, so a later leader always has a higher epoch), ``expires_at`` is
renewed by the leader every ``ttl / 3``. Times are the database's clock (``now()``), so the
replicas' clocks never have to agree.

A follower takes the lease when it has expired (the leader stopped renewing: paused, cut off)
or at once when the leader's lease connection is gone from ``pg_stat_activity`` (its process
died, so the kernel closed the socket and PostgreSQL ended the session): a SIGKILLed leader is
replaced within one poll, not one TTL. The backend's start time guards against a reused pid.
All replicas connect as the same role, which may see each other's sessions.

The leader also keeps a local deadline (`Held.valid_until`, monotonic clock): a lease renewed
at local time t lasts at least until t + ttl on the database (its ``now()`` was later than t),
so a leader that has not renewed by then (less a margin, LOCAL_SHARE) stops writing before
anyone can take over, even when it cannot reach the database to find out (a SIGSTOPped process
resumes past its deadline).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psycopg

from symphony.jobs.errors import StoreError
from symphony.jobs.pg_store import connect

# The share of the TTL a leader trusts its lease for, locally: the rest absorbs the two clocks'
# drift and the time between the gate's check and the write it lets through.
LOCAL_SHARE = 0.9

# A live lease connection: the same pid *and* start time (a pid may be reused by PostgreSQL).
_HOLDER_ALIVE = (
    "EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = leader_lease.holder_pid"
    " AND a.backend_start = leader_lease.holder_backend_start)"
)


@dataclass(frozen=True)
class LeaderInfo:
    epoch: int
    holder: str
    address: str
    live: bool  # unexpired and its connection alive


@dataclass(frozen=True)
class Held:
    epoch: int
    # time.monotonic() until which this replica may act as the leader without renewing.
    valid_until: float


class Lease:
    """The lease operations of one replica, on a connection of their own (its backend is the
    one followers watch)."""

    def __init__(self, url: str, name: str, address: str, ttl_s: float) -> None:
        self.url = url
        self.name = name
        self.address = address
        self.ttl_s = ttl_s
        self._conn: psycopg.Connection[Any] | None = None

    def _db(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = connect(self.url, f"symphony-lease:{self.name}")
        return self._conn

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        try:
            return self._db().execute(sql, params).fetchone()
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL (lease): {str(exc).strip()}") from exc

    def try_acquire(self) -> Held | None:
        """Take the lease if it is free (expired, or its holder's session gone): a new epoch."""
        t0 = time.monotonic()
        row = self._one(
            "UPDATE leader_lease SET epoch = epoch + 1, holder = %s, address = %s,"
            " holder_pid = pg_backend_pid(),"
            " holder_backend_start = (SELECT backend_start FROM pg_stat_activity"
            "   WHERE pid = pg_backend_pid()),"
            " expires_at = now() + make_interval(secs => %s)"
            f" WHERE id = 1 AND (expires_at < now() OR NOT {_HOLDER_ALIVE})"
            " RETURNING epoch",
            (self.name, self.address, self.ttl_s),
        )
        return None if row is None else Held(row[0], t0 + self.ttl_s * LOCAL_SHARE)

    def renew(self, held: Held) -> Held | None:
        """Extend our lease; None when it is no longer ours (a follower took it)."""
        t0 = time.monotonic()
        row = self._one(
            "UPDATE leader_lease SET expires_at = now() + make_interval(secs => %s),"
            " address = %s WHERE id = 1 AND epoch = %s AND holder = %s RETURNING epoch",
            (self.ttl_s, self.address, held.epoch, self.name),
        )
        return None if row is None else Held(held.epoch, t0 + self.ttl_s * LOCAL_SHARE)

    def release(self, held: Held) -> None:
        """Give the lease up (a clean stop): a follower may take it at its next poll."""
        self._one(
            "UPDATE leader_lease SET expires_at = '-infinity'"
            " WHERE id = 1 AND epoch = %s AND holder = %s RETURNING epoch",
            (held.epoch, self.name),
        )

    def leader(self) -> LeaderInfo:
        row = self._one(
            "SELECT epoch, holder, address,"
            f" (expires_at > now() AND {_HOLDER_ALIVE}) AS live FROM leader_lease WHERE id = 1"
        )
        return LeaderInfo(row[0], row[1], row[2], bool(row[3]))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
