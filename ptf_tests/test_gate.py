"""The backlog gate (JobParams.gate_depth, issue 21) on a real bmv2 queue: a Symphony mark
leaves as CE only when the packet joins an egress queue at least gate_depth deep (enq_qdepth);
the per-job marks counter still counts every decision, as the golden model does.

A queue builds on bmv2 only behind set_queue_rate, so the backlog test slows port 1 to 50
packets/s and sends a burst faster than that. What timing cannot change is checked: the k-th
packet of the burst joins a queue of at most k - 1 packets, so the first gate_depth packets
never leave marked, and a 40-packet burst into a 50 packets/s queue builds a longer queue.
"""

import math
import time

from base_test import T_WIN_NEVER_US, SymphonyTest, binomial_bounds
from ptf import testutils
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from conformance import packets as rp
from conformance.packets import parsed_view
from symphony.model import arithmetic as ar
from symphony.model.params import JobParams

JOB = 21
LAG = "10.0.0.2"
FAST = "10.0.0.1"
ECT0, CE = 0b10, 0b11
GATE = 4


def pkt(step: int, psn: int, src: str = FAST):
    return rp.rocev2(opcode=rp.WRITE_MIDDLE, step=step, psn=psn, tag=JOB, src=src, ecn=ECT0)


def params(gate: int, k: float = 255.0) -> JobParams:
    # k = 255: P = 1 for every outpacing packet past warm-up, so each decision is a mark.
    return JobParams(
        k=k, t_win_us=T_WIN_NEVER_US, n_warmup=4, n_sample=4, psn_mode="absolute",
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
        self.backlog_queue(1, 50)
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


class GateMarksBinomiallyBehindABacklog(SymphonyTest):
    """Past the gate a mark leaves with the model's probability: at P of about 0.5, the CE share
    of the packets that certainly joined a queue at least GATE deep lies within 99.9 % binomial
    bounds (P = 1 is the test above, P = 0 never marks: test_marking).

    Which packets are certainly past the gate follows from the send time, not from a timing
    assumption: by the time packet i is enqueued at most 1 + RATE x (elapsed + SLACK) packets
    have left, so from i = GATE + that number on, each joins at least GATE packets."""

    BURST = 200
    RATE = 20  # packets/s out of port 1: the burst drains in 10 s
    SLACK_S = 0.5  # ingress may lag the sender; half a second of it is 10 more packets

    def runTest(self) -> None:
        self.install_job(JOB, params(GATE, k=1.0))
        self.roce(pkt(0, 100, src=LAG))  # psn_rec = 100
        probe = pkt(1, 50)  # outpacing, P = k * alpha * 50 / 100; repeating it changes no state
        self.backlog_queue(1, self.RATE, depth_pkts=self.BURST + 8)
        t0 = time.monotonic()
        thresholds = set()
        for _ in range(self.BURST):
            thresholds.add(self.model.process(parsed_view(probe), now=0).threshold)
            self.send(probe, 0)
        elapsed = time.monotonic() - t0
        self.assertEqual(len(thresholds), 1)  # one P for the whole burst
        expected = ar.applied_probability(thresholds.pop())
        self.assertAlmostEqual(expected, 0.5, delta=0.02)
        got = [Ether(self.receive(1, timeout=5)) for _ in range(self.BURST)]
        testutils.verify_no_other_packets(self)
        ce = [g[IP].tos & 3 == CE for g in got]
        self.assertFalse(any(ce[:GATE]), "marked from a queue below the gate")
        past = GATE + 1 + math.ceil(self.RATE * (elapsed + self.SLACK_S))
        counted = ce[past:]
        self.assertGreaterEqual(len(counted), 100, f"sending took {elapsed:.2f} s")
        low, high = binomial_bounds(len(counted), expected)
        self.assertTrue(
            low <= sum(counted) <= high, f"P={expected:.4f}: {sum(counted)}/{len(counted)}"
        )
        # Every decision is counted, CE or gated; how many is random, the rest of the state not.
        self.assertGreaterEqual(self.assert_state(JOB, counters=False).marks, sum(ce))
