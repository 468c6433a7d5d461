"""SPEC 3 and 3.5 of the paper: jobs are isolated; a released job's slot starts from zero."""

from base_test import SymphonyTest

from conformance import packets as rp
from symphony.p4names import JOB_REGISTERS
from symphony.sizes import MAX_JOBS


class TwoInterleavedJobsStayIsolated(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(3, tag=True)
        self.install_job(4, tag=False, hosts=(rp.ip_to_int("10.0.0.4"),))
        a = [
            rp.rocev2(opcode=op, step=10, psn=i, tag=3, src="10.0.0.3")
            for i, op in enumerate([rp.SEND_FIRST, rp.SEND_MIDDLE, rp.SEND_LAST])
        ]
        b = [
            rp.rocev2(opcode=op, step=200, psn=50 + i, tag=0, src="10.0.0.4", dqpn=9)
            for i, op in enumerate([rp.WRITE_FIRST, rp.WRITE_MIDDLE, rp.WRITE_MIDDLE])
        ]
        for x, y in zip(a, b, strict=True):
            self.roce(x)
            self.roce(y)
        s3, s4 = self.assert_state(3), self.assert_state(4)
        self.assertEqual((s3.step_min, s3.window_packets), (11, 3))
        self.assertEqual((s4.step_min, s4.window_packets), (0, 3))
        # No other slot was touched.
        for name in JOB_REGISTERS.values():
            values = self.register_array(name)
            self.assertFalse(any(v for i, v in enumerate(values) if i not in (3, 4)), name)
        self.assertEqual(len(values), MAX_JOBS)
