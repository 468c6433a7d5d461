"""SPEC 1: what Symphony does not track crosses the switch unchanged and leaves no state.

Non-RoCE and untracked traffic, and malformed RoCE (truncated BTH, garbage on UDP 4791, IPv4
options, fragments), are forwarded by the plain IPv4/port rules and never touch a job's state.
"""

from base_test import SymphonyTest
from ptf import testutils
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, TCP, UDP, IPOption_NOP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether

from conformance import packets as rp

JOB = 21
HOST = "10.0.0.21"


class NonRoceIsForwardedUnchanged(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, tag=True, hosts=(rp.ip_to_int(HOST),))
        eth = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
        for pkt in (
            eth / IP(src=HOST, dst="10.0.1.9", tos=2) / TCP(sport=1, dport=80) / (b"x" * 40),
            eth / IP(src=HOST, dst="10.0.1.9", tos=2) / UDP(sport=7, dport=4790) / (b"x" * 40),
        ):
            self.assert_forwarded_unchanged(pkt, 0, 1)
        # Not IPv4: the port cross-connect carries it (0 <-> 1).
        self.assert_forwarded_unchanged(eth / IPv6(src="2001::1", dst="2001::2") / UDP(), 0, 1)
        self.assert_forwarded_unchanged(eth / ARP(psrc=HOST, pdst="10.0.0.1"), 1, 0)
        # VLAN is not parsed (yet): a tagged job's RoCE inside a VLAN is left alone.
        roce = rp.rocev2(opcode=rp.WRITE_FIRST, tag=JOB, src=HOST)
        vlan_roce = eth / Dot1Q(vlan=10) / roce[IP]
        self.assert_forwarded_unchanged(vlan_roce, 2, 3)
        testutils.verify_no_other_packets(self)
        self.assert_all_jobs_zero()


class UntrackedRoceIsForwardedUnchanged(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, tag=True)
        for pkt in (
            rp.rocev2(opcode=rp.WRITE_FIRST, tag=0, src="10.0.0.99"),  # untagged, unknown host
            rp.rocev2(opcode=rp.WRITE_FIRST, tag=JOB + 1),  # a tag nobody installed
            rp.rocev2(opcode=rp.ACK, tag=JOB),  # not a data opcode
            rp.rocev2(opcode=rp.CNP, tag=JOB),
        ):
            self.assert_forwarded_unchanged(pkt, 0, 1)
        testutils.verify_no_other_packets(self)
        self.assert_all_jobs_zero()


def _with_options(pkt):
    out = pkt.copy()
    out[IP].options = [IPOption_NOP()] * 4
    out[IP].ihl = None
    out[IP].len = None
    out[IP].chksum = None
    return Ether(bytes(out))


class MalformedRoceNeverChangesState(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, tag=True, hosts=(rp.ip_to_int(HOST),))
        good = rp.rocev2(opcode=rp.WRITE_FIRST, tag=JOB, src=HOST, step=3, psn=77)
        base = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") / IP(
            src=HOST, dst="10.0.1.1", tos=2
        )
        truncated_bth = base / UDP(sport=3, dport=4791) / bytes(good[BTH])[:7]
        truncated_reth = base / UDP(sport=3, dport=4791) / bytes(good[BTH])[:20]
        garbage = base / UDP(sport=3, dport=4791) / (b"\xff" * 40)
        # A tracked opcode and the job's tag, but a BTH version that is not 0.
        bad_version = good.copy()
        bad_version[BTH].version = 3
        first_fragment = good.copy()
        first_fragment[IP].flags = "MF"
        first_fragment[IP].chksum = None
        later_fragment = good.copy()
        later_fragment[IP].frag = 8
        later_fragment[IP].chksum = None
        for pkt in (
            truncated_bth,
            truncated_reth,
            garbage,
            Ether(bytes(bad_version)),
            _with_options(good),
            Ether(bytes(first_fragment)),
            Ether(bytes(later_fragment)),
        ):
            self.assert_forwarded_unchanged(pkt, 0, 1)
        # Without a route the IPv4 rules drop it; still no state.
        unrouted = rp.rocev2(opcode=rp.WRITE_FIRST, tag=JOB, dst="192.0.2.1")
        self.send(unrouted, 0)
        testutils.verify_no_other_packets(self)
        self.assert_all_jobs_zero()
        # The well-formed packet is tracked: the checks above were not vacuous.
        self.roce(good)
        self.assertEqual(self.assert_state(JOB).window_packets, 1)
