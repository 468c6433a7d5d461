"""Each switch's view of a job over time, sampled from the controller while a run lasts.

A process of its own (`python -m evaluation.hosts.live_sampler API JOB PERIOD_S`), so that its
gRPC calls never take the GIL from the hosts' event loop: every PERIOD_S it asks the
controller's `Get` for the job's live state on every switch (read from the switch's registers)
and prints one JSON line per switch, [time, switch, step_overlap, step_min, step_max, marks,
packets], until its standard input closes. Times are `time.perf_counter()` values, the clock the
hosts' loop counts from (CLOCK_MONOTONIC, shared by every process of the machine). A fresh
interpreter rather than multiprocessing: the parent's sys.path carries bmv2's Python modules,
whose own `google` package would shadow protobuf in a spawned child.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time

Sample = tuple[float, str, int, int, int, int, int]


def _sample(api: str, job: str, period_s: float) -> None:
    import grpc

    from symphony.api import symphony_pb2 as pb
    from symphony.api import symphony_pb2_grpc as pb_grpc

    with grpc.insecure_channel(api) as channel:
        stub = pb_grpc.JobServiceStub(channel)
        print("ready", flush=True)
        while True:
            try:
                reply = stub.Get(pb.JobRef(job=job), timeout=2)
                t = time.perf_counter()
                for live in reply.live:
                    if live.available:
                        row = [t, live.switch, live.step_overlap, live.step_min, live.step_max]
                        print(json.dumps([*row, live.marks, live.packets]), flush=True)
            except grpc.RpcError:
                pass
            # stdin readable = closed by the parent (it never writes): stop
            if select.select([sys.stdin], [], [], period_s)[0]:
                return


class LiveSampler:
    """`with LiveSampler(api, job, period_s) as s: ...` then `s.samples`."""

    def __init__(self, api: str, job: str, period_s: float) -> None:
        self.args = [api, job, str(period_s)]
        self.samples: list[Sample] = []
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> LiveSampler:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "evaluation.hosts.live_sampler", *self.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":
            self._proc.kill()
            raise RuntimeError("live sampler did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self._proc
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        out = proc.stdout.read()
        proc.wait(30)
        self.samples = [tuple(json.loads(line)) for line in out.splitlines() if line]  # type: ignore[misc]
        self._proc = None


if __name__ == "__main__":
    _sample(sys.argv[1], sys.argv[2], float(sys.argv[3]))
