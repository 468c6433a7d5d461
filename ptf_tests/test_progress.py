"""SPEC 2 and 4.3: step and in-step progress (Algorithm 1, lines 3-10)."""

from base_test import T_WIN_ALWAYS_US, T_WIN_NEVER_US, SymphonyTest

from conformance import packets as rp
from symphony.model.params import JobParams
from symphony.model.switch_model import flow_slot, pack_flow
from symphony.p4names import FLOW_BASE

JOB = 5
A = "10.0.0.1"  # one flow per source (same QP)
B = "10.0.0.2"


def msg(step: int, n: int, *, src: str = A, base: int = 0, last: bool = True, ecn: int = 2):
    """A flow's packets of one step: WRITE FIRST, MIDDLE..., LAST (or MIDDLE if not last)."""
    ops = (
        [rp.WRITE_FIRST]
        + [rp.WRITE_MIDDLE] * (n - 2)
        + [rp.WRITE_LAST if last else rp.WRITE_MIDDLE]
    )
    return [
        rp.rocev2(opcode=op, step=step, psn=(base + i) & 0xFFFFFF, tag=JOB, src=src, ecn=ecn)
        for i, op in enumerate(ops)
    ]


class LastAdvancesStepMin(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB)
        for p in msg(0, 4, last=False):
            self.roce(p)
        self.assertEqual(self.assert_state(JOB).step_min, 0)
        self.roce(rp.rocev2(opcode=rp.WRITE_LAST, step=0, psn=4, tag=JOB, src=A))
        st = self.assert_state(JOB)
        self.assertEqual((st.step_min, st.psn_rec), (1, 0))
        # SEND ONLY is FIRST and LAST at once.
        self.roce(rp.rocev2(opcode=rp.SEND_ONLY, step=1, psn=5, tag=JOB, src=A))
        self.assertEqual(self.assert_state(JOB).step_min, 2)
        # UC and "with immediate" variants complete a step too.
        self.roce(rp.rocev2(opcode=rp.UC + rp.WRITE_ONLY_IMM, step=2, psn=6, tag=JOB, src=A))
        self.assertEqual(self.assert_state(JOB).step_min, 3)


class LateArrivalCorrectsStepMin(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB)
        for p in msg(3, 5):
            self.roce(p)
        self.assertEqual(self.assert_state(JOB).step_min, 4)
        for p in msg(2, 6, src=B, last=False):  # a lagging flow still in step 2
            self.roce(p)
        st = self.assert_state(JOB)
        self.assertEqual((st.step_min, st.psn_rec), (2, 5))


class DuplicatesAndRetransmissionsAreIdempotent(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB)
        seq = msg(7, 6, last=False)
        for p in seq:
            self.roce(p)
        before = self.assert_state(JOB)
        for p in (seq[-1], seq[-1], seq[2]):  # duplicate, duplicate, go-back-N retransmission
            self.roce(p)
        after = self.assert_state(JOB)
        self.assertEqual((after.step_min, after.psn_rec), (before.step_min, before.psn_rec))
        self.assertEqual(after.window_packets, before.window_packets + 3)


class StepWrapIsOneStepLater(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, JobParams(k=255.0, n_warmup=2, t_win_us=T_WIN_NEVER_US, n_sample=4))
        for p in msg(65535, 5, src=B, last=False):  # lagging flow in step 65535, psn_rec 4
            self.roce(p)
        # Step 0 is one step after 65535: outpacing, and with k = 255 certainly marked.
        marks = self.roce_marks(msg(0, 4, last=False))
        self.assertEqual(marks, [False, True, True, True])  # p = 0 on FIRST: P = 0
        self.assertEqual(self.assert_state(JOB).step_min, 65535)
        self.roce(rp.rocev2(opcode=rp.WRITE_LAST, step=65535, psn=5, tag=JOB, src=B))
        self.assertEqual(self.assert_state(JOB).step_min, 0)


