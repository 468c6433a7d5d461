"""SPEC 6: queue-depth ECN marking on a real bmv2 queue, ORed with Symphony.

A queue only builds up on bmv2 when its egress rate is limited (set_queue_rate), so the test
slows port 1 to 50 packets/s and sends a burst faster than that. The ramp is made
deterministic (P_max = 0, so depths K_min..K_max never mark and depths above K_max always do);
which packets see which depth depends on timing, so the checks are the ones timing cannot
change: the last packets of the burst leave a short queue behind them, and a 40-packet burst
into a 50 packets/s queue builds one longer than K_max.
"""

from base_test import SymphonyTest
from ptf import testutils
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from conformance import packets as rp
from symphony.model.params import QueueParams

JOB = 17


def udp(i: int, ecn: int) -> Ether:
    return (
        Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
        / IP(src="10.0.0.50", dst="10.0.1.50", tos=ecn, id=i)
        / UDP(sport=1000 + i, dport=5000)
        / (b"q" * 100)
    )


class QueueDepthMarksAboveKMax(SymphonyTest):
    BURST = 40

    def runTest(self) -> None:
        self.install_job(JOB)  # tracked RoCE in the burst feeds the per-job queue counter
        self.set_queue_marking(1, QueueParams(k_min=4, k_max=6, p_max=0.0), rate_pps=50)
        sent = []
        for i in range(self.BURST):
            if i % 4 == 3:
                pkt = rp.rocev2(opcode=rp.WRITE_MIDDLE, step=0, psn=i, tag=JOB, ecn=0b10)
            else:
                pkt = udp(i, 0b10 if i % 2 else 0b00)  # ECT(0) and Non-ECT alternate
            sent.append(pkt)
            self.send(pkt, 0)
        got = [Ether(self.receive(1, timeout=5)) for _ in sent]
        testutils.verify_no_other_packets(self)
        ecn = [g[IP].tos & 3 for g in got]
        # FIFO order is kept; Non-ECT is never changed.
        self.assertEqual([g[IP].id for g in got], [s[IP].id for s in sent])
        for s, e in zip(sent, ecn, strict=True):
            if s[IP].tos & 3 == 0:
                self.assertEqual(e, 0)
        # The last packets of the burst leave with fewer than K_min packets behind them (the
        # k-th last sees at most k - 1), whatever the timing: never marked.
        self.assertEqual(ecn[-4:], [s[IP].tos & 3 for s in sent[-4:]])
        ect_marked = [e == 3 for s, e in zip(sent, ecn, strict=True) if s[IP].tos & 3 == 2]
        self.assertTrue(any(ect_marked), "a 40-packet burst into a 50 pps queue marked nothing")
        roce_marked = sum(e == 3 for s, e in zip(sent, ecn, strict=True) if s.haslayer(rp.BTH))
        self.assertEqual(self.switch_state(JOB).queue_marks, roce_marked)
        self.assertEqual(self.switch_state(JOB).marks, 0)  # Symphony itself marked nothing


class NoQueueNoMarks(SymphonyTest):
    def runTest(self) -> None:
        self.set_queue_marking(1, QueueParams(k_min=4, k_max=6, p_max=0.0), rate_pps=0)
        for i in range(10):  # one at a time: the queue never holds more than one packet
            pkt = udp(i, 0b10)
            self.assert_forwarded_unchanged(pkt, 0, 1)
