"""The model's frame layer (conformance/frames.py) and the fuzz generator, without a switch: the
parser agrees with scapy on valid frames and stops where the P4 parser stops, the ECN rewrite
keeps a correct checksum correct, forwarding is longest prefix (onto a port or an ECMP group's
member) / cross-connect / drop, plans are
reproducible from their seed."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP, UDP, IPOption_NOP
from scapy.layers.l2 import Ether

from conformance import packets as rp
from conformance.frames import FrameModel, parse, with_ce
from symphony.model.ecmp import next_hop

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ptf_tests"))
from fuzz_frames import generate  # the PTF suite's modules live in ptf_tests/
from sequences import generate as valid_sequence


@pytest.mark.parametrize("seed", range(5))
def test_parse_agrees_with_scapy_on_valid_frames(seed):
    for pkt in valid_sequence(seed, packets=40).items:
        if isinstance(pkt, tuple):
            continue
        got = parse(bytes(pkt))
        assert not got.error and got.ipv4 == 14 and got.tver == 0
        assert got.roce == rp.parsed_view(pkt)


def test_truncations_end_where_the_p4_parser_ends():
    first = bytes(rp.rocev2(opcode=rp.WRITE_FIRST, tag=5))  # carries a RETH: 70 header bytes
    middle = bytes(rp.rocev2(opcode=rp.WRITE_MIDDLE, tag=5))  # 54 header bytes
    for n in range(14, 90):
        a, b = parse(first[:n]), parse(middle[:n])
        assert a.error == (n < 70) and (a.roce is not None) == (n >= 70), n
        assert b.error == (n < 54) and (b.roce is not None) == (n >= 54), n
        assert (a.ipv4 is not None) == (n >= 34), n


@pytest.mark.parametrize(
    ("change", "tracked"),
    [
        ({}, True),
        ({"version": 6}, False),
        ({"ihl": 6}, False),
        ({"flags": 1}, False),  # MF
        ({"frag": 3}, False),
        ({"proto": 6}, False),
    ],
)
def test_only_plain_ipv4_reaches_the_bth(change, tracked):
    pkt = rp.rocev2(opcode=rp.WRITE_FIRST, tag=5)
    for k, v in change.items():
        setattr(pkt[IP], k, v)
    assert (parse(bytes(pkt)).roce is not None) == tracked


@pytest.mark.parametrize("ecn", [0b01, 0b10])
def test_ce_patch_keeps_a_correct_checksum_correct(ecn):
    pkt = Ether(bytes(rp.rocev2(opcode=rp.WRITE_FIRST, ecn=ecn, src="10.0.3.77")))
    marked = Ether(with_ce(bytes(pkt), 14))
    assert marked[IP].tos & 3 == 3
    redone = marked.copy()
    redone[IP].chksum = None
    assert Ether(bytes(redone))[IP].chksum == marked[IP].chksum


def test_forwarding_longest_prefix_cross_connect_drop():
    sw = FrameModel(routes=[(0x0A000000, 8, 3), (0x0A000100, 24, 1)], port_map={0: 1})
    frame = bytes(rp.rocev2(opcode=rp.ACK, dst="10.0.1.9"))
    assert sw.handle(frame, 0, now=0).port == 1
    assert sw.handle(bytes(rp.rocev2(opcode=rp.ACK, dst="10.7.0.1")), 0, now=0).port == 3
    assert sw.handle(bytes(rp.rocev2(opcode=rp.ACK, dst="192.0.2.1")), 0, now=0).port is None
    arp_like = frame[:12] + b"\x08\x06" + frame[14:]
    assert sw.handle(arp_like, 0, now=0).port == 1
    assert sw.handle(arp_like, 2, now=0).port is None


def test_forwarding_onto_an_ecmp_group_follows_the_hash():
    """A route onto a group leaves on the member model/ecmp.py picks; without UDP (here TCP, and
    UDP behind IPv4 options, which the parser does not take to UDP) the ports hash as 0."""
    sw = FrameModel(
        routes=[(0x0A000100, 24, 1)],
        ecmp_routes=[(0x0A000000, 8, 7), (0x0A000200, 24, 9)],
        groups={7: (4, 2, 6)},
    )
    for sport in range(40):
        frame = bytes(rp.rocev2(opcode=rp.ACK, src="10.0.3.1", dst="10.7.0.1", step=sport))
        want = next_hop((2, 4, 6), 0x0A000301, 0x0A070001, 17, sport, 4791)
        assert sw.handle(frame, 0, now=0).port == want
    assert sw.handle(bytes(rp.rocev2(opcode=rp.ACK, dst="10.0.1.9")), 0, now=0).port == 1
    # Group 9 has no members: the member table misses and drops.
    assert sw.handle(bytes(rp.rocev2(opcode=rp.ACK, dst="10.0.2.9")), 0, now=0).port is None
    tcp = Ether() / IP(src="10.0.3.1", dst="10.7.0.1") / TCP(sport=5, dport=80)
    want = next_hop((2, 4, 6), 0x0A000301, 0x0A070001, 6, 0, 0)
    assert sw.handle(bytes(tcp), 0, now=0).port == want
    udp_opts = (
        Ether()
        / IP(src="10.0.3.1", dst="10.7.0.1", options=[IPOption_NOP()] * 4)
        / UDP(sport=5, dport=4791)
    )
    want = next_hop((2, 4, 6), 0x0A000301, 0x0A070001, 17, 0, 0)
    assert sw.handle(bytes(udp_opts), 0, now=0).port == want


def test_fuzz_plans_are_reproducible_and_cover_every_mutation():
    a, b = generate(7, 2000), generate(7, 2000)
    assert a.frames == b.frames and a.jobs == b.jobs
    assert generate(8, 2000).frames != a.frames
    kinds = Counter(k.split(":")[0] for _, k, _ in a.frames)
    assert set(kinds) >= {
        "valid", "field", "truncate", "truncate-sweep", "ip-version", "bth-tver", "fragment",
        "vlan", "trailer", "udp-port", "ip-proto",
    }  # fmt: skip
    assert len(a.jobs) == 4 and {j.tag for j in a.jobs} == {True, False}
