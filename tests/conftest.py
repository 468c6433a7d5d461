"""Fixtures shared by more than one test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from symphony_tools import postgres


@pytest.fixture(scope="module")
def pg() -> Iterator[postgres.TempPostgres]:
    """A PostgreSQL cluster of the requesting module's own (Debian's server), stopped at the
    module's end; skips, naming what is missing, where the server is not installed."""
    why = postgres.missing()
    if why:
        pytest.skip(why)
    with postgres.TempPostgres() as cluster:
        yield cluster
