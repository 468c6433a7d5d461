"""SPEC 1-5 on bmv2: the conformance suite's traces (conformance/traces.py) through the real
switch, compared with the golden model by the suite's runner (conformance/runner.py).

Per packet the frame must leave unchanged but for the ECN (`SymphonyTest.roce_frame`) and, where
the model's P is 0 or 1, with the model's mark; after every trace every job's whole JobState
(win_start, the switch's clock, masked) and the flow table must equal the model's. How the
adapter gives a real switch the trace's time and follows its coin: conformance/adapters/bmv2_ptf.py.

The trace set is the first traces of `python -m conformance`'s, each cut to a prefix:
SYMPHONY_CONFORMANCE_TRACES (20), SYMPHONY_CONFORMANCE_PACKETS (100 per trace),
SYMPHONY_CONFORMANCE_SEED (0).
"""

import os

from base_test import T_WIN_ALWAYS_US, T_WIN_NEVER_US, SymphonyTest
from ptf import testutils

from conformance.adapters.bmv2_ptf import PACKETS_ENV, SEED_ENV, TRACES_ENV, Bmv2PtfAdapter
from conformance.runner import report, run_suite
from conformance.traces import generate


class ConformanceOnBmv2(SymphonyTest):
    def runTest(self) -> None:
        n = int(os.environ.get(TRACES_ENV, "20"))
        packets = int(os.environ.get(PACKETS_ENV, "100"))
        first = int(os.environ.get(SEED_ENV, "0"))
        traces = [generate(seed, packets) for seed in range(first, first + n)]
        adapter = Bmv2PtfAdapter(self, T_WIN_NEVER_US, T_WIN_ALWAYS_US)
        [result] = run_suite(traces, [adapter])
        testutils.verify_no_other_packets(self)
        print(f"\n{report([result])}")
        self.assertEqual(result.mismatches, [], report([result]))
        self.assertEqual(result.traces, n)
        # The traces reached certain and coin-decided marks, and unknown progress.
        for what in ("thr_certain", "thr_partial", "marks", "unknown_p", "untracked"):
            self.assertGreater(result.coverage[what], 0, what)
