"""ECMP (docs/design.md "ECMP"): a route onto a group leaves on the member port the Python hash
(symphony.model.ecmp.next_hop) predicts, frame by frame, for RoCEv2, other UDP and non-UDP IPv4
(whose ports hash as 0). The entries are the controller's own (switch/desired.py). Symphony
tracks frames forwarded through a group as through a plain route, and leaves a frame the member
table drops untracked.
"""

import random

from base_test import SymphonyTest
from ptf import testutils
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP
from scapy.layers.l2 import Ether

from conformance import packets as rp
from symphony.model.ecmp import ecmp_bucket, next_hop
from symphony.sizes import ECMP_BUCKETS
from symphony.switch import desired

IN_PORT = 0
# Groups over the suite's ports 1..3 (port 0 sends), and the /16 routed onto each.
GROUPS = {1: (3, 1), 2: (2, 3, 1), 3: (2,)}
PREFIX = {1: "10.1.0.0", 2: "10.2.0.0", 3: "10.3.0.0"}
EMPTY_GROUP, EMPTY_PREFIX = 9, "10.9.0.0"  # a route onto a group with no member entries
FRAMES_PER_GROUP = 160
ETH = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")


def _ip(text: str) -> int:
    return rp.ip_to_int(text)


def _addr(value: int) -> str:
    return ".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0))


class EcmpTest(SymphonyTest):
    def install_groups(self, groups: dict[int, tuple[int, ...]], prefixes: dict[int, str]) -> None:
        """Each group's member entries, then the routes naming them (the controller's order)."""
        for group, members in groups.items():
            self.write(desired.ecmp_group_entries(group, members))
        for group, prefix in prefixes.items():
            self.write([desired.ecmp_route(_ip(prefix), 16, group)])

    def expect(self, pkt, members: tuple[int, ...]) -> int:
        """Send one frame; it must leave unchanged on the predicted member. Returns that port."""
        ip = pkt[IP]
        sport = dport = 0
        if UDP in pkt and not ip.options:  # the parser takes only option-less IPv4 to UDP
            sport, dport = pkt[UDP].sport, pkt[UDP].dport
        port = next_hop(members, _ip(ip.src), _ip(ip.dst), ip.proto, sport, dport)
        self.assert_forwarded_unchanged(pkt, IN_PORT, port)
        return port


class FramesLeaveOnThePredictedMember(EcmpTest):
    """Groups of 2, 3 and 1 member; RoCEv2 and other UDP with varied addresses and ports."""

    def runTest(self) -> None:
        self.install_groups(GROUPS, PREFIX)
        rng = random.Random(31)
        for group, members in GROUPS.items():
            seen_ports, seen_buckets = set(), set()
            base = _ip(PREFIX[group])
            for i in range(FRAMES_PER_GROUP):
                src = _addr(0x0A000000 | rng.getrandbits(16))
                dst = _addr(base | rng.getrandbits(16))
                sport = rng.getrandbits(16)
                if i % 4:
                    pkt = rp.rocev2(opcode=rp.WRITE_MIDDLE, src=src, dst=dst, step=sport, psn=i)
                else:
                    dport = rng.choice((53, 4790, 4792, rng.getrandbits(16)))
                    pkt = ETH / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport) / (b"u" * 30)
                seen_ports.add(self.expect(pkt, members))
                seen_buckets.add(ecmp_bucket(_ip(src), _ip(dst), 17, sport, pkt[UDP].dport))
            # Not vacuous: the frames covered every bucket, so every member carried some.
            self.assertEqual(seen_buckets, set(range(ECMP_BUCKETS)), f"group {group}")
            self.assertEqual(seen_ports, set(members), f"group {group}")
        testutils.verify_no_other_packets(self)


class NonUdpHashesWithZeroPorts(EcmpTest):
    """TCP and ICMP, and UDP behind IPv4 options (not parsed as UDP): their ports count 0."""

    def runTest(self) -> None:
        self.install_groups({2: GROUPS[2]}, {2: PREFIX[2]})
        rng = random.Random(32)
        seen = set()
        for i in range(60):
            src = _addr(0x0A000000 | rng.getrandbits(16))
            dst = _addr(_ip(PREFIX[2]) | rng.getrandbits(16))
            if i % 3 == 0:
                l4 = TCP(sport=rng.getrandbits(16), dport=80)
            elif i % 3 == 1:
                l4 = ICMP(id=rng.getrandbits(16))
            else:
                l4 = UDP(sport=rng.getrandbits(16), dport=4791)
            ip = IP(src=src, dst=dst, options=[IPOption_NOP()] * 4 if i % 3 == 2 else [])
            pkt = Ether(bytes(ETH / ip / l4 / (b"n" * 30)))
            seen.add(self.expect(pkt, GROUPS[2]))
        self.assertEqual(seen, set(GROUPS[2]))
        testutils.verify_no_other_packets(self)


class SymphonyTracksFramesRoutedThroughAGroup(EcmpTest):
    """A tracked job's RoCE through a group updates its state as the golden model does; a frame
    whose group has no member entries is dropped and leaves no state."""

    def runTest(self) -> None:
        self.install_groups({1: GROUPS[1]}, {1: PREFIX[1], EMPTY_GROUP: EMPTY_PREFIX})
        job = 12
        self.install_job(job, tag=True)
        for i, op in enumerate([rp.WRITE_FIRST, rp.WRITE_MIDDLE, rp.WRITE_LAST]):
            pkt = rp.rocev2(opcode=op, tag=job, step=5, psn=i, src="10.0.0.12", dst="10.1.3.4")
            out = next_hop(GROUPS[1], _ip("10.0.0.12"), _ip("10.1.3.4"), 17, 5, 4791)
            self.roce(pkt, IN_PORT, out)
        state = self.assert_state(job)
        self.assertEqual(state.window_packets, 3)
        dropped = rp.rocev2(opcode=rp.WRITE_FIRST, tag=job, step=9, src="10.0.0.12", dst="10.9.0.1")
        self.send(dropped, IN_PORT)
        testutils.verify_no_other_packets(self)
        self.assertEqual(self.assert_state(job), state)
