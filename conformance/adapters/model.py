"""The golden model (`symphony.model.switch_model.SwitchModel`), bmv2 or tofino2 variant.

The tofino2 variant computes the window test with Tofino's two serial tests, eq. 5 as a running
sum (its `tau_scores`) and d in 16-bit steps, as p4src/t2na does; the bmv2 variant is the
reference every implementation is compared with.
"""

from __future__ import annotations

from conformance.implementation import COLUMNS, PacketByPacket, Row
from conformance.traces import Trace, TracePacket
from symphony.model.switch_model import JobState, SwitchModel, ecn_out


class ModelAdapter(PacketByPacket):
    exposes = frozenset(COLUMNS)
    volatile: frozenset[str] = frozenset()
    own_coin = False

    def __init__(self, target: str = "bmv2") -> None:
        self.target = target
        self.name = f"model-{target}"
        self.model = SwitchModel(target=target)

    def unavailable(self) -> str | None:
        return None

    def start(self, trace: Trace) -> None:
        self.model = SwitchModel(target=self.target)
        for job in trace.jobs:
            self.model.install_job(job.job_id, job.action, tag=job.tag, hosts=job.hosts)

    def process(self, tp: TracePacket) -> Row:
        """With `tp.coin` None the mark of a packet whose P is strictly between 0 and 1 is unknown
        (-1) and not counted."""
        d = self.model.process(tp.pkt, tp.now, tp.coin)
        mark = -1 if d.mark is None else int(d.mark)
        ecn = ecn_out(tp.pkt.ecn, bool(d.mark), False)
        return (d.job_id or 0, -1 if d.p is None else d.p, d.threshold, mark, ecn)

    def state(self, job_id: int) -> JobState:
        return self.model.state(job_id)

    def flow_table(self) -> dict[int, int]:
        return {slot: v for slot, v in self.model.flows.items() if v}
