"""A leaf-spine fabric of bmv2 switches on this machine, each host in a network namespace.

    python -m symphony_tools.fabric up [--leaves 2 --spines 2 --hosts-per-leaf 2] [--rate PPS]
    python -m symphony_tools.fabric down
    python -m symphony_tools.fabric show

`Topology` is the one description of the fabric: its switches and their ports, the links, the
hosts (address, MAC, namespace, leaf port) and the controller config derived from them.
`Bmv2Fabric` brings it up and down. docs/fabric.md has the names, addresses and choices.

- Switches: leaves first, then spines; switch i runs `simple_switch_grpc` through
  bmv2_env/start.sh (the same nftables guard of its Thrift port, loopback only) with P4Runtime
  on 127.0.0.1:(9859 + i) and Thrift on 9390 + i, its files under run/fabric/<name>/.
- Ports: leaf port p < hosts_per_leaf is host p of that leaf; leaf port hosts_per_leaf + j is
  the uplink to spine j; spine port i is the link to leaf i.
- Interfaces: switch port p of leaf i is `sf-l<i>p<p>`, of spine j `sf-s<j>p<p>`; a link is a
  veth pair between two switch ports; host h's interface `sf-h<h>` is the peer of its leaf port,
  in namespace `sf-h<h>`. Every name starts with "sf-", which is how `down` finds what is left.
- Hosts: h = leaf * hosts_per_leaf + p, address 10.0.<leaf>.<p + 1>/32, MAC
  02:00:0a:00:<leaf>:<p + 1> (the address in the MAC's low bytes); a route 10.0.0.0/16 on their
  interface and a permanent neighbour entry for every other host, since bmv2 rewrites no MAC
  and no ARP crosses the fabric; MTU 1500 (below), IPv6 off.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

from symphony.model.ecmp import next_hop
from symphony.switch.thrift_registers import Bmv2Thrift
from symphony_tools.daemon_process import ControllerProcess
from symphony_tools.ports import free_port
from symphony_tools.testbed import (
    BMV2_JSON,
    BMV2_PRIORITY_QUEUES,
    P4INFO,
    REPO,
    Bmv2Env,
    bmv2_missing,
)

ROCE_DPORT = 4791  # RoCEv2's UDP destination port
PREFIX = "sf-"  # every interface and namespace of the fabric (this tool's share of names)
GRPC_BASE = 9859
THRIFT_BASE = 9390
RUN_DIR = REPO / "run/fabric"
STATE = "fabric.json"  # in the run directory: what `up` made, for `down`
HOST_NET = ipaddress.IPv4Network("10.0.0.0/16")
# As the experiments' testbed, not bmv2_env's 9500: bmv2's capture ring (libpcap, 2 MB, offloads
# off: bmv2_env/offload_off.py) has one slot per MTU + 18 bytes, so it holds 1310 frames at 1500
# against 219 at 9500: how long a switch may be descheduled before its ports drop
# (docs/fabric.md). The hosts' frames are at most 1098 bytes.
MTU = 1500
# Every egress queue's rate and depth by default (`up`): the link rate sized from
# bench/fabric_rate.py (docs/experiments.md, "Fabric"), the depth of the experiments' testbed.
LINK_PPS = 2000
QUEUE_DEPTH = 1000
PORT_MAX = 511  # bmv2's port numbers (bit<9>); 511 is the drop port
MAX_LEAVES = 256  # the leaf is the third byte of its hosts' addresses
MAX_HOSTS_PER_LEAF = 254


class FabricError(RuntimeError):
    pass


@dataclass(frozen=True)
class Host:
    index: int  # 0.. over the fabric, leaf by leaf
    leaf: int
    port: int  # its leaf's port

    @property
    def name(self) -> str:
        return f"h{self.index}"

    @property
    def netns(self) -> str:
        return f"{PREFIX}h{self.index}"

    @property
    def ifname(self) -> str:
        """Its interface, inside its namespace."""
        return f"{PREFIX}h{self.index}"

    @property
    def ip(self) -> str:
        return f"10.0.{self.leaf}.{self.port + 1}"

    @property
    def mac(self) -> str:
        return f"02:00:0a:00:{self.leaf:02x}:{self.port + 1:02x}"


@dataclass(frozen=True)
class Switch:
    name: str  # "leaf0", "spine1": the controller's name for it too
    index: int  # leaves first, then spines: its server ports are the bases plus this
    interfaces: tuple[str, ...]  # switch port p is interfaces[p]
    grpc_port: int
    thrift_port: int

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


@dataclass(frozen=True)
class Link:
    """A veth pair between two switch ports."""

    a: str
    a_port: int
    a_if: str
    b: str
    b_port: int
    b_if: str


@dataclass(frozen=True)
class Topology:
    leaves: int = 2
    spines: int = 2
    hosts_per_leaf: int = 2
    grpc_base: int = GRPC_BASE
    thrift_base: int = THRIFT_BASE

    def __post_init__(self) -> None:
        for what, value, hi in (
            ("leaves", self.leaves, MAX_LEAVES),
            ("spines", self.spines, PORT_MAX),
            ("hosts_per_leaf", self.hosts_per_leaf, MAX_HOSTS_PER_LEAF),
        ):
            if not 1 <= value <= hi:
                raise FabricError(f"{what} = {value}: must be 1..{hi}")
        if self.hosts_per_leaf + self.spines > PORT_MAX:
            raise FabricError(
                f"hosts_per_leaf + spines = {self.hosts_per_leaf + self.spines}: a leaf has at "
                f"most {PORT_MAX} ports"
            )
        if self.leaves > PORT_MAX:
            raise FabricError(f"leaves = {self.leaves}: a spine has at most {PORT_MAX} ports")
        n = self.leaves + self.spines
        for what, base in (("grpc_base", self.grpc_base), ("thrift_base", self.thrift_base)):
            if not 1024 <= base <= 65535 - n:
                raise FabricError(f"{what} = {base}: ports {base}..{base + n - 1} out of range")

    @classmethod
    def parse(cls, spec: str) -> Topology:
        """'LxSxH': leaves x spines x hosts per leaf (e.g. 2x2x2)."""
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", spec.strip())
        if not m:
            raise FabricError(f"fabric {spec!r}: expected LEAVESxSPINESxHOSTS_PER_LEAF, e.g. 2x2x2")
        return cls(int(m[1]), int(m[2]), int(m[3]))

    @property
    def spec(self) -> str:
        return f"{self.leaves}x{self.spines}x{self.hosts_per_leaf}"

    # -- ports and names ------------------------------------------------------------------
    @staticmethod
    def leaf_name(i: int) -> str:
        return f"leaf{i}"

    @staticmethod
    def spine_name(j: int) -> str:
        return f"spine{j}"

    def uplink(self, spine: int) -> int:
        """The leaf port that leads to `spine`."""
        return self.hosts_per_leaf + spine

    @staticmethod
    def leaf_if(leaf: int, port: int) -> str:
        return f"{PREFIX}l{leaf}p{port}"

    @staticmethod
    def spine_if(spine: int, port: int) -> str:
        return f"{PREFIX}s{spine}p{port}"

    @cached_property
    def hosts(self) -> tuple[Host, ...]:
        return tuple(
            Host(leaf * self.hosts_per_leaf + p, leaf, p)
            for leaf in range(self.leaves)
            for p in range(self.hosts_per_leaf)
        )

    @cached_property
    def switches(self) -> tuple[Switch, ...]:
        leaf_ports = self.hosts_per_leaf + self.spines
        out = [
            (self.leaf_name(i), tuple(self.leaf_if(i, p) for p in range(leaf_ports)))
            for i in range(self.leaves)
        ] + [
            (self.spine_name(j), tuple(self.spine_if(j, p) for p in range(self.leaves)))
            for j in range(self.spines)
        ]
        return tuple(
            Switch(name, i, ifs, self.grpc_base + i, self.thrift_base + i)
            for i, (name, ifs) in enumerate(out)
        )

    def switch(self, name: str) -> Switch:
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(name)

    @cached_property
    def links(self) -> tuple[Link, ...]:
        """Leaf i's uplink j <-> spine j's port i, for every leaf and spine."""
        return tuple(
            Link(
                self.leaf_name(i),
                self.uplink(j),
                self.leaf_if(i, self.uplink(j)),
                self.spine_name(j),
                i,
                self.spine_if(j, i),
            )
            for i in range(self.leaves)
            for j in range(self.spines)
        )

    def host(self, name_or_index: str | int) -> Host:
        for h in self.hosts:
            if name_or_index in (h.name, h.index, h.ip):
                return h
        raise KeyError(name_or_index)

    # -- forwarding -----------------------------------------------------------------------
    @property
    def uplinks(self) -> tuple[int, ...]:
        """A leaf's ports towards the spines: the ECMP group of every other leaf's hosts."""
        return tuple(self.uplink(j) for j in range(self.spines))

    def spine_for(
        self, src: Host, dst: Host, proto: int = 1, sport: int = 0, dport: int = 0
    ) -> int:
        """The spine a frame src -> dst (hosts on different leaves) crosses: its leaf's ECMP
        group over every uplink, the bucket from the 5-tuple's hash (model/ecmp.py; no UDP
        header, e.g. ICMP: both ports 0)."""
        port = next_hop(self.uplinks, ip_int(src.ip), ip_int(dst.ip), proto, sport, dport)
        return port - self.hosts_per_leaf

    def path(
        self, src: Host, dst: Host, proto: int = 1, sport: int = 0, dport: int = 0
    ) -> list[str]:
        """The switches a frame from `src` to `dst` crosses, in order (its 5-tuple picks the
        spine; proto 1 = ICMP, 17 = UDP)."""
        if src.leaf == dst.leaf:
            return [self.leaf_name(src.leaf)]
        return [
            self.leaf_name(src.leaf),
            self.spine_name(self.spine_for(src, dst, proto, sport, dport)),
            self.leaf_name(dst.leaf),
        ]

    # -- the controller's config ----------------------------------------------------------
    def controller_toml(
        self,
        *,
        database: Path,
        api: str = "127.0.0.1:50051",
        metrics: str = "127.0.0.1:9464",
        p4info: Path = P4INFO,
        bmv2_json: Path = BMV2_JSON,
        controller: str = "",
        extra: str = "",
        ack_priority: bool = False,
    ) -> str:
        """The controller config for this fabric: its topology (`links` between switch ports,
        `hosts` with their address and leaf port), from which the controller derives every
        switch's routes and ECMP groups and a job's switches from its hosts
        (docs/controller.md, "Topology"), and every switch with all its ports; `ack_priority`
        on every switch or none (docs/ack_priority.md)."""
        section = f"[controller]\n{controller.strip()}\n" if controller else ""
        extra = f"{extra.strip()}\n" if extra else ""
        links = ",\n".join(
            f'  {{ a = "{lk.a}:{lk.a_port}", b = "{lk.b}:{lk.b_port}" }}' for lk in self.links
        )
        hosts = ",\n".join(
            f'  {{ name = "{h.name}", address = "{h.ip}", switch = "{self.leaf_name(h.leaf)}", '
            f"port = {h.port} }}"
            for h in self.hosts
        )
        out = [
            f"# The bmv2 fabric {self.spec} (leaves x spines x hosts per leaf) of\n"
            "# symphony_tools/fabric.py: written by `python -m symphony_tools.fabric up`.\n"
            f'database = "{database}"\n'
            f"links = [\n{links},\n]\n" * bool(self.links) + f"hosts = [\n{hosts},\n]\n"
            f"{section}{extra}"
            f'[api]\nlisten = "{api}"\n[metrics]\nlisten = "{metrics}"\n'
            f'[pipelines.bmv2]\np4info = "{p4info}"\ndevice_config = "{bmv2_json}"\n'
        ]
        for sw in self.switches:
            ports = ", ".join(f"{{ port = {p} }}" for p in range(len(sw.interfaces)))
            out.append(
                f'\n[[switches]]\nname = "{sw.name}"\naddress = "{sw.grpc_addr}"\n'
                f'device_id = 0\ntarget = "bmv2"\nthrift_port = {sw.thrift_port}\n'
                # What the switches run with (Bmv2Env -> bmv2_env/start.sh).
                f"priority_queues = {BMV2_PRIORITY_QUEUES}\n"
                f"ack_priority = {str(ack_priority).lower()}\n"
                f"ports = [{ports}]\n"
            )
        return "".join(out)


def ip_int(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


def fabric_missing() -> str | None:
    """Why the fabric cannot start here (bmv2, the program, root, a system tool), or None."""
    why = bmv2_missing()
    if why:
        return why
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    for tool, pkg in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool, path=path) is None:
            return f"{tool} not found (Debian package {pkg}: scripts/install_test_deps.sh)"
    return None


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _run(*cmd: str, input: str | None = None) -> None:
    out = subprocess.run(cmd, input=input, capture_output=True, text=True)
    if out.returncode != 0:
        raise FabricError(f"{' '.join(cmd)}: {out.stderr.strip() or out.stdout.strip()}")


def netns_names() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def link_names() -> list[str]:
    """Interfaces of this (the root) namespace."""
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()]


def nft_tables() -> list[str]:
    if shutil.which("nft") is None:
        return []
    out = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.startswith("table")]


@dataclass
class Bmv2Fabric:
    """The fabric's switches, links and host namespaces; a context manager (start, stop)."""

    topo: Topology = field(default_factory=Topology)
    run_dir: Path = RUN_DIR
    log_level: str = "warn"
    mtu: int = MTU
    _thrift: dict[str, Bmv2Thrift] = field(default_factory=dict, repr=False)

    @classmethod
    def from_state(cls, run_dir: Path = RUN_DIR) -> Bmv2Fabric | None:
        """The fabric `up` left in `run_dir`, or None."""
        try:
            state = json.loads((run_dir / STATE).read_text())
        except (OSError, ValueError):
            return None
        return cls(Topology(**state["topology"]), run_dir)

    def env(self, sw: Switch) -> Bmv2Env:
        """bmv2_env's settings for one switch (its own run directory and ports)."""
        return Bmv2Env(
            grpc_addr=sw.grpc_addr,
            thrift_port=sw.thrift_port,
            device_id=0,
            ports=len(sw.interfaces),
            run_dir=self.run_dir / sw.name,
            interfaces=sw.interfaces,
            mtu=self.mtu,
        )

    # -- life cycle -----------------------------------------------------------------------
    def __enter__(self) -> Bmv2Fabric:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Namespaces, veth pairs, then every switch (in parallel); whatever an earlier run
        left behind is removed first. On failure, everything made so far is removed."""
        why = fabric_missing()
        if why:
            raise FabricError(why)
        mine = self.pids()
        busy = [
            f"{sw.name} ({port})"
            for sw in self.topo.switches
            for port in (sw.grpc_port, sw.thrift_port)
            if sw.name not in mine and _listening(port)
        ]
        if busy:
            # Another fabric (another run directory) or another program: stopping ours would
            # delete the sf-* interfaces under its switches.
            raise FabricError(
                f"ports in use: {', '.join(busy)}; is another fabric running? "
                "(`make stop` or `python -m symphony_tools.fabric down --run-dir ...`)"
            )
        before = Bmv2Fabric.from_state(self.run_dir)
        if before is not None and before.topo != self.topo:
            before.stop()  # its switches may be more than ours
        self.stop()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / STATE).write_text(json.dumps({"topology": asdict(self.topo)}) + "\n")
        try:
            for h in self.topo.hosts:
                self._host(h)
            for link in self.topo.links:
                _run("ip", "link", "add", link.a_if, "type", "veth", "peer", "name", link.b_if)
            self._scripts("start")
        except BaseException:
            self.stop()
            raise

    def _host(self, h: Host) -> None:
        """Host h's namespace and its veth pair to its leaf port, addressed and with a static
        neighbour entry for every other host; up only once IPv6 is off."""
        _run("ip", "netns", "add", h.netns)
        leaf_if = self.topo.leaf_if(h.leaf, h.port)
        _run(
            "ip", "link", "add", leaf_if, "type", "veth", "peer", "name", h.ifname, "netns", h.netns
        )
        _run(
            "ip",
            "netns",
            "exec",
            h.netns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        )
        batch = [
            f"link set {h.ifname} address {h.mac} mtu {self.mtu}",
            f"addr add {h.ip}/32 dev {h.ifname}",
            "link set lo up",
            f"link set {h.ifname} up",
            f"route add {HOST_NET} dev {h.ifname} src {h.ip}",
        ]
        batch += [
            f"neigh replace {o.ip} lladdr {o.mac} dev {h.ifname} nud permanent"
            for o in self.topo.hosts
            if o != h
        ]
        _run("ip", "-n", h.netns, "-batch", "-", input="\n".join(batch) + "\n")
        # RoCE (UDP 4791) belongs to the emulated NIC (evaluation/hosts/nic.py, an AF_PACKET
        # socket, which sees a frame before netfilter does): the namespace's own IP stack must
        # not answer it, or every new flow draws an ICMP port unreachable back through the
        # fabric (extra frames the experiments would count as unexpected).
        _run(
            "ip", "netns", "exec", h.netns, "nft", "-f", "-",
            input=(
                "table inet symphony_host {\n chain input {\n"
                "  type filter hook input priority 0; policy accept;\n"
                f"  udp dport {ROCE_DPORT} drop\n }}\n}}\n"
            ),
        )  # fmt: skip

    def _scripts(self, action: str, switches: tuple[Switch, ...] | None = None) -> None:
        """bmv2_env/<action>.sh for every switch (or these) at once."""
        procs = [
            (
                sw,
                subprocess.Popen(
                    ["bash", str(REPO / f"bmv2_env/{action}.sh")],
                    cwd=REPO,
                    env={
                        **os.environ,
                        **self.env(sw).environ(),
                        "SYMPHONY_LOG_LEVEL": self.log_level,
                    },
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
            for sw in (self.topo.switches if switches is None else switches)
        ]
        errors = []
        for sw, p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                errors.append(f"{sw.name}: {err.strip()}")
        if errors:
            raise FabricError(f"bmv2_env/{action}.sh failed: " + "; ".join(errors))

    def stop(self) -> None:
        """Every switch (by its PID file) and its Thrift guard, then every namespace and
        interface named with the fabric's prefix. Harmless when nothing runs."""
        for t in self._thrift.values():
            t.close()
        self._thrift.clear()
        self._scripts("stop")
        for ns in netns_names():
            if ns.startswith(PREFIX):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for name in link_names():
            if name.startswith(PREFIX):
                subprocess.run(["ip", "link", "del", name], capture_output=True)
        (self.run_dir / STATE).unlink(missing_ok=True)

    def pids(self) -> dict[str, int]:
        """The switches' processes that are alive, by switch name."""
        out = {}
        for sw in self.topo.switches:
            try:
                pid = int((self.run_dir / sw.name / "switch.pid").read_text())
                os.kill(pid, 0)
                out[sw.name] = pid
            except (OSError, ValueError):
                pass
        return out

    def kill(self, switch: str, timeout_s: float = 5.0) -> int:
        """SIGKILL one switch's process, as a switch lost without warning (no clean shutdown, its
        P4Runtime stream simply breaks); its interfaces, PID file and Thrift guard stay, so
        `restart` brings it back on the same ports. Returns the PID it had."""
        pid = self.pids().get(switch)
        if pid is None:
            raise FabricError(f"{switch}: not running (no live process in its PID file)")
        t = self._thrift.pop(switch, None)
        if t is not None:
            t.close()
        os.kill(pid, signal.SIGKILL)
        # start.sh's nohup leaves it to init, which reaps it: wait until the PID is gone.
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return pid
            time.sleep(0.02)
        raise FabricError(f"{switch}: pid {pid} still there {timeout_s:g} s after SIGKILL")

    def restart(self, switch: str) -> None:
        """A fresh bmv2 for one switch on its existing interfaces and ports (bmv2_env/start.sh
        with its environment): no program, no entries, bmv2's default queues; the controller
        pushes pipeline and entries when its session reconnects, the caller re-sets rates."""
        sw = self.topo.switch(switch)
        if switch in self.pids():
            raise FabricError(f"{switch}: already running")
        self._scripts("start", (sw,))

    def leftovers(self) -> list[str]:
        """What of the fabric exists now (empty after `stop`): processes, namespaces,
        interfaces, nftables tables."""
        # bmv2_env/env.sh's thrift_guard_table(), one per switch.
        guards = {f"symphony_thrift_{sw.thrift_port}" for sw in self.topo.switches}
        return (
            [f"process {name} (pid {pid})" for name, pid in self.pids().items()]
            + [f"netns {ns}" for ns in netns_names() if ns.startswith(PREFIX)]
            + [f"link {n}" for n in link_names() if n.startswith(PREFIX)]
            + [f"nft table {t}" for t in nft_tables() if t in guards]
        )

    def set_realtime(self, priority: int) -> bool:
        """Every thread of every switch under SCHED_FIFO at `priority` (threads started later
        inherit it; 0: the normal scheduler), as the experiments' testbed runs its bmv2
        (evaluation/hosts/testbed.py, SWITCH_RT_PRIORITY). False if not allowed."""
        policy = os.SCHED_FIFO if priority > 0 else os.SCHED_OTHER
        try:
            for pid in self.pids().values():
                for tid in os.listdir(f"/proc/{pid}/task"):
                    os.sched_setscheduler(int(tid), policy, os.sched_param(max(priority, 0)))
        except (PermissionError, ProcessLookupError, FileNotFoundError):
            return False
        return True

    # -- the switches' runtime API ----------------------------------------------------------
    def thrift(self, switch: str) -> Bmv2Thrift:
        """One Thrift session per switch, kept until stop()."""
        t = self._thrift.get(switch)
        if t is None:
            t = self._thrift[switch] = Bmv2Thrift("127.0.0.1", self.topo.switch(switch).thrift_port)
        return t

    def set_rates(self, pps: float) -> None:
        """Every egress queue of every switch drains at `pps` packets/s: the emulated links, so
        that they, not the CPU, are the bottleneck."""
        for sw in self.topo.switches:
            self.thrift(sw.name).set_queue_rate(round(pps))

    def set_queue_depth(self, packets: int) -> None:
        for sw in self.topo.switches:
            self.thrift(sw.name).set_queue_depth(packets)

    def write_config(
        self,
        path: Path | None = None,
        *,
        api: str = "127.0.0.1:50051",
        metrics: str = "127.0.0.1:9464",
        controller: str = "",
        extra: str = "",
        ack_priority: bool = False,
    ) -> Path:
        """The controller config (Topology.controller_toml) at `path` (default
        run_dir/controller.toml), its database beside it."""
        path = (path or self.run_dir / "controller.toml").resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            self.topo.controller_toml(
                database=path.parent / "symphony.db",
                api=api,
                metrics=metrics,
                controller=controller,
                extra=extra,
                ack_priority=ack_priority,
            )
        )
        return path


