"""RoCEv2 packet builders on scapy.contrib.roce, plus the RETH layer scapy lacks.

Every builder takes the BTH opcode explicitly: ptf's simple_rocev2_packet defaults to the CNP
opcode, which Symphony does not track, and a silent default here would hide the same mistake.
"""

from __future__ import annotations

from scapy.contrib.roce import BTH
from scapy.fields import IntField, LongField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from symphony.model.opcodes import (  # noqa: F401  (re-exported: the builders' callers use them)
    ACK,
    CNP,
    RETH_OPCODES,
    SEND_FIRST,
    SEND_LAST,
    SEND_LAST_IMM,
    SEND_MIDDLE,
    SEND_ONLY,
    SEND_ONLY_IMM,
    UC,
    WRITE_FIRST,
    WRITE_LAST,
    WRITE_LAST_IMM,
    WRITE_MIDDLE,
    WRITE_ONLY,
    WRITE_ONLY_IMM,
)
from symphony.model.switch_model import RocePacket

ROCEV2_PORT = 4791

TAG_BITS = 13


class RETH(Packet):
    """RDMA Extended Transport Header (IBTA vol. 1, 9.3.3): 16 bytes after the BTH."""

    name = "RETH"
    fields_desc = [LongField("va", 0), IntField("rkey", 0), IntField("dma_len", 0)]


def write_opcode(index: int, count: int) -> int:
    """The RC RDMA WRITE opcode of packet `index` of a `count`-packet message: ONLY for one
    packet, else FIRST, MIDDLE..., LAST (the step-starting and step-completing ones, SPEC 1)."""
    if count == 1:
        return WRITE_ONLY
    if index == 0:
        return WRITE_FIRST
    return WRITE_LAST if index == count - 1 else WRITE_MIDDLE


def split_tag(tag: int) -> tuple[int, int]:
    """A 13-bit Job_ID tag as BTH (resv6, resv7): high 6 bits, low 7 bits."""
    if not 0 <= tag < 1 << TAG_BITS:
        raise ValueError(f"job tag must fit 13 bits: {tag}")
    return tag >> 7, tag & 0x7F


def ip_to_int(addr: str) -> int:
    return int.from_bytes(bytes(map(int, addr.split("."))), "big")


def rocev2(
    *,
    opcode: int,
    step: int = 0,
    psn: int = 0,
    tag: int = 0,
    dqpn: int = 0x11,
    src: str = "10.0.0.1",
    dst: str = "10.0.1.1",
    ecn: int = 0b10,
    payload: bytes = b"\x00" * 64,
    eth_src: str = "00:00:00:00:00:01",
    eth_dst: str = "00:00:00:00:00:02",
) -> Packet:
    """One RoCEv2 data packet with the Symphony fields set: step in the UDP source port and the
    job tag in the BTH reserved bits. A RETH is added on the opcodes that carry one."""
    resv6, resv7 = split_tag(tag)
    bth = BTH(opcode=opcode, dqpn=dqpn, psn=psn, resv6=resv6, resv7=resv7)
    body = bth / RETH(dma_len=len(payload)) if opcode in RETH_OPCODES else bth
    return (
        Ether(src=eth_src, dst=eth_dst)
        / IP(src=src, dst=dst, tos=ecn, id=0, flags=0)
        / UDP(sport=step, dport=ROCEV2_PORT, chksum=0)
        / body
        / payload
    )


def parsed_view(pkt: Packet) -> RocePacket:
    """What the golden model needs from a packet built by `rocev2`."""
    ip, bth = pkt[IP], pkt[BTH]
    return RocePacket(
        src=ip_to_int(ip.src),
        step=pkt[UDP].sport,
        opcode=bth.opcode,
        psn=bth.psn,
        dqpn=bth.dqpn,
        tag=(bth.resv6 << 7) | bth.resv7,
        ecn=ip.tos & 0b11,
    )
