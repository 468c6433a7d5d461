"""The ACK class on bmv2 (docs/ack_priority.md): RoCEv2 ACKs, ATOMIC ACKs and CNPs leave from
their own priority queue when the controller writes the `ack_class` entries (a switch with
`ack_priority = true`), from data's queue when it does not; nothing else changes queue, and
Symphony's state and marks are the same either way.

A standing data queue is built the only way bmv2 builds one: port 1's egress rate is lowered
through Thrift (`backlog_queue`, which sets every priority queue of the port, as the emulated
links do) and a burst of data frames is sent faster than that. Then one frame of the class under
test follows. The checks are about order only, never about time: with the class on, the frame
leaves ahead of the data's tail (its own queue is empty, so bmv2's rate limiter lets it go at
once); with it off, it leaves after the last data frame (one FIFO queue).

Which priority bmv2 serves first (`BMV2_ACK_PRIORITY` must be the one) is measured, not assumed:
`Bmv2ServesTheHigherPriorityFirst` stops the switch process while both queues hold frames whose
send times then pass, so that on resumption both queues are ready at once and only the
scheduler's order decides.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from base_test import ROOT, T_WIN_ALWAYS_US, T_WIN_NEVER_US, SymphonyTest
from ptf import testutils
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from conformance import packets as rp
from conformance.adapters.bmv2_ptf import Bmv2PtfAdapter
from conformance.runner import report, run_suite
from conformance.traces import Trace, generate
from symphony.model import opcodes
from symphony.p4names import FLOW_BASE
from symphony.sizes import BMV2_ACK_PRIORITY
from symphony.switch import desired

JOB = 23
HOST = "10.0.0.7"
DATA_RATE_PPS = 50  # port 1's egress: 20 data frames stand for 0.4 s
BURST = 20
OUT = 1


def data_frame(i: int) -> Packet:
    """RoCEv2 data of no job (untracked): it stays in data's queue in every test."""
    return rp.rocev2(opcode=rp.WRITE_MIDDLE, step=3, psn=i, dqpn=0x100 + i, src=HOST)


def class_frame(opcode: int, psn: int = 0, step: int = 3, **kw) -> Packet:
    """A frame of `opcode` with 16 bytes after the BTH (an ACK's AETH, a CNP's reserved bytes)."""
    return rp.rocev2(
        opcode=opcode, step=step, psn=psn, dqpn=0x42, src=HOST, payload=b"\0" * 16, **kw
    )


def udp_frame(first_byte: int) -> Packet:
    """Plain UDP whose payload starts like an ACK's BTH: the parser never reads it as one."""
    return (
        Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
        / IP(src=HOST, dst="10.0.1.1", id=999)
        / UDP(sport=3, dport=5000)
        / (bytes([first_byte]) + b"\0" * 40)
    )


def tcp_frame(first_byte: int) -> Packet:
    return (
        Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
        / IP(src=HOST, dst="10.0.1.1", id=998)
        / TCP(sport=4791, dport=4791, flags="A")
        / (bytes([first_byte]) + b"\0" * 40)
    )


def options_frame() -> Packet:
    """UDP 4791 behind IPv4 options: the parser stops at IPv4 (SPEC 1), so no BTH, no class."""
    pkt = class_frame(opcodes.ACK)
    pkt[IP].options = b"\x01\x01\x01\x00"  # NOP NOP NOP EOL
    pkt[IP].ihl = None
    pkt[IP].len = None
    return Ether(bytes(pkt))


# Each test class derives from SymphonyTest itself (scripts/run_tests.sh counts them so); the
# shared steps are functions of the test.
def ack_class_on(t: SymphonyTest) -> None:
    """What the controller writes on a switch with ack_priority = true (tearDown removes it)."""
    t.write(desired.ack_class_entries())


def position_behind_data(t: SymphonyTest, probe: Packet) -> int:
    """Send BURST data frames into a slowed port, then `probe`; return how many data frames
    left before it (BURST: it waited behind them all)."""
    t.backlog_queue(OUT, DATA_RATE_PPS)
    data = [data_frame(i) for i in range(BURST)]
    for pkt in data:
        t.send(pkt, 0)
    t.send(probe, 0)
    got = [t.receive(OUT, timeout=5) for _ in range(BURST + 1)]
    testutils.verify_no_other_packets(t)
    t.assertEqual(got.count(bytes(probe)), 1, "the probe frame left changed, or not once")
    # Unchanged, and in order: bmv2's egress is FIFO inside one queue.
    t.assertEqual([g for g in got if g != bytes(probe)], [bytes(p) for p in data])
    return got.index(bytes(probe))


