"""The emulated hosts' frames are the contract's wire format: byte for byte what the scapy
builders (conformance.packets, scapy.contrib.roce) produce, ICRC included."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scapy.all import raw
from scapy.contrib.roce import AETH, BTH, cnp
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from conformance import packets as rp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluation.fabric.ecmp import CONTROL_SPORT  # the simulator routes ACKs by it
from evaluation.hosts import wire

A = wire.Endpoint("10.0.0.1", "02:00:00:00:00:01")
B = wire.Endpoint("10.0.2.1", "02:00:00:00:00:03")


def scapy_frame(opcode: int, step: int, psn: int, tag: int, dqpn: int, payload: bytes) -> bytes:
    return raw(
        rp.rocev2(
            opcode=opcode,
            step=step,
            psn=psn,
            tag=tag,
            dqpn=dqpn,
            src=A.ip,
            dst=B.ip,
            eth_src=A.mac,
            eth_dst=B.mac,
            payload=payload,
        )
    )


@pytest.mark.parametrize(
    "opcode", [rp.WRITE_FIRST, rp.WRITE_MIDDLE, rp.WRITE_LAST, rp.WRITE_ONLY, rp.SEND_ONLY]
)
@pytest.mark.parametrize(
    ("step", "psn", "tag"), [(0, 0, 1), (65535, 0xFFFFFF, 8191), (7, 12345, 4097)]
)
def test_frames_match_scapy(opcode: int, step: int, psn: int, tag: int) -> None:
    payload = bytes(range(256)) * 4
    want = scapy_frame(opcode, step, psn, tag, 0x123456, payload)
    assert wire.frame(A, B, opcode=opcode, step=step, psn=psn, dqpn=0x123456, tag=tag,
                      payload=payload) == want  # fmt: skip
    frames = wire.FlowFrames(A, B, dqpn=0x123456, tag=tag, payload_len=len(payload))
    frames.payload = payload
    # A template is reused across packets: build another first, then the one we check.
    frames.build(opcode, step ^ 1, psn ^ 1)
    assert frames.build(opcode, step, psn) == want


def test_cnp_matches_scapy() -> None:
    want = raw(
        Ether(src=B.mac, dst=A.mac)
        / IP(src=B.ip, dst=A.ip, tos=0, id=0, flags=0)
        / UDP(sport=CONTROL_SPORT, dport=4791, chksum=0)
        / cnp(0x000101)
    )
    assert wire.cnp(B, A, 0x101) == want


@pytest.mark.parametrize("becn", [0, 1])
def test_ack_matches_scapy(becn: int) -> None:
    want = raw(
        Ether(src=B.mac, dst=A.mac)
        / IP(src=B.ip, dst=A.ip, tos=0, id=0, flags=0)
        / UDP(sport=CONTROL_SPORT, dport=4791, chksum=0)
        / BTH(opcode=rp.ACK, dqpn=0x101, psn=0xABCDEF, becn=becn)
        / AETH(syndrome=wire.ACK_SYNDROME, msn=0)
    )
    f = wire.ack(B, A, 0x101, 0xABCDEF, becn)
    assert f == want and len(f) == 62
    p = wire.parse(f)
    assert p is not None
    assert (p.opcode, p.dqpn, p.psn, p.becn, p.ecn) == (rp.ACK, 0x101, 0xABCDEF, becn, 0)


def test_parse_reads_back_what_was_built() -> None:
    f = wire.frame(A, B, opcode=rp.WRITE_LAST, step=513, psn=0xABCDEF, dqpn=0x42, tag=4097,
                   payload=b"\0" * 64, ecn=wire.CE)  # fmt: skip
    p = wire.parse(f)
    assert p is not None
    assert (p.src, p.dst) == (bytes([10, 0, 0, 1]), bytes([10, 0, 2, 1]))
    assert (p.step, p.opcode, p.psn, p.dqpn, p.tag, p.ecn) == (
        513, rp.WRITE_LAST, 0xABCDEF, 0x42, 4097, wire.CE,
    )  # fmt: skip


def test_parse_rejects_what_is_not_rocev2() -> None:
    f = bytearray(wire.frame(A, B, opcode=rp.WRITE_MIDDLE, step=1, psn=1, dqpn=1, tag=1,
                             payload=b""))  # fmt: skip
    assert wire.parse(bytes(f[:40])) is None  # truncated
    other_udp = bytearray(f)
    other_udp[wire.UDP_OFF + 2 : wire.UDP_OFF + 4] = b"\x00\x35"
    assert wire.parse(bytes(other_udp)) is None
    arp = bytearray(f)
    arp[12:14] = b"\x08\x06"
    assert wire.parse(bytes(arp)) is None
