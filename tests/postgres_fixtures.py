"""A real PostgreSQL for the tests that need one: Debian's server, our own cluster on loopback
(symphony_tools.postgres.TempPostgres), one per test module, stopped at its end. Each test
gets a database of its own in it (a fresh schema, nothing left from the test before)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest

from symphony_tools import postgres

_names = itertools.count()


def pg_cluster() -> Iterator[postgres.TempPostgres]:
    why = postgres.missing()
    if why:
        pytest.skip(why)
    with postgres.TempPostgres() as pg:
        yield pg


def fresh_database(pg: postgres.TempPostgres) -> str:
    """The URL of a new, empty database in the cluster."""
    name = f"t{next(_names)}"
    with psycopg.connect(pg.url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return pg.url.rsplit("/", 1)[0] + f"/{name}"
