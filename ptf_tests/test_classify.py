"""SPEC 1: both classification modes, tag and IPv4 source."""

from base_test import SymphonyTest

from conformance import packets as rp


class TagModeTracksTaggedPackets(SymphonyTest):
    def runTest(self) -> None:
        for job in (1, 300, 8191):  # 8191: the largest 13-bit tag, both reserved fields full
            self.install_job(job, tag=True)
            self.roce(rp.rocev2(opcode=rp.WRITE_FIRST, tag=job, step=4, src="10.0.0.40"))
            self.assertEqual(self.assert_state(job).window_packets, 1)


class HostsModeTracksBySource(SymphonyTest):
    def runTest(self) -> None:
        job = 9000  # above the 13-bit tag range: hosts mode can use every Job_ID
        hosts = (rp.ip_to_int("10.0.0.7"), rp.ip_to_int("10.0.0.8"))
        self.install_job(job, tag=False, hosts=hosts)
        self.roce(rp.rocev2(opcode=rp.WRITE_LAST, tag=0, step=2, src="10.0.0.7"))
        self.roce(rp.rocev2(opcode=rp.WRITE_FIRST, tag=0, step=5, src="10.0.0.8", dqpn=3))
        self.roce(rp.rocev2(opcode=rp.WRITE_FIRST, tag=0, step=9, src="10.0.0.9"))  # not a host
        st = self.assert_state(job)
        self.assertEqual((st.window_packets, st.step_min), (2, 3))


class TagIsLookedUpBeforeSource(SymphonyTest):
    def runTest(self) -> None:
        self.install_job(11, tag=True)
        self.install_job(12, tag=False, hosts=(rp.ip_to_int("10.0.0.12"),))
        self.roce(rp.rocev2(opcode=rp.WRITE_FIRST, tag=11, src="10.0.0.12"))
        self.roce(rp.rocev2(opcode=rp.WRITE_FIRST, tag=99, src="10.0.0.12"))  # unknown tag
        self.assertEqual(self.assert_state(11).window_packets, 1)
        self.assertEqual(self.assert_state(12).window_packets, 1)
