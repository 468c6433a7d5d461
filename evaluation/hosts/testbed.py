"""The closed-loop testbed: a bmv2 of its own (bmv2_env/), the controller daemon pushing the
program, and jobs allocated through the controller's gRPC API, as a cluster scheduler would.

It uses its own veth ports and server ports (SYMPHONY_VETH_BASE 40, P4Runtime 9759, Thrift 9290)
so it never touches the switch of the PTF suite or of `make run`.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

from evaluation.hosts.losses import Iface, Link, LossMeter, Switch, Topology
from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.switch.thrift_registers import Bmv2Thrift
from symphony_tools.daemon_process import ControllerProcess, DaemonError
from symphony_tools.ports import free_port
from symphony_tools.testbed import BMV2_JSON, P4INFO, Bmv2Env

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ENV = replace(
    Bmv2Env(),
    grpc_addr="127.0.0.1:9759",
    thrift_port=9290,
    veth_base=40,
    ports=4,
    run_dir=ROOT / "run/bmv2-exp",
    # The largest frame is 1098 bytes: at MTU 1500 bmv2's capture ring holds ~1300 frames
    # (bmv2_env/offload_off.py), 6 times more than at the default 9500.
    mtu=1500,
)


# bmv2 runs under SCHED_FIFO at this priority (root only; 0 = the normal scheduler), below the
# hosts' loop (nic.RT_PRIORITY) so the loop preempts it. With two CPU-bound processes beside it
# on 2 cores, bmv2 at the normal priority fell behind its queue rate (a lone flow took 1.16-1.98
# times its line time at 8000 packets/s, frames lost in its capture and in the queue that could
# not drain); under SCHED_FIFO it kept the rate (1.001-1.003) and lost nothing
# (docs/experiments.md, "The harness loses nothing by itself"). Its threads sleep when idle.
SWITCH_RT_PRIORITY = 10


class TestbedError(RuntimeError):
    pass


class Testbed:
    """bmv2 + controller for one experiment session; use as a context manager."""

    __test__ = False  # not a pytest class, despite its name

    def __init__(
        self,
        run_dir: Path,
        env: Bmv2Env = DEFAULT_ENV,
        *,
        k_min: int = 50,
        k_max: int = 100,
        p_max: float = 0.2,
        queue_depth: int = 1000,
        rt_priority: int = SWITCH_RT_PRIORITY,
    ) -> None:
        self.env = env
        self.rt_priority = rt_priority
        self.realtime = False  # whether bmv2 got SCHED_FIFO
        self.run_dir = run_dir.resolve()  # the config resolves paths against its own folder
        self.queue = (k_min, k_max, p_max)
        self.queue_depth = queue_depth
        self.api = f"127.0.0.1:{free_port()}"
        self.controller: ControllerProcess | None = None
        self.thrift: Bmv2Thrift | None = None
        self.meter: LossMeter | None = None
        self.stub: pb_grpc.JobServiceStub | None = None
        self._started_switch = False

    # -- life cycle -----------------------------------------------------------------------
    def __enter__(self) -> Testbed:
        for f in (BMV2_JSON, P4INFO):
            if not f.is_file():
                raise TestbedError(f"{f} missing: run `make build` first")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._bmv2("stop")  # a switch left over by an interrupted run
            self._bmv2("start")
            self._started_switch = True
            self.realtime = self._switch_realtime()
            self._start_controller()
            self.thrift = Bmv2Thrift("127.0.0.1", self.env.thrift_port)
            self.thrift.set_queue_depth(self.queue_depth)
            self.meter = LossMeter(self.topology())
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None
            self.stub = None
        if self.meter is not None:
            self.meter.close()
            self.meter = None
        if self.thrift is not None:
            self.thrift.close()
            self.thrift = None
        if self._started_switch:
            self._bmv2("stop")
            self._started_switch = False

    def _bmv2(self, action: str) -> None:
        out = subprocess.run(
            ["bash", str(ROOT / f"bmv2_env/{action}.sh")],
            cwd=ROOT,
            env={**os.environ, **self.env.environ()},
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise TestbedError(f"bmv2_env/{action}.sh failed: {out.stderr.strip()}")

    def _switch_realtime(self) -> bool:
        """Every thread of bmv2 under SCHED_FIFO (threads it starts later inherit it)."""
        if self.rt_priority <= 0:
            return False
        pid = int((self.env.run_dir / "switch.pid").read_text())
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(self.rt_priority))
        except (PermissionError, ProcessLookupError, FileNotFoundError):
            return False
        return True

    def _start_controller(self) -> None:
        k_min, k_max, p_max = self.queue
        cfg = self.run_dir / "controller.toml"
        cfg.write_text(
            self.env.controller_toml(
                api=self.api,
                metrics=f"127.0.0.1:{free_port()}",
                p4info=P4INFO,
                bmv2_json=BMV2_JSON,
                ports=self.env.ports,
                route_ports=self.env.ports,
                controller="reconcile_interval_s = 600\ntelemetry_interval_s = 600",
                extra=f"[queue_marking]\nk_min = {k_min}\nk_max = {k_max}\np_max = {p_max}",
            ).replace('database = "jobs.db"', f'database = "{self.run_dir / "jobs.db"}"')
        )
        for f in self.run_dir.glob("jobs.db*"):  # a fresh store: WAL and SHM files too
            f.unlink()
        self.controller = ControllerProcess(cfg, self.api, self.run_dir / "controller.log")
        self.controller.start()
        self.stub = self.controller.stub
        try:
            self.controller.wait_ready(["s1"])
        except DaemonError as e:
            raise TestbedError(str(e)) from None

    def topology(self) -> Topology:
        """The switch and its veth pairs, for the loss attribution (evaluation/hosts/losses.py)."""
        ports = range(self.env.ports)
        return Topology(
            switches=(
                Switch("s1", self.env.thrift_port, tuple((p, self.switch_iface(p)) for p in ports)),
            ),
            links=tuple(Link(Iface(self.env.host_if(p)), self.switch_iface(p)) for p in ports),
        )

    def switch_iface(self, port: int) -> Iface:
        return Iface(self.env.switch_if(port))

    # -- jobs, through the controller's API -----------------------------------------------
    def allocate(self, name: str, **params: float | int | str) -> int:
        """A tag-mode job on s1 with these parameter overrides; returns its Job_ID."""
        assert self.stub is not None
        reply = self.stub.Allocate(
            pb.AllocateRequest(
                request_key=name,
                name=name,
                mode="tag",
                switches=["s1"],
                params=pb.Params(**params),
            ),
            timeout=30,
        )
        bad = [r for r in reply.switches if r.status != "installed"]
        if reply.job.state != "active" or bad:
            raise TestbedError(f"allocate {name}: {bad}")
        return reply.job.job_id

    def live(self, name: str) -> pb.LiveState:
        assert self.stub is not None
        reply = self.stub.Get(pb.JobRef(job=name), timeout=30)
        return reply.live[0]

    def release(self, name: str) -> None:
        assert self.stub is not None
        self.stub.Release(pb.JobRef(job=name), timeout=30)

    # -- the bottleneck -------------------------------------------------------------------
    def set_rates(self, rates: dict[int, float]) -> None:
        """Egress queue rate (packets/s) per switch port: the emulated links."""
        assert self.thrift is not None
        for port, pps in rates.items():
            self.thrift.set_queue_rate(round(pps), port)
