"""t2na (p4src/t2na) on Intel's Tofino model: a stub until a model is installed.

Running it needs the compiled program (`make tofino2`), the Tofino model (`tofino-model`, from
Intel's SDE or the open-source p4studio) and a driver that loads the program (bf_switchd or
stratum_bf); none is on this machine yet, so the adapter only says so and the runner skips it
with its name and this reason. When a model exists, this class drives it as the bmv2 adapter
drives bmv2 (packets through the model's ports, state through `JobRegisters`' P4Runtime
implementation). Its reference is the runner's, the model on bmv2: the suite shows the model's
tofino2 variant, which computes what p4src/t2na does, equal to it on every trace.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence

import numpy as np

from conformance.implementation import Row
from conformance.traces import Trace, TracePacket
from symphony.model.switch_model import JobState

TOFINO_MODEL = "tofino-model"


class T2naModelAdapter:
    name = "t2na-tofino-model"
    exposes = frozenset({"mark", "ecn"})
    volatile = frozenset({"win_start"})
    own_coin = True

    def unavailable(self) -> str:
        if shutil.which(TOFINO_MODEL) is None and not os.environ.get("SDE_INSTALL"):
            return f"not available: no Tofino model ({TOFINO_MODEL} not on PATH, no $SDE_INSTALL)"
        return "not available: a Tofino model is installed, but this adapter is still a stub"

    def _stub(self) -> NotImplementedError:
        return NotImplementedError(f"{self.name}: {self.unavailable()}")

    def start(self, trace: Trace) -> None:
        raise self._stub()

    def process(self, tp: TracePacket) -> Row:
        raise self._stub()

    def run(self, packets: Sequence[TracePacket]) -> np.ndarray:
        raise self._stub()

    def state(self, job_id: int) -> JobState:
        raise self._stub()

    def flow_table(self) -> dict[int, int] | None:
        return None

    def finish(self) -> None:
        """Nothing was started."""
