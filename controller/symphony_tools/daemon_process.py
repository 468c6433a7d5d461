"""The controller daemon as a child process, for the tests, benches and testbeds that run it
against real switches: start it on a config, wait until every switch is ready, stop it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import grpc

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc


class DaemonError(RuntimeError):
    pass


class ControllerProcess:
    """`python -m symphony.daemon --config CONFIG`, its output in `log`; a context manager."""

    def __init__(self, config: Path, api: str, log: Path) -> None:
        self.config, self.api, self.log = config, api, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: grpc.Channel | None = None
        self.stub: pb_grpc.JobServiceStub | None = None

    def __enter__(self) -> ControllerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "symphony.daemon", "--config", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C stops the experiment or test, which then releases
                # its jobs and stops the controller itself.
                start_new_session=True,
            )
        self.channel = grpc.insecure_channel(self.api)
        self.stub = pb_grpc.JobServiceStub(self.channel)

    def wait_ready(self, switches: Iterable[str], timeout_s: float = 60.0) -> None:
        """Until every switch in `switches` is "ready" (pipeline pushed, reconciled)."""
        assert self.proc is not None and self.stub is not None, "start() first"
        want = set(switches)
        states: dict[str, str] = {}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DaemonError(f"controller exited ({self.proc.returncode}); see {self.log}")
            try:
                reply = self.stub.SwitchStatus(pb.SwitchStatusRequest(), timeout=2)
                states = {s.name: s.state for s in reply.switches}
                if all(states.get(name) == "ready" for name in want):
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
        raise DaemonError(f"switches not ready after {timeout_s:.0f} s: {states}; see {self.log}")

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
            self.stub = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
