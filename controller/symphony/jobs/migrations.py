"""The job store's schema, as numbered migrations for both backends (SQLite and PostgreSQL).

A database records the migrations applied to it in ``schema_version``; opening it applies the
missing ones in order, in one transaction, so a controller upgrade changes the schema exactly
once and a crash half way leaves the old schema. A database whose version is higher than the
last one known here was written by a newer controller: opening it is refused (an older one
could misread what the newer one wrote) instead of guessing.

Each migration has the same meaning on both backends; only the SQL dialect differs. A step one
backend does not need (the leader lease: one SQLite controller owns its file, db_lock.py) is
empty there, so that a version number means the same schema everywhere.

A SQLite database from before this module (no ``schema_version``) is at version 0: migration 1
creates its tables only if they do not exist (``IF NOT EXISTS``), so it adopts such a database
as it is.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    what: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]

    def statements(self, dialect: str) -> tuple[str, ...]:
        return self.sqlite if dialect == "sqlite" else self.postgres


# The columns and constraints of a job row; the JSON columns are TEXT on both backends (the
# store encodes and decodes them itself, so both return the same Python values).
_JOBS_COLUMNS = """
    job_id       INTEGER NOT NULL CHECK (job_id BETWEEN 1 AND 16383),
    request_key  TEXT NOT NULL UNIQUE,
    request      TEXT NOT NULL,            -- canonical request, to detect a reused key
    name         TEXT NOT NULL,
    mode         TEXT NOT NULL CHECK (mode IN ('tag', 'hosts')),
    hosts        TEXT NOT NULL,            -- JSON list of IPv4 strings
    switches     TEXT NOT NULL,            -- JSON list of switch names
    params       TEXT NOT NULL,            -- JSON object: the job's overrides
    state        TEXT NOT NULL CHECK (state IN ('active', 'releasing', 'released')),
    pending      TEXT NOT NULL DEFAULT '[]',  -- switches still to clear while releasing
    created_at   {real} NOT NULL,
    released_at  {real}
"""

# Shared by both dialects: the indexes that make the database itself refuse a second live job
# with one Job_ID or one name (a logic bug cannot hand one ID to two live jobs).
_LIVE_INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS live_job_id ON jobs(job_id) WHERE state != 'released'",
    "CREATE UNIQUE INDEX IF NOT EXISTS live_name ON jobs(name) WHERE state != 'released'",
)

# The source addresses of live hosts-mode jobs, one row each: the host clash check of an
# allocation is one indexed lookup instead of a scan of every live job. Derived from jobs, kept
# in the same transactions.
_LIVE_HOSTS = "CREATE TABLE IF NOT EXISTS live_hosts (host TEXT PRIMARY KEY, uid {uid_ref})"
_GLOBALS = "CREATE TABLE IF NOT EXISTS globals (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "jobs, live_hosts, globals",
        sqlite=(
            "CREATE TABLE IF NOT EXISTS jobs (uid INTEGER PRIMARY KEY AUTOINCREMENT,"
            + _JOBS_COLUMNS.format(real="REAL")
            + ")",
            *_LIVE_INDEXES,
            _LIVE_HOSTS.format(uid_ref="INTEGER NOT NULL REFERENCES jobs(uid)"),
            _GLOBALS,
        ),
        postgres=(
            "CREATE TABLE IF NOT EXISTS jobs (uid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            + _JOBS_COLUMNS.format(real="DOUBLE PRECISION")
            + ")",
            *_LIVE_INDEXES,
            _LIVE_HOSTS.format(uid_ref="BIGINT NOT NULL REFERENCES jobs(uid)"),
            _GLOBALS,
        ),
    ),
    Migration(
        2,
        "leader lease (replicated controllers)",
        sqlite=(),
        postgres=(
            # One row: who leads, since which epoch, until when (the database's clock, so the
            # replicas' clocks never have to agree), and the lease connection's backend, so a
            # follower sees at once that a leader's session is gone (its process died).
            """CREATE TABLE leader_lease (
                id          INTEGER PRIMARY KEY CHECK (id = 1),
                epoch       BIGINT NOT NULL,
                holder      TEXT NOT NULL,
                address     TEXT NOT NULL,
                holder_pid  INTEGER,
                holder_backend_start TIMESTAMPTZ,
                expires_at  TIMESTAMPTZ NOT NULL
            )""",
            "INSERT INTO leader_lease (id, epoch, holder, address, expires_at)"
            " VALUES (1, 0, '', '', '-infinity')",
        ),
    ),
)

LATEST = MIGRATIONS[-1].version

VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
    " what TEXT NOT NULL, applied_at {real} NOT NULL)"
)


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer controller."""


def pending(current: int) -> list[Migration]:
    """The migrations a database at version ``current`` still needs, in order."""
    if current > LATEST:
        raise SchemaTooNew(
            f"the job database is at schema version {current}, newer than this controller's "
            f"{LATEST}: run the newer controller (or restore a backup); nothing was changed"
        )
    return [m for m in MIGRATIONS if m.version > current]
