"""The backlog gate (JobParams.gate_depth, issue 21) on a real bmv2 queue: a Symphony mark
leaves as CE only when the packet joins an egress queue at least gate_depth deep (enq_qdepth);
the per-job marks counter still counts every decision, as the golden model does.

A queue builds on bmv2 only behind set_queue_rate, so the backlog test slows port 1 to 50
packets/s and sends a burst faster than that. What timing cannot change is checked: the k-th
packet of the burst joins a queue of at most k - 1 packets, so the first gate_depth packets
never leave marked, and a 40-packet burst into a 50 packets/s queue builds a longer queue.
"""

from base_test import T_WIN_NEVER_US, SymphonyTest
from ptf import testutils
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from conformance import packets as rp
from conformance.packets import parsed_view
from symphony.model.params import JobParams

JOB = 21
LAG = "10.0.0.2"
FAST = "10.0.0.1"
ECT0, CE = 0b10, 0b11
GATE = 4


def pkt(step: int, psn: int, src: str = FAST):
    return rp.rocev2(opcode=rp.WRITE_MIDDLE, step=step, psn=psn, tag=JOB, src=src, ecn=ECT0)


def params(gate: int) -> JobParams:
    # k = 255: P = 1 for every outpacing packet past warm-up, so each decision is a mark.
    return JobParams(
        k=255.0, t_win_us=T_WIN_NEVER_US, n_warmup=4, n_sample=4, psn_mode="absolute",
        gate_depth=gate,
    )  # fmt: skip


class GateHoldsMarksOnAnIdleQueue(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, params(GATE))
        self.roce(pkt(0, 1000, src=LAG))  # psn_rec = 1000: the others run ahead
        outcomes = [self.roce(pkt(1 + i % 3, 10 + i)) for i in range(12)]
        # Every one a mark decision, none leaves marked: one packet at a time never queues.
        self.assertEqual([d.mark for _, d in outcomes], [True] * 12)
        self.assertEqual([ecn for ecn, _ in outcomes], [ECT0] * 12)
        self.assertEqual(self.assert_state(JOB).marks, 12)


class GateLetsMarksOutOfABacklog(SymphonyTest):
    BURST = 40

    def runTest(self) -> None:
        self.install_job(JOB, params(GATE))
        self.roce(pkt(0, 1000, src=LAG))
        self.thrift.set_queue_rate(50, 1)
        self._queue_rates_set = True
        burst = [pkt(1 + i % 3, 10 + i) for i in range(self.BURST)]
        for p in burst:
            self.assertTrue(self.model.process(parsed_view(p), now=0).mark)
            self.send(p, 0)
        got = [Ether(self.receive(1, timeout=5)) for _ in burst]
        testutils.verify_no_other_packets(self)
        ecn = [g[IP].tos & 3 for g in got]
        self.assertEqual([g[rp.BTH].psn for g in got], [p[rp.BTH].psn for p in burst])  # FIFO
        self.assertEqual(ecn[:GATE], [ECT0] * GATE, "marked from a queue below the gate")
        self.assertIn(CE, ecn[GATE:], "a 40-packet burst into a 50 pps queue marked nothing")
        self.assertEqual(set(ecn), {ECT0, CE})
        # The counter counts decisions, gated or not: one per packet, as in the model.
        self.assertEqual(self.assert_state(JOB).marks, self.BURST)
