"""Probing the bmv2 fabric from its hosts: one RoCEv2 frame per ECMP bucket between two hosts on
different leaves, which of them arrive, and which spine they crossed (the veth counters of the
spines' ports from the source leaf); every switch's table entries read over P4Runtime.

Used by the spine-loss measurement (fabric_failover.py) and its test
(tests/integration/test_fabric_failover_bmv2.py).
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from finsy.proto import p4r
from finsy.proto.p4.config.v1 import p4info_pb2
from finsy.proto.p4.v1 import p4runtime_pb2_grpc
from google.protobuf import text_format

from conformance import packets as rp
from evaluation.hosts import netns, wire
from symphony.model.ecmp import ecmp_bucket
from symphony.sizes import ECMP_BUCKETS
from symphony_tools.fabric import ROCE_DPORT, Bmv2Fabric, Host, Topology, ip_int

ETH_P_IP = 0x0800
SO_RCVBUFFORCE = 33
UDP_PROTO = 17
PSN_OFF = wire.BTH_OFF + 9


def bucket_sports(src: Host, dst: Host, per_bucket: int = 1) -> dict[int, list[int]]:
    """For every ECMP bucket, `per_bucket` UDP source ports (the step in tag mode) whose 5-tuple
    src -> dst:4791 falls in it (model/ecmp.py): the flows that cover every bucket."""
    out: dict[int, list[int]] = {b: [] for b in range(ECMP_BUCKETS)}
    sport = 1
    while any(len(v) < per_bucket for v in out.values()):
        b = ecmp_bucket(ip_int(src.ip), ip_int(dst.ip), UDP_PROTO, sport, ROCE_DPORT)
        if len(out[b]) < per_bucket:
            out[b].append(sport)
        sport += 1
    return out


def rx_packets(ifname: str) -> int:
    return int(Path(f"/sys/class/net/{ifname}/statistics/rx_packets").read_text())


@dataclass
class Round:
    """One probe round: the frames (by UDP source port) that arrived, and how many frames
    entered each spine from the source leaf meanwhile."""

    sent: list[int]
    arrived: set[int]
    via: dict[int, int]  # spine -> frames it received from the source leaf

    @property
    def lost(self) -> list[int]:
        return [s for s in self.sent if s not in self.arrived]


class Prober:
    """Frames src -> dst (hosts on different leaves) from inside their namespaces."""

    def __init__(self, fabric: Bmv2Fabric, src: Host, dst: Host, *, tag: int = 0) -> None:
        self.topo: Topology = fabric.topo
        self.src, self.dst = src, dst
        self.frames = wire.FlowFrames(
            wire.Endpoint(src.ip, src.mac),
            wire.Endpoint(dst.ip, dst.mac),
            dqpn=1,
            tag=tag,
            payload_len=64,
        )
        self.tx = netns.packet_socket(src.ifname, src.netns, proto=0)
        self.rx = netns.packet_socket(dst.ifname, dst.netns, proto=ETH_P_IP)
        self.rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
        self.rx.setblocking(False)
        self.psn = 0

    def close(self) -> None:
        self.tx.close()
        self.rx.close()

    def spine_ports(self) -> dict[int, str]:
        """Each spine's interface from the source leaf."""
        return {j: self.topo.spine_if(j, self.src.leaf) for j in range(self.topo.spines)}

    def drain(self) -> None:
        while True:
            try:
                self.rx.recv(65535)
            except BlockingIOError:
                return

    def send(self, sport: int) -> None:
        self.tx.send(self.frames.build(rp.WRITE_MIDDLE, sport, self.psn & 0xFFFFFF))
        self.psn += 1

    def receive(self, want: set[int], timeout_s: float) -> set[int]:
        """UDP source ports of RoCEv2 frames that arrive at dst within `timeout_s`."""
        got: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while not want <= got:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.rx], [], [], left)[0]:
                break
            try:
                data = self.rx.recv(65535)
            except BlockingIOError:
                continue
            if data[wire.UDP_OFF + 2 : wire.UDP_OFF + 4] == ROCE_DPORT.to_bytes(2, "big"):
                got.add(int.from_bytes(data[wire.UDP_OFF : wire.UDP_OFF + 2], "big"))
        return got

    def round(self, sports: list[int], timeout_s: float = 1.0) -> Round:
        """One frame per source port; what arrived and where it crossed."""
        self.drain()
        ports = self.spine_ports()
        before = {j: rx_packets(n) for j, n in ports.items()}
        for s in sports:
            self.send(s)
        arrived = self.receive(set(sports), timeout_s)
        time.sleep(0.05)  # the counters of frames that did not arrive (a dead spine's port)
        return Round(sports, arrived, {j: rx_packets(n) - before[j] for j, n in ports.items()})


def table_entries(grpc_addr: str, device_id: int = 0) -> dict[int, set[bytes]]:
    """Every table entry of one switch (P4Runtime wildcard read), by table id, serialized."""
    out: dict[int, set[bytes]] = {}
    with grpc.insecure_channel(grpc_addr) as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        req = p4r.ReadRequest(
            device_id=device_id, entities=[p4r.Entity(table_entry=p4r.TableEntry())]
        )
        for reply in stub.Read(req, timeout=10):
            for ent in reply.entities:
                te = ent.table_entry
                out.setdefault(te.table_id, set()).add(te.SerializeToString(deterministic=True))
    return out


def table_ids(p4info_path: Path) -> dict[str, int]:
    """P4Info table name -> id."""
    info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    return {t.preamble.name: t.preamble.id for t in info.tables}


def pipeline_cookie(grpc_addr: str, device_id: int = 0) -> int:
    """The cookie of the switch's forwarding pipeline (the controller's hash of P4Info and
    device config; 0 without a pipeline)."""
    with grpc.insecure_channel(grpc_addr) as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        reply = stub.GetForwardingPipelineConfig(
            p4r.GetForwardingPipelineConfigRequest(
                device_id=device_id,
                response_type=p4r.GetForwardingPipelineConfigRequest.ResponseType.COOKIE_ONLY,
            ),
            timeout=10,
        )
        return int(reply.config.cookie.cookie)
