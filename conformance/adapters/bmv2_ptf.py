"""bmv2 (p4src/v1model, the real simple_switch_grpc) through the PTF base test.

Inside a PTF test (ptf_tests/test_conformance.py) the adapter drives the test's switch: the
job's entries through the controller's `desired` entries, each packet built by scapy and sent
through the veth pair, the ECN codepoint read off the packet that comes out, the state read
through the controller's register interface (`JobRegisters`, bmv2's Thrift implementation).

Two things of a trace cannot be given to a real switch, and the adapter says how it bridges them:
- **Time.** bmv2 stamps packets with its own clock. A second golden model inside the adapter (the
  trace clock) follows the trace's timestamps and says which packet closes its job's window; the
  adapter sets that job's T_win to 0 just before such a packet and back to "never" before the
  next that does not (only on a change: a control-plane write each). The switch then closes
  exactly the windows the trace closes, and `win_start`, the switch's clock, is not compared.
- **The coin.** bmv2 draws its own random number, so its mark is compared with the reference
  where P is 0 or 1 and followed by the reference in between (`own_coin`). The mark is the CE
  codepoint on an ECN-capable packet; on a Non-ECT or CE packet, where it cannot show, it is the
  job's Symphony mark counter's increase.
"""

from __future__ import annotations

import ipaddress
from dataclasses import replace
from typing import Protocol

from conformance import packets as rp
from conformance.implementation import PacketByPacket, Row
from conformance.traces import Trace, TracePacket
from symphony.model import arithmetic as ar
from symphony.model.params import JobParams
from symphony.model.switch_model import JobState, SwitchModel
from symphony.p4names import FLOW_BASE

ECN_CE = 0b11
# The trace set ptf_tests/test_conformance.py runs: how many traces, packets per trace, the
# first seed (`python -m conformance --ptf` sets them).
TRACES_ENV = "SYMPHONY_CONFORMANCE_TRACES"
PACKETS_ENV = "SYMPHONY_CONFORMANCE_PACKETS"
SEED_ENV = "SYMPHONY_CONFORMANCE_SEED"


class SwitchTest(Protocol):
    """What the adapter uses of ptf_tests/base_test.py's SymphonyTest."""

    def install_job(
        self, job_id: int, params: JobParams | None = None, *, tag: bool, hosts: tuple[int, ...]
    ) -> dict[str, int]: ...

    def set_window(self, job_id: int, t_win_us: float) -> None: ...

    def roce_frame(self, pkt: object, in_port: int = 0, out_port: int = 1) -> int: ...

    def switch_state(self, job_id: int) -> JobState: ...

    def register_array(self, name: str) -> list[int]: ...

    def cleanup(self) -> None: ...


class Bmv2PtfAdapter(PacketByPacket):
    name = "bmv2-ptf"
    exposes = frozenset({"mark", "ecn"})
    volatile = frozenset({"win_start"})
    own_coin = True

    def __init__(self, test: SwitchTest, t_win_never_us: float, t_win_always_us: float) -> None:
        self.test = test
        self.never_us = t_win_never_us
        self.always_us = t_win_always_us
        self.clock = SwitchModel()
        self.closing: dict[int, bool] = {}  # job -> its switch T_win is "always" now
        self.marks: dict[int, int] = {}  # job -> the switch's mark counter as last seen

    def unavailable(self) -> str | None:
        return None

    def start(self, trace: Trace) -> None:
        self.clock = SwitchModel()
        for job in trace.jobs:
            # The trace's parameters at the trace's tick, bmv2's (base_test.TICK_NS).
            never = replace(job.params, t_win_us=self.never_us)
            self.test.install_job(job.job_id, never, tag=job.tag, hosts=job.hosts)
            self.clock.install_job(job.job_id, job.action, tag=job.tag, hosts=job.hosts)
            self.closing[job.job_id] = False
            self.marks[job.job_id] = 0

    def _steer_window(self, tp: TracePacket) -> int | None:
        """Set the packet's job's T_win so the switch closes its window iff the trace does; the
        job (None: untracked)."""
        job = self.clock.classify(tp.pkt)
        if job is None:
            return None
        t_win = self.clock.job_params[job]["t_win"]
        closes = ar.window_closes(tp.now, self.clock.state(job).win_start, t_win)
        if closes != self.closing[job]:
            self.test.set_window(job, self.always_us if closes else self.never_us)
            self.closing[job] = closes
        self.clock.process(tp.pkt, tp.now, tp.coin)
        return job

    def process(self, tp: TracePacket) -> Row:
        job = self._steer_window(tp)
        p = tp.pkt
        pkt = rp.rocev2(
            opcode=p.opcode,
            step=p.step,
            psn=p.psn,
            tag=p.tag,
            dqpn=p.dqpn,
            src=str(ipaddress.IPv4Address(p.src)),
            ecn=p.ecn,
        )
        ecn = self.test.roce_frame(pkt)
        mark = 0
        if p.ecn in (0b01, 0b10):
            mark = int(ecn == ECN_CE)  # no queue builds up on an unshaped port: CE is Symphony's
        elif job is not None:
            marks = self.test.switch_state(job).marks
            mark = marks - self.marks[job]
        if job is not None:
            self.marks[job] += mark
        return (0, -1, 0, mark, ecn)

    def state(self, job_id: int) -> JobState:
        return self.test.switch_state(job_id)

    def flow_table(self) -> dict[int, int]:
        return {slot: v for slot, v in enumerate(self.test.register_array(FLOW_BASE)) if v}

    def finish(self) -> None:
        self.test.cleanup()
