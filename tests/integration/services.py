"""Real daemons for the operator-side integration tests: munged + slurmctld + slurmd (one node),
Prometheus, and the Symphony controller without a switch. Each runs in the foreground of a
process this module started, in a temporary directory, on free ports, and is stopped by its PID
(never by name: other people's daemons may run on the machine)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from symphony_tools.ports import free_port
from symphony_tools.replicas import terminate

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
# Debian installs the daemons in sbin; a test runner's PATH may not include it.
SEARCH = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin:/usr/bin"
# What scripts/install_test_deps.sh installs from Debian for these tests.
TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "prometheus", "promtool")


def which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH)


def missing_tools(*names: str) -> str | None:
    gone = [n for n in names if which(n) is None]
    if gone:
        return f"{', '.join(gone)} not installed (scripts/install_test_deps.sh installs them)"
    if os.geteuid() != 0:
        return "slurmd and munged need root"
    return None


def wait_for(what: str, probe: Callable[[], T | None], limit_s: float = 60.0) -> T:
    """Poll ``probe`` until it returns something (a deadline for slow machines, not a timing
    assertion)."""
    deadline = time.monotonic() + limit_s
    while True:
        got = probe()
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {limit_s}s")
        time.sleep(0.1)


class Daemon:
    """One foreground process with its log file."""

    def __init__(self, name: str, argv: list[str], log_dir: Path, env: dict | None = None):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def check(self) -> None:
        if not self.alive():
            raise AssertionError(f"{self.name} exited ({self.proc.returncode}): {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.alive():
            terminate(self.proc)
        self._log.close()


class Controller:
    """symphony-controller with one switch that never answers (the job API and the metrics
    work; jobs stay pending on the switch), restartable on the same database."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.api = f"127.0.0.1:{free_port()}"
        self.metrics = f"127.0.0.1:{free_port()}"
        (tmp / "p4info.txtpb").write_text("")
        (tmp / "bmv2.json").write_text("{}")
        self.config = tmp / "controller.toml"
        self.config.write_text(f"""database = "jobs.db"
[controller]
install_timeout_s = 0.5
telemetry_interval_s = 0.5
[api]
listen = "{self.api}"
[metrics]
listen = "{self.metrics}"
[pipelines.bmv2]
p4info = "p4info.txtpb"
device_config = "bmv2.json"
[[switches]]
name = "s1"
address = "127.0.0.1:{free_port()}"
device_id = 0
target = "bmv2"
""")
        self.daemon: Daemon | None = None

    def start(self) -> None:
        from symphony.client import Client

        argv = [sys.executable, "-m", "symphony.daemon", "--config", str(self.config)]
        self.daemon = Daemon("controller", argv, self.tmp)

        def up() -> bool | None:
            assert self.daemon is not None
            self.daemon.check()
            try:
                with Client(self.api, timeout_s=1) as c:
                    c.list()
                return True
            except Exception:
                return None

        wait_for("controller API", up)

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
            self.daemon = None


class SlurmCluster:
    """munged, slurmctld and slurmd for one node (this host), as root, with the given
    slurm.conf lines added (the hooks under test)."""

    def __init__(self, tmp: Path, extra_conf: str):
        self.tmp = tmp
        for d in ("munge", "state", "spool", "log"):
            (tmp / d).mkdir(mode=0o755, exist_ok=True)
        key = tmp / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.socket = tmp / "munge" / "munge.socket"
        self.node = socket.gethostname().split(".")[0]
        self.conf = tmp / "slurm.conf"
        self.conf.write_text(f"""ClusterName=symtest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
MailProg=/bin/true
{extra_conf.strip()}
NodeName={self.node} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), "PATH": SEARCH}
        self.daemons: list[Daemon] = []

    def start(self) -> None:
        log = self.tmp / "log"
        munge = [
            str(which("munged")), "-F", "-f", f"--socket={self.socket}",
            f"--key-file={self.tmp}/munge/munge.key", f"--pid-file={self.tmp}/munge/munged.pid",
            f"--seed-file={self.tmp}/munge/seed", f"--log-file={log}/munged-file.log",
        ]  # fmt: skip
        self.daemons.append(Daemon("munged", munge, log))
        wait_for("munge socket", lambda: self.socket.exists() or None, 30)
        conf = ["-D", "-f", str(self.conf)]
        self.daemons.append(Daemon("slurmctld", [str(which("slurmctld")), *conf], log, self.env))
        self.daemons.append(Daemon("slurmd", [str(which("slurmd")), *conf], log, self.env))
        wait_for("an idle Slurm node", self._idle)

    def _idle(self) -> bool | None:
        for d in self.daemons:
            d.check()
        out = self.run("sinfo", "-h", "-o", "%T", check=False)
        return True if out.returncode == 0 and out.stdout.strip() == "idle" else None

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(which(argv[0]) or argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            env=self.env,
            check=check,
            timeout=120,
            cwd=self.tmp,
        )

    def job_state(self, slurm_id: str) -> str:
        out = self.run("scontrol", "-o", "show", "job", slurm_id).stdout
        return out.split("JobState=")[1].split()[0]

    def stop(self) -> None:
        # Jobs first: their slurmstepd would outlive slurmd.
        if self.daemons and all(d.alive() for d in self.daemons):
            self.run("scancel", "--full", "--partition=debug", check=False)
            # Stopped below all the same if some job hangs on.
            with contextlib.suppress(AssertionError):
                wait_for("no jobs left", lambda: not self.run("squeue", "-h").stdout or None, 30)
        for d in reversed(self.daemons):
            d.stop()
        self.daemons = []


class Prometheus:
    """A Prometheus server scraping ``targets`` every 0.5 s, with ``rule_files`` loaded."""

    def __init__(self, tmp: Path, targets: list[str], rule_files: list[Path] = ()):
        self.tmp = tmp
        self.address = f"127.0.0.1:{free_port()}"
        rules = "".join(f"  - {p}\n" for p in rule_files) or "  []\n"
        self.config = tmp / "prometheus.yml"
        self.config.write_text(
            "global:\n  scrape_interval: 500ms\n  evaluation_interval: 500ms\n"
            f"rule_files:\n{rules}"
            "scrape_configs:\n  - job_name: symphony\n    static_configs:\n"
            f"      - targets: {json.dumps(targets)}\n"
        )
        argv = [
            str(which("prometheus")),
            f"--config.file={self.config}",
            f"--storage.tsdb.path={tmp}/tsdb",
            f"--web.listen-address={self.address}",
        ]
        self.daemon = Daemon("prometheus", argv, tmp)
        wait_for("prometheus ready", self._ready)

    def _ready(self) -> bool | None:
        self.daemon.check()
        try:
            with urllib.request.urlopen(f"http://{self.address}/-/ready", timeout=2) as r:
                return True if r.status == 200 else None
        except OSError:
            return None

    def api(self, path: str, **params: str) -> Any:
        url = f"http://{self.address}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """An instant query's vector: [{"metric": {...}, "value": [t, "v"]}, ...]."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        return data["result"]

    def stop(self) -> None:
        self.daemon.stop()