# No periodic reconciliation or telemetry: whatever a switch holds, its session wrote when it
# connected or a job changed (the tests and experiments rely on that).
QUIET_CONTROLLER = "reconcile_interval_s = 600\ntelemetry_interval_s = 600"


@contextmanager
def running(
    topo: Topology,
    work: Path,
    *,
    controller: str = QUIET_CONTROLLER,
    mtu: int = MTU,
    ack_priority: bool = False,
) -> Iterator[tuple[Bmv2Fabric, ControllerProcess]]:
    """The fabric (its run directory under `work`) and the controller daemon on it (config and
    log in `work`), every switch ready, the ACK class on every switch or none; both stopped at
    the end, also on failure."""
    fabric = Bmv2Fabric(topo, work / "run", mtu=mtu)
    api = f"127.0.0.1:{free_port()}"
    for f in work.glob("symphony.db*"):  # a fresh job store (write_config puts it in `work`)
        f.unlink()
    fabric.start()
    try:
        cfg = fabric.write_config(
            work / "controller.toml",
            api=api,
            metrics=f"127.0.0.1:{free_port()}",
            controller=controller,
            ack_priority=ack_priority,
        )
        proc = ControllerProcess(cfg, api, work / "controller.log")
        proc.start()
        try:
            proc.wait_ready([s.name for s in topo.switches])
            yield fabric, proc
        finally:
            proc.stop()
    finally:
        fabric.stop()


