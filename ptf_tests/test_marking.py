"""SPEC 4.4, 4.5 and 5: who is marked, with which probability, and what a mark changes."""

from base_test import T_WIN_NEVER_US, SymphonyTest, binomial_bounds

from conformance import packets as rp
from symphony.model import arithmetic as ar
from symphony.model.params import JobParams

JOB = 9
LAG = "10.0.0.2"
FAST = "10.0.0.1"
ECT0, ECT1, CE, NOT_ECT = 0b10, 0b01, 0b11, 0b00


def pkt(op: int, step: int, psn: int, src: str = FAST, ecn: int = ECT0):
    return rp.rocev2(opcode=op, step=step, psn=psn, tag=JOB, src=src, ecn=ecn)


def params(**kw) -> JobParams:
    base = JobParams(t_win_us=T_WIN_NEVER_US, n_warmup=4, n_sample=4, psn_mode="absolute")
    return base.merged(kw)


class LaggingPacketsAreNeverMarked(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, params(k=255.0))
        self.roce(pkt(rp.WRITE_LAST, 2, 7, src=FAST))  # step_min = 3
        self.roce(pkt(rp.WRITE_MIDDLE, 3, 100, src=LAG))  # psn_rec = 100
        # With k = 255 any outpacing packet would be marked; these are at or behind step_min.
        marks = self.roce_marks([pkt(rp.WRITE_MIDDLE, s, 500, src=LAG) for s in (3, 3, 2, 1)])
        self.assertEqual(marks, [False] * 4)
        self.assertEqual(self.assert_state(JOB).step_min, 1)  # late arrivals moved it back
        # Once step_min is 1, a step-3 packet runs ahead: the same k marks it.
        self.assertEqual(self.roce_marks([pkt(rp.WRITE_MIDDLE, 3, 500, src=FAST)]), [True])


class WarmupSuppressesMarks(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, params(k=255.0, n_warmup=100))
        self.roce(pkt(rp.WRITE_MIDDLE, 0, 100, src=LAG))  # psn_rec = 100 = N_warmup
        self.assertEqual(
            self.roce_marks([pkt(rp.WRITE_MIDDLE, 1, p) for p in (1, 50, 900)]), [False] * 3
        )
        self.roce(pkt(rp.WRITE_MIDDLE, 0, 101, src=LAG))  # psn_rec = 101 > N_warmup
        self.assertEqual(
            self.roce_marks([pkt(rp.WRITE_MIDDLE, 1, p) for p in (1, 50, 900)]), [True] * 3
        )


class ProbabilityOneMarksEveryOutpacingEctPacket(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, params(k=255.0))
        self.roce(pkt(rp.WRITE_MIDDLE, 0, 1000, src=LAG))
        ecns = [
            self.roce(pkt(rp.WRITE_MIDDLE, 1 + i % 3, 10 + i, ecn=e))[0]
            for i, e in enumerate([ECT0, ECT1] * 10)
        ]
        self.assertEqual(ecns, [CE] * 20)
        self.assertEqual(self.assert_state(JOB).marks, 20)


class ProbabilityZeroMarksNothing(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, params(k=0.0))  # k = 0: P = 0 for everything
        self.roce(pkt(rp.WRITE_MIDDLE, 0, 1000, src=LAG))
        self.assertEqual(
            self.roce_marks([pkt(rp.WRITE_MIDDLE, 5, p) for p in range(1, 21)]), [False] * 20
        )
        # And with k large, p = 0 still means P = 0.
        self.set_params(JOB, params(k=255.0))
        self.assertEqual(self.roce_marks([pkt(rp.WRITE_MIDDLE, 5, 0)] * 10), [False] * 10)
        self.assertEqual(self.assert_state(JOB).marks, 0)


class OnlyEctPacketsChange(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, params(k=255.0))
        self.roce(pkt(rp.WRITE_MIDDLE, 0, 1000, src=LAG))
        for ecn, want in ((NOT_ECT, NOT_ECT), (CE, CE), (ECT1, CE), (ECT0, CE)):
            got, decision = self.roce(pkt(rp.WRITE_MIDDLE, 2, 5000, ecn=ecn))
            self.assertTrue(decision.mark)  # Symphony decided to mark every one of them
            self.assertEqual(got, want)
        # The counter counts decisions, ECT or not.
        self.assertEqual(self.assert_state(JOB).marks, 4)


class MarkingRateMatchesTheModelProbability(SymphonyTest):
    """At P of about 0.1 and 0.5 the marked share lies within 99.9 % binomial bounds."""

    N = 400

    def runTest(self) -> None:
        for target in (0.1, 0.5):
            # P = k * alpha * p / psn_rec with alpha = 1, p = 50, psn_rec = 100.
            self.install_job(JOB, params(k=2 * target))
            self.roce(pkt(rp.WRITE_MIDDLE, 0, 100, src=LAG))
            probe = pkt(rp.WRITE_MIDDLE, 1, 50)  # outpacing; repeating it changes no state
            marks = self.roce_marks([probe] * self.N)
            expected = ar.applied_probability(
                self.model.process(rp.parsed_view(probe), 0).threshold
            )
            self.assertAlmostEqual(expected, target, delta=target * 0.03)
            low, high = binomial_bounds(self.N, expected)
            self.assertTrue(low <= sum(marks) <= high, f"P={expected:.4f}: {sum(marks)}/{self.N}")
            self.cleanup()
