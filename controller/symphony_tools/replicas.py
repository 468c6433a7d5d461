"""Controller replicas on one PostgreSQL store, as separate processes: for the replica tests,
the chaos test and bench/failover_bench.py.

Each replica is a real ``symphony-controller`` with its own API and metrics port and a
``[store]`` section naming the shared database; the test kills, pauses and restarts them by
their PID (never by name). Which one leads is read from their metrics
(``symphony_replica_role``), as an operator's Prometheus would.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import grpc

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony_tools.ports import free_port

# A config body for one replica: (API address, metrics address) -> TOML without the store.
ConfigBody = Callable[[str, str], str]


def _metric(text: str, name: str, **labels: str) -> float | None:
    """The value of the first sample of ``name`` that carries these labels (Prometheus text)."""
    for line in text.splitlines():
        m = re.match(rf"{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            return float(m.group(2))
    return None


def terminate(proc: subprocess.Popen[bytes], grace_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if the process has not exited after ``grace_s``."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


class ReplicaProc:
    def __init__(self, index: int, tmp: Path, url: str, body: ConfigBody, ttl_s: float) -> None:
        self.index = index
        self.name = f"r{index}"
        self.api = f"127.0.0.1:{free_port()}"
        self.metrics = f"127.0.0.1:{free_port()}"
        self.dir = tmp / self.name
        self.dir.mkdir(parents=True, exist_ok=True)
        text = body(self.api, self.metrics)
        text = re.sub(r"^database = .*\n", "", text, flags=re.M)
        store = f'[store]\nurl = "{url}"\nreplica = "{self.name}"\nlease_ttl_s = {ttl_s}\n'
        self.config = self.dir / "controller.toml"
        self.config.write_text(store + text)
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    def start(self) -> None:
        log = open(self.dir / "controller.log", "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "symphony.daemon", "--config", str(self.config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.paused = False

    def wait_api(self, limit_s: float = 60.0) -> None:
        """Until its API answers a read (a deadline for slow machines, not a timing check)."""
        deadline = time.monotonic() + limit_s
        with grpc.insecure_channel(self.api) as channel:
            stub = pb_grpc.JobServiceStub(channel)
            while True:
                if not self.alive():
                    raise AssertionError(f"{self.name} exited:\n{self.log()}")
                try:
                    stub.List(pb.ListRequest(), timeout=1)
                    return
                except grpc.RpcError:
                    if time.monotonic() > deadline:
                        raise AssertionError(f"{self.name}: no API after {limit_s}s") from None
                    time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        if sig == signal.SIGSTOP:
            self.paused = True
        elif sig == signal.SIGCONT:
            self.paused = False
        elif sig == signal.SIGKILL:
            self.proc.wait(10)

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            if self.paused:
                self.proc.send_signal(signal.SIGCONT)
            terminate(self.proc)

    def scrape(self) -> str | None:
        if not self.alive() or self.paused:
            return None
        try:
            with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=2) as r:
                return r.read().decode()
        except OSError:
            return None

    def role(self) -> str | None:
        text = self.scrape()
        if text is None:
            return None
        if _metric(text, "symphony_replica_role", role="leader") == 1.0:
            return "leader"
        if _metric(text, "symphony_replica_role", role="follower") == 1.0:
            return "follower"
        return None

    def metric(self, name: str, **labels: str) -> float | None:
        text = self.scrape()
        return None if text is None else _metric(text, name, **labels)

    def log(self) -> str:
        path = self.dir / "controller.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


class ReplicaSet:
    def __init__(self, tmp: Path, url: str, n: int, body: ConfigBody, ttl_s: float = 1.5):
        self.replicas = [ReplicaProc(i, tmp, url, body, ttl_s) for i in range(n)]

    @property
    def addresses(self) -> str:
        """Every replica's API address, as symphony.client and symphonyctl take them."""
        return ",".join(r.api for r in self.replicas)

    def start(self) -> None:
        """Start every replica and wait until each one's API answers."""
        for r in self.replicas:
            r.start()
        for r in self.replicas:
            r.wait_api()

    def leader(self, limit_s: float = 60.0, exclude: ReplicaProc | None = None) -> ReplicaProc:
        """The one replica that says it leads (waits for an election; a deadline for slow
        machines, not a timing assertion)."""
        deadline = time.monotonic() + limit_s
        while True:
            leaders = [r for r in self.replicas if r is not exclude and r.role() == "leader"]
            if len(leaders) == 1:
                return leaders[0]
            assert len(leaders) < 2, f"two leaders: {[r.name for r in leaders]}"
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {r.name}\n{r.log()}" for r in self.replicas)
                raise AssertionError(f"no leader after {limit_s}s\n{logs}")
            time.sleep(0.05)

    def stop(self) -> None:
        for r in self.replicas:
            r.stop()