class AckClassLeavesAheadOfStandingData(SymphonyTest):
    """On: an ACK, an ATOMIC ACK and a CNP each overtake a standing data queue."""

    def runTest(self) -> None:
        ack_class_on(self)
        for opcode in sorted(opcodes.ACK_CLASS):
            with self.subTest(opcode=hex(opcode)):
                pos = position_behind_data(self, class_frame(opcode))
                self.assertLess(pos, BURST // 2, f"opcode {opcode:#x} waited behind {pos} frames")


class AckClassOffWaitsBehindData(SymphonyTest):
    """Off (no entries, the default): the same frames wait behind all the data, as before."""

    def runTest(self) -> None:
        for opcode in sorted(opcodes.ACK_CLASS):
            with self.subTest(opcode=hex(opcode)):
                self.assertEqual(position_behind_data(self, class_frame(opcode)), BURST)


class OtherTrafficStaysInDataQueue(SymphonyTest):
    """On: everything outside the class keeps data's queue: RoCE data, a READ response, plain UDP
    and TCP whose first payload byte is an ACK opcode, and an ACK behind IPv4 options."""

    def runTest(self) -> None:
        ack_class_on(self)
        probes = {
            "roce data (SEND ONLY)": class_frame(rp.SEND_ONLY, psn=77),
            "roce READ response": class_frame(0x10, psn=78),
            "udp": udp_frame(opcodes.ACK),
            "tcp": tcp_frame(opcodes.CNP),
            "ack behind ipv4 options": options_frame(),
        }
        for what, probe in probes.items():
            with self.subTest(what=what):
                self.assertEqual(position_behind_data(self, probe), BURST, what)


class AckClassLeavesSymphonyUnchanged(SymphonyTest):
    """On, with a job tracked by tag and by its hosts: the class's frames carrying the job's tag
    and coming from its host leave its state, its counters and its flows as the golden model
    says they stay (untouched: not step traffic, SPEC 1), and are never marked."""

    def runTest(self) -> None:
        ack_class_on(self)
        self.install_job(JOB, tag=True, hosts=(rp.ip_to_int(HOST),))
        # Some step progress first, so that there is state to disturb.
        for psn, op in enumerate((rp.WRITE_FIRST, rp.WRITE_MIDDLE, rp.WRITE_MIDDLE)):
            self.roce(rp.rocev2(opcode=op, step=5, psn=100 + psn, tag=JOB, src=HOST))
        before = self.assert_state(JOB)
        flows = self.register_array(FLOW_BASE)
        for opcode in sorted(opcodes.ACK_CLASS):
            for tag in (JOB, 0):  # by tag, and by the hosts table
                for step in (4, 5, 9):  # behind, at and ahead of step_min
                    ecn, decision = self.roce(
                        class_frame(opcode, psn=101, tag=tag, step=step, ecn=0b10)
                    )
                    self.assertIsNone(decision.job_id, "the model tracked an ACK-class frame")
                    self.assertEqual(ecn, 0b10, f"opcode {opcode:#x} was marked")
        self.assertEqual(self.assert_state(JOB), before)
        self.assertEqual(self.register_array(FLOW_BASE), flows)


def traces_with_the_class(frames: int, packets: int = 100) -> list[Trace]:
    """The conformance suite's first traces (seeds from 0, cut to `packets`) that hold frames of
    the class (its ACKs and CNPs, among the untracked opcodes), until `frames` of them."""
    out: list[Trace] = []
    seen = 0
    seed = 0
    while seen < frames:
        trace = generate(seed, packets)
        n = sum(p.pkt.opcode in opcodes.ACK_CLASS for p in trace.packets)
        if n:
            out.append(trace)
            seen += n
        seed += 1
    return out


class ConformanceWithAckClassOn(SymphonyTest):
    """The conformance suite's traces (test_conformance.py's runner and adapter) with the class
    on, chosen to hold at least 8 ACK and CNP frames among their jobs' traffic: every frame,
    mark and JobState as the golden model, which knows nothing of queues, says."""

    def runTest(self) -> None:
        entries = desired.ack_class_entries()
        # Written outside the test's own bookkeeping: the adapter cleans up between traces.
        self.sw.write(entries)
        try:
            traces = traces_with_the_class(8)
            adapter = Bmv2PtfAdapter(self, T_WIN_NEVER_US, T_WIN_ALWAYS_US)
            [result] = run_suite(traces, [adapter])
            testutils.verify_no_other_packets(self)
        finally:
            self.sw.write(list(reversed(entries)), kind="delete")
        print(f"\n{report([result])}")
        self.assertEqual(result.mismatches, [], report([result]))
        self.assertEqual(result.traces, len(traces))
        self.assertGreater(result.coverage["untracked"], 0)


def _switch_pid() -> int:
    """bmv2_env/start.sh's switch (scripts/run_ptf.sh starts it): its pid file."""
    run_dir = Path(os.environ.get("SYMPHONY_RUN_DIR", ROOT / "run" / "bmv2"))
    pid = int((run_dir / "switch.pid").read_text())
    comm = Path(f"/proc/{pid}/comm").read_text().strip()
    if not comm.startswith("simple_switch"):
        raise RuntimeError(f"pid {pid} of {run_dir}/switch.pid is {comm!r}, not bmv2")
    return pid


class Bmv2ServesTheHigherPriorityFirst(SymphonyTest):
    """Which priority bmv2 serves first, measured: BMV2_ACK_PRIORITY (1) before data's 0.

    bmv2 gives each priority queue its own rate limiter and stamps a frame's send time at
    enqueue; its egress thread takes, among the queues whose head's time has come, the first in
    its scan order (bm_sim/queueing.h, QueueingLogicPriRL::pop_back). Normally only one head is
    due at a time, so the order shows the send times, not the priorities. Here both queues get
    frames 0.5 s apart (2 pps per queue); the first of each leaves at once, then the switch
    process is stopped (SIGSTOP) for longer than all the others' send times, and continued: now
    every head is due together and the scheduler alone orders them. Data frames were enqueued
    first and have the earlier times, so an ACK leaving before them is the priority at work.
    """

    RATE_PPS = 2
    FRAMES = 4

    def runTest(self) -> None:
        ack_class_on(self)
        pid = _switch_pid()
        self.backlog_queue(OUT, self.RATE_PPS)
        # A queue's next send time is its last one plus 1 / rate, also across tests: wait that
        # long, so that the first frame of each queue is due at once.
        time.sleep(1.0 / self.RATE_PPS + 0.1)
        data = [data_frame(i) for i in range(self.FRAMES)]
        acks = [class_frame(opcodes.ACK, psn=i) for i in range(self.FRAMES)]
        for pkt in data + acks:
            self.send(pkt, 0)
        time.sleep(0.1)  # the first of each queue leaves; the next is due 0.5 s after it
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(self.FRAMES / self.RATE_PPS + 1.0)
        finally:
            os.kill(pid, signal.SIGCONT)
        got = [self.receive(OUT, timeout=5) for _ in range(2 * self.FRAMES)]
        testutils.verify_no_other_packets(self)
        names = {bytes(p): f"D{i}" for i, p in enumerate(data)}
        names.update({bytes(p): f"A{i}" for i, p in enumerate(acks)})
        order = [names[g] for g in got]
        print(f"\nbmv2 egress order (D: priority 0, A: priority {BMV2_ACK_PRIORITY}): {order}")
        # D0 and A0 were due at once and normally left before the stop; the others were due
        # while the switch stood still (D1 0.5 s after D0, before A1), and then every ACK left
        # before every data frame: priority 1 is served before priority 0. (In time order, or
        # with priority 0 first, D1 would lead.)
        rest = [x for x in order if x not in ("A0", "D0")]
        self.assertEqual(rest, ["A1", "A2", "A3", "D1", "D2", "D3"], order)
        self.assertLess(order.index("D0"), order.index("D1"), order)
