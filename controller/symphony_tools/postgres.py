"""A throwaway PostgreSQL cluster for tests and benches: Debian's server binaries, our own data
directory, loopback only, a free port; stopped (and deleted) at the end.

Debian's ``postgresql`` package (scripts/install_test_deps.sh installs it) puts initdb and
pg_ctl under /usr/lib/postgresql/<major>/bin; its own service is never used. The server refuses
to run as root, so as root the cluster belongs to the ``postgres`` user the package creates.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from symphony_tools.ports import free_port


def server_bin() -> Path | None:
    """The newest installed server's bin directory (with initdb and pg_ctl), if any."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name)
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def missing() -> str | None:
    """Why a cluster cannot be started here, or None."""
    if server_bin() is None:
        return "PostgreSQL server not installed (scripts/install_test_deps.sh installs it)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "no 'postgres' user to run the server as (Debian's package creates it)"
    return None


class TempPostgres:
    """``with TempPostgres() as pg: pg.url`` (database ``symphony``, superuser ``postgres``,
    trust authentication on 127.0.0.1 only)."""

    def __init__(self, database: str = "symphony") -> None:
        why = missing()
        if why:
            raise RuntimeError(why)
        self.bin = server_bin()
        assert self.bin is not None
        self.database = database
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="symphony-pg-"))
        self.data = self.dir / "data"
        self._user: pwd.struct_passwd | None = (
            pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        )
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/{database}"
        self._started = False
        self._databases = 0

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """A server tool, as the cluster's owner."""
        kw = {}
        if self._user is not None:
            kw = {"user": self._user.pw_uid, "group": self._user.pw_gid, "extra_groups": []}
        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            cwd=self.dir,
            **kw,  # type: ignore[arg-type]
        )

    def _check(self, out: subprocess.CompletedProcess[str], what: str) -> None:
        if out.returncode != 0:
            raise RuntimeError(f"{what} failed ({out.returncode}): {out.stdout}{out.stderr}")

    def start(self) -> TempPostgres:
        if self._user is not None:
            os.chown(self.dir, self._user.pw_uid, self._user.pw_gid)
        init = self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-sync",
        )  # fmt: skip
        self._check(init, "initdb")
        # Loopback only, no Unix socket outside our directory; fsync stays on (the store's
        # durability is part of what the tests check).
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c max_connections=100"
        started = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-o", opts,
            "-w", "-t", "60", "start",
        )  # fmt: skip
        self._check(started, "pg_ctl start")
        self._started = True
        made = self._run(
            "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", self.database
        )
        self._check(made, "createdb")
        return self

    def new_database(self) -> str:
        """The URL of a new, empty database in the cluster (a test of its own, fresh schema)."""
        self._databases += 1
        name = f"{self.database}_{self._databases}"
        made = self._run(
            "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name
        )
        self._check(made, "createdb")
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def log(self) -> str:
        path = self.dir / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        if self._started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self._started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> TempPostgres:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
