"""RoCEv2 frames as bytes, built without scapy on the send path.

The emulated hosts send thousands of packets per second from one Python event loop, so a frame is
a template of fixed header bytes into which the sender writes the PSN, the opcode and the ICRC.
The layout is the one `conformance.packets.rocev2` builds with scapy (Ethernet / IPv4 / UDP 4791 /
BTH / RETH on FIRST and ONLY WRITEs / payload / ICRC); tests/test_hosts_wire.py requires the
two to be byte-identical, so the switch sees exactly the contract's wire format (SPEC 1).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from conformance import packets as rp
from evaluation.fabric.ecmp import CONTROL_SPORT

ETH_LEN, IP_LEN, UDP_LEN, BTH_LEN, RETH_LEN, ICRC_LEN = 14, 20, 8, 12, 16, 4
IP_OFF = ETH_LEN
UDP_OFF = IP_OFF + IP_LEN
BTH_OFF = UDP_OFF + UDP_LEN
ECT0, CE = 0b10, 0b11
CNP_PAD = 16  # a CNP carries 16 reserved bytes after its BTH (RoCEv2 annex A17)
AETH_LEN = 4
# AETH syndrome of a positive ACK (IBTA vol. 1, 9.7.5.1.2): bits 6:5 = 00 (ACK), bits 4:0 the
# credit count, 0x1F: "invalid", end-to-end credits unused (as RoCE NICs send)
ACK_SYNDROME = 0x1F


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def ip_bytes(addr: str) -> bytes:
    return bytes(map(int, addr.split(".")))


def ipv4_checksum(header: bytes) -> int:
    s = sum(struct.unpack("!10H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _ipv4(src: bytes, dst: bytes, tos: int, total: int) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, tos, total, 0, 0, 64, 17, 0, src, dst)
    return hdr[:10] + struct.pack("!H", ipv4_checksum(hdr)) + hdr[12:]


def _bth(opcode: int, dqpn: int, psn: int, tag: int, becn: int = 0) -> bytes:
    resv6, resv7 = rp.split_tag(tag)
    return struct.pack(
        "!BBHBHBBBH",
        opcode,
        0,
        0xFFFF,
        becn << 6 | resv6,
        dqpn >> 8,
        dqpn & 0xFF,
        resv7,
        psn >> 16,
        psn & 0xFFFF,
    )


def icrc(ip_udp_bth_rest: bytes) -> bytes:
    """The RoCEv2 ICRC over the masked pseudo-header (IBTA annex A17.3.3): 8 bytes of ones for
    the LRH, the IPv4 header with TOS, TTL and checksum set to ones, the UDP checksum to ones,
    BTH FECN/BECN/resv6 to ones. ToS is masked, so a CE mark on the way keeps the ICRC valid."""
    b = bytearray(ip_udp_bth_rest)
    b[1] = 0xFF  # tos
    b[8] = 0xFF  # ttl
    b[10:12] = b"\xff\xff"  # ip checksum
    b[IP_LEN + 6 : IP_LEN + 8] = b"\xff\xff"  # udp checksum
    b[IP_LEN + UDP_LEN + 4] |= 0xFF  # fecn, becn, resv6
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF)


@dataclass(frozen=True)
class Endpoint:
    """One emulated NIC: its addresses and the queue pair it sends on."""

    ip: str
    mac: str


def frame(
    src: Endpoint,
    dst: Endpoint,
    *,
    opcode: int,
    step: int,
    psn: int,
    dqpn: int,
    tag: int,
    payload: bytes,
    ecn: int = ECT0,
) -> bytes:
    """One RoCEv2 data packet (what `conformance.packets.rocev2` builds), as bytes."""
    reth = struct.pack("!QII", 0, 0, len(payload)) if opcode in rp.RETH_OPCODES else b""
    body = _bth(opcode, dqpn, psn, tag) + reth + payload
    udp_len = UDP_LEN + len(body) + ICRC_LEN
    ip = _ipv4(ip_bytes(src.ip), ip_bytes(dst.ip), ecn, IP_LEN + udp_len)
    udp = struct.pack("!HHHH", step, rp.ROCEV2_PORT, udp_len, 0)
    rest = ip + udp + body
    eth = mac_bytes(dst.mac) + mac_bytes(src.mac) + b"\x08\x00"
    return eth + rest + icrc(rest)


def cnp(src: Endpoint, dst: Endpoint, dqpn: int) -> bytes:
    """A RoCEv2 CNP (BTH opcode 0x81, BECN set) from a receiver to the sender's QP `dqpn`.
    Not ECN-capable, so no switch marks it, and untracked by Symphony (SPEC 1)."""
    body = _bth(rp.CNP, dqpn, 0, 0, becn=1) + b"\x00" * CNP_PAD
    udp_len = UDP_LEN + len(body) + ICRC_LEN
    ip = _ipv4(ip_bytes(src.ip), ip_bytes(dst.ip), 0, IP_LEN + udp_len)
    udp = struct.pack("!HHHH", CONTROL_SPORT, rp.ROCEV2_PORT, udp_len, 0)
    rest = ip + udp + body
    return mac_bytes(dst.mac) + mac_bytes(src.mac) + b"\x08\x00" + rest + icrc(rest)


def ack(src: Endpoint, dst: Endpoint, dqpn: int, psn: int, becn: int = 0) -> bytes:
    """A RoCEv2 RC ACKNOWLEDGE (BTH opcode 0x11, AETH) from a receiver to the sender's QP
    `dqpn`, acknowledging every PSN up to `psn`. `becn` = 1 carries the congestion notification
    (HPCC's NIC sets a CNP flag in its ACK; InfiniBand's is the ACK's BECN bit). Not
    ECN-capable, untracked by Symphony (SPEC 1); the ACK class (docs/ack_priority.md) takes it."""
    body = _bth(rp.ACK, dqpn, psn, 0, becn=becn) + struct.pack("!I", ACK_SYNDROME << 24)
    udp_len = UDP_LEN + len(body) + ICRC_LEN
    ip = _ipv4(ip_bytes(src.ip), ip_bytes(dst.ip), 0, IP_LEN + udp_len)
    udp = struct.pack("!HHHH", CONTROL_SPORT, rp.ROCEV2_PORT, udp_len, 0)
    rest = ip + udp + body
    return mac_bytes(dst.mac) + mac_bytes(src.mac) + b"\x08\x00" + rest + icrc(rest)


class FlowFrames:
    """Frames of one sender QP: a template per opcode; `build(opcode, step, psn)` patches the
    step, PSN and ICRC (the payload's CRC is computed once and chained)."""

    def __init__(
        self, src: Endpoint, dst: Endpoint, *, dqpn: int, tag: int, payload_len: int
    ) -> None:
        self.src, self.dst, self.dqpn, self.tag = src, dst, dqpn, tag
        self.payload = b"\x00" * payload_len
        self._templates: dict[int, bytearray] = {}

    def _template(self, opcode: int) -> bytearray:
        t = self._templates.get(opcode)
        if t is None:
            t = bytearray(
                frame(
                    self.src,
                    self.dst,
                    opcode=opcode,
                    step=0,
                    psn=0,
                    dqpn=self.dqpn,
                    tag=self.tag,
                    payload=self.payload,
                )
            )
            self._templates[opcode] = t
        return t

    def build(self, opcode: int, step: int, psn: int) -> bytes:
        t = self._template(opcode)
        struct.pack_into("!H", t, UDP_OFF, step)
        t[BTH_OFF + 9 : BTH_OFF + 12] = psn.to_bytes(3, "big")
        t[-4:] = icrc(bytes(t[ETH_LEN:-4]))
        return bytes(t)


@dataclass(frozen=True)
class Parsed:
    """What a host reads from a received RoCEv2 frame."""

    src: bytes  # 4 bytes
    dst: bytes
    ecn: int
    step: int
    opcode: int
    dqpn: int
    psn: int
    tag: int
    becn: int = 0


def parse(data: bytes) -> Parsed | None:
    """A RoCEv2 frame's fields, or None for anything else (ARP, other UDP, short frames)."""
    if len(data) < BTH_OFF + BTH_LEN or data[12:14] != b"\x08\x00" or data[IP_OFF] != 0x45:
        return None
    if data[IP_OFF + 9] != 17 or data[UDP_OFF + 2 : UDP_OFF + 4] != b"\x12\xb7":
        return None
    b = BTH_OFF
    return Parsed(
        src=data[IP_OFF + 12 : IP_OFF + 16],
        dst=data[IP_OFF + 16 : IP_OFF + 20],
        ecn=data[IP_OFF + 1] & 0b11,
        step=int.from_bytes(data[UDP_OFF : UDP_OFF + 2], "big"),
        opcode=data[b],
        dqpn=int.from_bytes(data[b + 5 : b + 8], "big"),
        psn=int.from_bytes(data[b + 9 : b + 12], "big"),
        tag=(data[b + 4] & 0x3F) << 7 | data[b + 8] & 0x7F,
        becn=data[b + 4] >> 6 & 1,
    )
