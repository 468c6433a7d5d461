"""The 4-port bmv2 testbed shared by the PTF suite, the benchmarks and the experiments.

Switch port i is veth(2i) and its host side veth(2i+1) (bmv2_env/env.sh). Hosts 10.0.i.0/24
sit behind port i; non-IPv4 traffic crosses 0 <-> 1 and 2 <-> 3.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from symphony.model import tables
from symphony.model.tables import TableEntrySpec
from symphony.switch.desired import cross_connect, route

PORTS = 4
# The repository this module lives in (controller/symphony_tools/testbed.py): bmv2_env/ keeps
# its run files under run/ there.
REPO = Path(__file__).resolve().parents[2]
# `make build`'s output: the program every bmv2 test, bench and experiment loads.
BUILD = REPO / "build/bmv2"
P4INFO = BUILD / "symphony.p4info.txtpb"
BMV2_JSON = BUILD / "symphony.json"
# simple_switch --priority-queues, as bmv2_env/env.sh's SYMPHONY_PRIORITY_QUEUES: data in priority
# 0, the ACK class in 1 (docs/ack_priority.md); the controller configs written here declare it.
BMV2_PRIORITY_QUEUES = 2


def simple_switch_grpc() -> str | None:
    """bmv2 with P4Runtime: on PATH, or where docs/toolchain.md installs it."""
    return shutil.which("simple_switch_grpc") or shutil.which(
        "simple_switch_grpc", path="/opt/p4/bin"
    )


def bmv2_missing() -> str | None:
    """Why a bmv2 test cannot run here (the binary, the compiled program, root for the veth
    ports), or None: the one skip reason of every bmv2 test module."""
    if simple_switch_grpc() is None:
        return "simple_switch_grpc not found on PATH or in /opt/p4/bin (bmv2 with P4Runtime)"
    if not (P4INFO.is_file() and BMV2_JSON.is_file()):
        return f"{BMV2_JSON} / {P4INFO} missing: run `make build`"
    if os.geteuid() != 0:
        return "bmv2_env/start.sh needs root to create veth ports"
    return None


@dataclass(frozen=True)
class Bmv2Env:
    """One bmv2 instance of bmv2_env/: the same variables and defaults as bmv2_env/env.sh, so a
    second switch (e.g. SYMPHONY_VETH_BASE=20 SYMPHONY_GRPC_ADDR=127.0.0.1:9659
    SYMPHONY_THRIFT_PORT=9190 SYMPHONY_RUN_DIR=run/bmv2-ctl) can run beside the default one."""

    grpc_addr: str = "127.0.0.1:9559"
    thrift_port: int = 9090
    device_id: int = 0
    veth_base: int = 0
    ports: int = PORTS
    run_dir: Path = REPO / "run/bmv2"
    # Existing interfaces as the ports (port i = interfaces[i]) instead of `ports` veth pairs
    # veth(B+2i)/veth(B+2i+1): the fabric's switches (symphony_tools/fabric.py) make their own.
    interfaces: tuple[str, ...] = ()
    mtu: int = 9500
    priority_queues: int = BMV2_PRIORITY_QUEUES

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Bmv2Env:
        env = os.environ if environ is None else environ
        d = cls()
        return cls(
            grpc_addr=env.get("SYMPHONY_GRPC_ADDR") or d.grpc_addr,
            thrift_port=int(env.get("SYMPHONY_THRIFT_PORT") or d.thrift_port),
            device_id=int(env.get("SYMPHONY_DEVICE_ID") or d.device_id),
            veth_base=int(env.get("SYMPHONY_VETH_BASE") or d.veth_base),
            ports=int(env.get("SYMPHONY_PORTS") or d.ports),
            run_dir=Path(env.get("SYMPHONY_RUN_DIR") or d.run_dir),
            mtu=int(env.get("SYMPHONY_MTU") or d.mtu),
            priority_queues=int(env.get("SYMPHONY_PRIORITY_QUEUES") or d.priority_queues),
        )

    @property
    def grpc_host(self) -> str:
        return self.grpc_addr.rsplit(":", 1)[0]

    def switch_if(self, port: int) -> str:
        if self.interfaces:
            return self.interfaces[port]
        return f"veth{self.veth_base + 2 * port}"

    def host_if(self, port: int) -> str:
        """Where tests send to and sniff switch port ``port``."""
        return f"veth{self.veth_base + 2 * port + 1}"

    def controller_toml(
        self,
        *,
        api: str,
        metrics: str,
        p4info: Path,
        bmv2_json: Path,
        ports: int = PORTS,
        controller: str = "",
        route_ports: int = 2,
        extra: str = "",
    ) -> str:
        """A controller config for this switch alone (name "s1"): 10.0.i.0/24 -> port i for the
        first `route_ports` ports; `controller` is the body of an optional [controller] section,
        `extra` more top-level sections (e.g. [defaults], [queue_marking])."""
        port_list = ", ".join(f"{{ port = {i} }}" for i in range(ports))
        routes = ", ".join(
            f'{{ prefix = "10.0.{i}.0/24", port = {i} }}' for i in range(min(ports, route_ports))
        )
        section = f"[controller]\n{controller.strip()}\n" if controller else ""
        extra = f"{extra.strip()}\n" if extra else ""
        return f"""database = "jobs.db"
{section}{extra}[api]
listen = "{api}"
[metrics]
listen = "{metrics}"
[pipelines.bmv2]
p4info = "{p4info}"
device_config = "{bmv2_json}"
[[switches]]
name = "s1"
address = "{self.grpc_addr}"
device_id = {self.device_id}
target = "bmv2"
thrift_port = {self.thrift_port}
priority_queues = {self.priority_queues}
ports = [{port_list}]
routes = [{routes}]
"""

    def script(self, action: str, *args: str) -> None:
        """Run bmv2_env/<action>.sh (start, stop) for this instance; needs root."""
        subprocess.run(
            ["bash", str(REPO / f"bmv2_env/{action}.sh"), *args],
            check=True,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            env={**os.environ, **self.environ()},
        )

    def environ(self) -> dict[str, str]:
        """The variables bmv2_env/start.sh and stop.sh read, for this instance."""
        return {
            "SYMPHONY_GRPC_ADDR": self.grpc_addr,
            "SYMPHONY_THRIFT_PORT": str(self.thrift_port),
            "SYMPHONY_DEVICE_ID": str(self.device_id),
            "SYMPHONY_VETH_BASE": str(self.veth_base),
            "SYMPHONY_PORTS": str(self.ports),
            "SYMPHONY_RUN_DIR": str(self.run_dir),
            # Always set: an exported value must not turn the default switch into another.
            "SYMPHONY_INTERFACES": " ".join(f"{i}@{n}" for i, n in enumerate(self.interfaces)),
            "SYMPHONY_MTU": str(self.mtu),
            "SYMPHONY_PRIORITY_QUEUES": str(self.priority_queues),
        }


def base_entries() -> list[TableEntrySpec]:
    """Routes, the cross-connect and the lookup tables."""
    specs = [route(0x0A000000 | i << 8, 24, i) for i in range(PORTS)]
    specs += [cross_connect(i, i ^ 1) for i in range(PORTS)]
    return specs + list(tables.lut_entries())
