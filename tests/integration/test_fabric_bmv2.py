"""The bmv2 fabric (symphony_tools/fabric.py) with the controller daemon on it: 2 leaves x 2
spines, 4 hosts in their namespaces; pings between hosts on different leaves cross the spine the
data plane's ECMP hash picks (model/ecmp.py, as Topology.path predicts), a job allocated by
hosts lands on their paths' switches, and stopping leaves nothing behind.

Its own ports (P4Runtime 9859-9862, Thrift 9390-9393, interfaces and namespaces "sf-*"), so it
runs beside the other bmv2 tests. Needs simple_switch_grpc, `make build`'s program, root, nft
and ping (scripts/install_test_deps.sh installs the last two); skips naming what is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import packets as rp
from evaluation.hosts import netns, wire
from symphony.client import Client
from symphony_tools.daemon_process import ControllerProcess
from symphony_tools.fabric import Bmv2Fabric, Topology, fabric_missing
from symphony_tools.fabric import running as fabric_running


def _missing() -> str | None:
    why = fabric_missing()
    if why is None and shutil.which("ping") is None:
        why = "ping not found (Debian package iputils-ping: scripts/install_test_deps.sh)"
    return why


ETH_P_IP = 0x0800
SO_RCVBUFFORCE = 33

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(_missing() is not None, reason=f"bmv2 fabric test skipped: {_missing()}"),
]


class Running:
    def __init__(self, fabric: Bmv2Fabric, controller: ControllerProcess) -> None:
        self.fabric, self.controller = fabric, controller


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    # A fabric of `make fabric` holds the same ports: start() refuses, naming them.
    tmp: Path = tmp_path_factory.mktemp("fabric")
    with fabric_running(Topology(2, 2, 2), tmp) as (fabric, controller):
        yield Running(fabric, controller)


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


def test_a_job_allocated_by_hosts_lands_on_their_paths(running: Running) -> None:
    """The config's topology gives a job its switches: hosts on two leaves -> both leaves and
    every spine (every shortest path); hosts of one leaf -> that leaf alone."""
    with Client(running.controller.api) as c:
        for key, hosts, want in (
            ("across", ["h0", "h2"], {"leaf0", "leaf1", "spine0", "spine1"}),
            ("one-leaf", ["h2", "10.0.1.2"], {"leaf1"}),
        ):
            reply = c.allocate(key, key, switches=[], hosts=hosts)
            assert reply.job.state == "active", reply
            assert {r.switch for r in reply.switches} == want
            assert all(r.status == "installed" for r in reply.switches), reply.switches
            c.release(key)


def test_same_leaf_ping(running: Running) -> None:
    topo = running.fabric.topo
    out = ping(topo.host("h2").netns, topo.host("h3").ip)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_stalled_switch_keeps_1000_frames(running: Running) -> None:
    """bmv2's ports hold what arrives while it is descheduled (here: stopped) in libpcap's
    capture ring: 1000 RoCEv2 frames sent to a stopped leaf all arrive once it runs again (at MTU
    9500 the ring would hold 219, with offloads on 32; docs/fabric.md)."""
    fabric = running.fabric
    h0, h1 = fabric.topo.host(0), fabric.topo.host(1)
    fabric.thrift("leaf0").set_queue_depth(2000)
    tx = netns.packet_socket(h0.ifname, h0.netns, proto=0)
    rx = netns.packet_socket(h1.ifname, h1.netns, proto=ETH_P_IP)
    rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    frames = wire.FlowFrames(
        wire.Endpoint(h0.ip, h0.mac), wire.Endpoint(h1.ip, h1.mac), dqpn=1, tag=0, payload_len=1024
    )
    pid = fabric.pids()["leaf0"]
    os.kill(pid, signal.SIGSTOP)
    try:
        for psn in range(1000):
            tx.send(frames.build(rp.WRITE_MIDDLE, 0, psn))
    finally:
        os.kill(pid, signal.SIGCONT)
    got = 0
    rx.settimeout(3.0)
    try:
        while got < 1000:
            data = rx.recv(65535)
            got += data[36:38] == b"\x12\xb7"  # UDP 4791
    except TimeoutError:
        pass
    finally:
        tx.close()
        rx.close()
    assert got == 1000


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