class StepMaxGivesTheLiveOverlap(SymphonyTest):
    """step_max and the overlap it gives: a two-step misalignment, the wrap, the reset with the
    window. assert_state compares every register, step_max included, with the model."""

    def overlap(self, step_min: int, step_max: int, overlap: int) -> None:
        st = self.assert_state(JOB)
        self.assertEqual((st.step_min, st.step_max, st.step_overlap), (step_min, step_max, overlap))

    def runTest(self) -> None:
        self.install_job(JOB)
        for p in msg(4, 3):  # step 4 completes: step_min 5
            self.roce(p)
        self.overlap(5, 4, 0)  # every step the window saw has completed
        for p in msg(5, 4, last=False):
            self.roce(p)
        self.overlap(5, 5, 1)
        # A worker two steps ahead: step_max - step_min = 2, three steps in flight.
        for p in msg(7, 4, src=B, last=False):
            self.roce(p)
        self.overlap(5, 7, 3)
        # The window closes: step_max restarts from the next packet's step, as psn_rec does.
        self.set_window(JOB, T_WIN_ALWAYS_US)
        self.roce(msg(5, 4, last=False)[-1])
        self.set_window(JOB, T_WIN_NEVER_US)
        self.overlap(5, 5, 1)


class StepMaxWrapsSerially(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB)
        for p in msg(65533, 3):  # step_min 65534
            self.roce(p)
        for p in msg(65534, 3, src=B, last=False):
            self.roce(p)
        for p in msg(1, 3, last=False):  # 3 steps after 65534, across the wrap
            self.roce(p)
        st = self.assert_state(JOB)
        self.assertEqual((st.step_min, st.step_max, st.step_overlap), (65534, 1, 4))
        self.roce(msg(65535, 3, src=B, last=False)[1])  # serially earlier than 1: no change
        self.assertEqual(self.assert_state(JOB).step_max, 1)


class PsnWrapsInRelativeMode(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB)
        for p in msg(0, 8, base=0xFFFFFD, last=False):  # PSNs ...FFFD, FFFE, FFFF, 0, 1, ...
            self.roce(p)
        self.assertEqual(self.assert_state(JOB).psn_rec, 7)


class AbsoluteModeTakesThePsn(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, JobParams(psn_mode="absolute", t_win_us=T_WIN_NEVER_US, n_warmup=4))
        self.roce(rp.rocev2(opcode=rp.WRITE_MIDDLE, step=0, psn=1234, tag=JOB, src=A))
        self.assertEqual(self.assert_state(JOB).psn_rec, 1234)


class FlowWhoseFirstWasLostIsNeverMarked(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, JobParams(k=255.0, n_warmup=2, t_win_us=T_WIN_NEVER_US))
        for p in msg(0, 10, src=B, last=False):
            self.roce(p)
        for p in msg(1, 3):  # flow A completes step 1 normally
            self.roce(p)
        self.roce(msg(0, 11, src=B, last=False)[-1])  # B still lags: step_min back to 0
        # Flow A's FIRST of step 2 is lost: its MIDDLEs have unknown progress, never marked.
        lost_first = msg(2, 6, base=3)[1:-1]
        self.assertEqual(self.roce_marks(lost_first), [False] * 4)
        self.assert_state(JOB)


class FlowSlotsHashLikeTheModel(SymphonyTest):
    """The model's crc32/crc16 slot and signature are bmv2's: read the slot back."""

    def runTest(self) -> None:
        self.install_job(JOB)
        for src, qp, step, psn in ((A, 0x11, 9, 1000), (B, 0xABCDEF, 65535, 0xFFFFFF)):
            self.roce(
                rp.rocev2(opcode=rp.WRITE_FIRST, step=step, psn=psn, tag=JOB, src=src, dqpn=qp)
            )
            slot, sig = flow_slot(rp.ip_to_int(src), qp)
            self.assertEqual(
                hex(self.register_array(FLOW_BASE)[slot]), hex(pack_flow(sig, step, psn))
            )
