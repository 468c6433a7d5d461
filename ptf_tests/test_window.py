"""SPEC 4.1 and 4.2: windows, the outpacing share and alpha.

Windows are placed deterministically by the control plane: T_win = 0 closes a window at the next
packet, T_win = "never" keeps it open (docs/design.md).
"""

from base_test import T_WIN_ALWAYS_US, T_WIN_NEVER_US, SymphonyTest

from conformance import packets as rp
from symphony.model.params import JobParams

JOB = 13
LAG = "10.0.0.2"
FAST = "10.0.0.1"


def pkt(step: int, psn: int, src: str):
    return rp.rocev2(opcode=rp.WRITE_MIDDLE, step=step, psn=psn, tag=JOB, src=src)


class AlphaFollowsTheOutpacingShare(SymphonyTest):
    def close_window(self, closing_packet) -> None:
        self.set_window(JOB, T_WIN_ALWAYS_US)
        self.roce(closing_packet)
        self.set_window(JOB, T_WIN_NEVER_US)

    def runTest(self) -> None:
        self.install_job(
            JOB,
            JobParams(
                t_win_us=T_WIN_NEVER_US, tau=0.25, n_sample=8, alpha_max=3, psn_mode="absolute"
            ),
        )
        # Window 1: 6 lagging, 2 outpacing = 25 % >= tau: alpha 1 -> 2.
        for i in range(6):
            self.roce(pkt(0, 10 + i, LAG))
        for i in range(2):
            self.roce(pkt(1, 10 + i, FAST))
        self.close_window(pkt(0, 3, LAG))
        st = self.assert_state(JOB)
        self.assertEqual((st.alpha, st.window_packets, st.window_ahead_packets), (2, 1, 0))
        self.assertEqual(st.psn_rec, 3)  # reset at the boundary, then this packet's PSN
        # Windows 2-4: all outpacing: 2 -> 3 -> 3 (capped at alpha_max).
        for _ in range(3):
            for i in range(8):
                self.roce(pkt(2, i, FAST))
            self.close_window(pkt(2, 0, FAST))
        self.assertEqual(self.assert_state(JOB).alpha, 3)
        # Window 5: 1 of 9 outpacing < tau: 3 -> 2.
        for i in range(8):
            self.roce(pkt(0, 20 + i, LAG))
        self.close_window(pkt(0, 30, LAG))
        self.assertEqual(self.assert_state(JOB).alpha, 2)
        # Window 6: too few samples (1 < N_sample): alpha left alone.
        self.close_window(pkt(0, 31, LAG))
        self.assertEqual(self.assert_state(JOB).alpha, 2)
        # Windows 7-9: lagging only: 2 -> 1 -> 1 (never below 1).
        for _ in range(3):
            for i in range(8):
                self.roce(pkt(0, 40 + i, LAG))
            self.close_window(pkt(0, 50, LAG))
        self.assertEqual(self.assert_state(JOB).alpha, 1)


class PsnRecResetsEachWindow(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(JOB, JobParams(t_win_us=T_WIN_NEVER_US, psn_mode="absolute"))
        self.roce(pkt(0, 900, LAG))
        self.assertEqual(self.assert_state(JOB).psn_rec, 900)
        self.set_window(JOB, T_WIN_ALWAYS_US)
        self.roce(pkt(1, 5, FAST))  # an outpacing packet closes the window: psn_rec -> 0
        self.assertEqual(self.assert_state(JOB).psn_rec, 0)
        self.roce(pkt(0, 40, LAG))  # every packet closes one now; the max restarts each time
        self.roce(pkt(0, 20, LAG))
        self.assertEqual(self.assert_state(JOB).psn_rec, 20)
