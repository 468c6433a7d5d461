"""One controller per job database: an exclusive lock on ``<database>.lock`` for the life of the
process.

Two controllers on one database would both drive the same switches from the same jobs and undo
each other's writes. SQLite's own locks only order transactions; this lock refuses the second
controller outright, while the first keeps running. It is an flock(2) on a file beside the
database, so it goes away with the process however it ends (kill -9 included), and the file
holds the owner's PID for the operator.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO


class DatabaseInUse(RuntimeError):
    """Another process holds the database, or its lock file cannot be made."""


def hold(database: Path) -> IO[str]:
    """Take the lock or raise DatabaseInUse; keep the returned file open to keep the lock."""
    path = Path(f"{database}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = path.open("a+")
    except OSError as exc:
        raise DatabaseInUse(f"cannot lock the job database {database}: {exc.strerror}") from exc
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        owner = f.read().strip() or "unknown"
        f.close()
        raise DatabaseInUse(
            f"another controller (pid {owner}) is using the job database {database}"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f