def describe(fab: Bmv2Fabric) -> str:
    t = fab.topo
    lines = [f"fabric {t.spec} (leaves x spines x hosts per leaf), run dir {fab.run_dir}"]
    for sw in t.switches:
        lines.append(
            f"  {sw.name:8} P4Runtime {sw.grpc_addr} Thrift {sw.thrift_port} ports "
            + " ".join(f"{p}={n}" for p, n in enumerate(sw.interfaces))
        )
    for h in t.hosts:
        lines.append(f"  {h.name:8} {h.ip:12} {h.mac}  netns {h.netns}, leaf{h.leaf} port {h.port}")
    a, b = t.hosts[0], t.hosts[-1]
    lines.append(f"  try: ip netns exec {a.netns} ping -c 3 {b.ip}   (through {t.path(a, b)})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m symphony_tools.fabric", description=__doc__.splitlines()[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start the fabric and write the controller's config")
    show = sub.add_parser("show", help="print the fabric's switches, ports and hosts")
    for p in (up, show):
        p.add_argument("--leaves", type=int, default=2)
        p.add_argument("--spines", type=int, default=2)
        p.add_argument("--hosts-per-leaf", type=int, default=2)
    up.add_argument(
        "--config", type=Path, help="controller config (default RUN_DIR/controller.toml)"
    )
    up.add_argument("--api", default="127.0.0.1:50051", help="the controller's gRPC API")
    up.add_argument("--metrics", default="127.0.0.1:9464", help="the controller's metrics")
    up.add_argument(
        "--rate",
        type=float,
        default=LINK_PPS,
        help=f"every egress queue's rate, packets/s (default {LINK_PPS}; 0: bmv2's unlimited)",
    )
    up.add_argument(
        "--queue-depth",
        type=int,
        default=QUEUE_DEPTH,
        help=f"every egress queue's depth, packets (default {QUEUE_DEPTH})",
    )
    up.add_argument("--log-level", default="warn", help="bmv2's log level")
    down = sub.add_parser("down", help="stop the fabric: switches, namespaces, links, nft tables")
    for p in (up, show, down):
        p.add_argument("--run-dir", type=Path, default=RUN_DIR)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "down":
            fab = Bmv2Fabric.from_state(args.run_dir) or Bmv2Fabric(run_dir=args.run_dir)
            fab.stop()
            left = fab.leftovers()
            print(f"fabric {fab.topo.spec} stopped" + (f"; LEFT: {left}" if left else ""))
            return 1 if left else 0
        fab = Bmv2Fabric(
            Topology(args.leaves, args.spines, args.hosts_per_leaf),
            args.run_dir.resolve(),
        )
        if args.cmd == "show":
            print(describe(fab))
            return 0
        fab.log_level = args.log_level
        fab.start()
        fab.set_queue_depth(args.queue_depth)
        if args.rate:
            fab.set_rates(args.rate)
        cfg = fab.write_config(
            args.config,
            api=args.api,
            metrics=args.metrics,
            controller="reconcile_interval_s = 30\ntelemetry_interval_s = 5",
        )
        print(describe(fab))
        rate = f"{args.rate:g} packets/s" if args.rate else "unlimited"
        print(f"egress queues: {rate}, {args.queue_depth} packets deep")
        print(f"controller config: {cfg}\n  .venv/bin/symphony-controller --config {cfg}")
        return 0
    except FabricError as exc:
        print(f"fabric: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
