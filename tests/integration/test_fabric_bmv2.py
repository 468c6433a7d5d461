"""The bmv2 fabric (symphony_tools/fabric.py) with the controller daemon on it: 2 leaves x 2
spines, 4 hosts in their namespaces; pings between hosts on different leaves cross the spine the
config's routes name, and stopping leaves nothing behind.

Its own ports (P4Runtime 9859-9862, Thrift 9390-9393, interfaces and namespaces "sf-*"), so it
runs beside the other bmv2 tests. Needs simple_switch_grpc, `make build`'s program, root, nft and
ping (scripts/install_test_deps.sh installs the last two); skips naming what is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from symphony_tools.daemon_process import ControllerProcess
from symphony_tools.fabric import RUN_DIR, Bmv2Fabric, Topology
from symphony_tools.ports import free_port
from symphony_tools.testbed import bmv2_missing


def _missing() -> str | None:
    why = bmv2_missing()
    if why:
        return why
    for tool, pkg in (("nft", "nftables"), ("ping", "iputils-ping"), ("ip", "iproute2")):
        if shutil.which(tool) is None and shutil.which(tool, path="/usr/sbin:/sbin") is None:
            return f"{tool} not found (Debian package {pkg}: scripts/install_test_deps.sh)"
    return None


pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(_missing() is not None, reason=f"bmv2 fabric test skipped: {_missing()}"),
]


class Running:
    def __init__(self, fabric: Bmv2Fabric, controller: ControllerProcess) -> None:
        self.fabric, self.controller = fabric, controller


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    user = Bmv2Fabric(Topology(), RUN_DIR)
    if user.pids():
        pytest.fail(f"a fabric of `make fabric` is running ({user.pids()}): `make stop` first")
    tmp: Path = tmp_path_factory.mktemp("fabric")
    fabric = Bmv2Fabric(Topology(2, 2, 2), tmp / "run")
    api = f"127.0.0.1:{free_port()}"
    fabric.start()
    try:
        cfg = fabric.write_config(
            tmp / "controller.toml",
            api=api,
            metrics=f"127.0.0.1:{free_port()}",
            controller="reconcile_interval_s = 600\ntelemetry_interval_s = 600",
        )
        controller = ControllerProcess(cfg, api, tmp / "controller.log")
        controller.start()
        try:
            controller.wait_ready([s.name for s in fabric.topo.switches])
            yield Running(fabric, controller)
        finally:
            controller.stop()
    finally:
        fabric.stop()


def rx_packets(ifname: str) -> int:
    return int(Path(f"/sys/class/net/{ifname}/statistics/rx_packets").read_text())


def ping(src_ns: str, dst_ip: str, count: int = 3) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", src_ns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", dst_ip],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_every_switch_ready_with_its_routes(running: Running) -> None:
    assert running.fabric.pids().keys() == {s.name for s in running.fabric.topo.switches}


def test_pings_between_leaves_cross_the_named_spine(running: Running) -> None:
    topo = running.fabric.topo
    pairs = [(s, d) for s in topo.hosts for d in topo.hosts if s.leaf != d.leaf]
    assert len(pairs) == 8
    for src, dst in pairs:
        # Each direction's spine: the requests' and the replies' (the uplink is chosen by the
        # destination's leaf, so the two may differ).
        ways = [(src, dst), (dst, src)]
        inbound = {}
        for a, b in ways:
            spine = topo.path(a, b)[1]
            j = int(spine.removeprefix("spine"))
            inbound[(a.index, b.index)] = (
                topo.spine_if(j, a.leaf),  # spine's port from a's leaf
                topo.leaf_if(b.leaf, topo.uplink(j)),  # b's leaf's port from that spine
            )
        others = [
            topo.spine_if(j, a.leaf)
            for a, b in ways
            for j in range(topo.spines)
            if topo.spine_name(j) != topo.path(a, b)[1]
        ]
        before = {n: rx_packets(n) for v in inbound.values() for n in v} | {
            n: rx_packets(n) for n in others
        }
        out = ping(src.netns, dst.ip)
        assert out.returncode == 0, f"{src.name} -> {dst.name}: {out.stdout}{out.stderr}"
        assert " 3 received" in out.stdout, out.stdout
        for n in [n for v in inbound.values() for n in v]:
            assert rx_packets(n) - before[n] >= 3, f"{src.name} -> {dst.name}: nothing on {n}"
        for n in others:
            assert rx_packets(n) == before[n], f"{src.name} -> {dst.name}: frames on {n}"


def test_same_leaf_ping(running: Running) -> None:
    topo = running.fabric.topo
    out = ping(topo.host("h2").netns, topo.host("h3").ip)
    assert out.returncode == 0, out.stdout + out.stderr


def test_stop_leaves_nothing(running: Running) -> None:
    proc = running.controller.proc
    assert proc is not None
    pids = running.fabric.pids()
    assert len(pids) == 4
    running.controller.stop()
    assert proc.poll() is not None
    running.fabric.stop()
    assert running.fabric.leftovers() == []
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # the switch's process is gone (not merely its PID file)
