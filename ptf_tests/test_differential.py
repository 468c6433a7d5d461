"""SPEC 1-5 against the golden model: 50 seeded random multi-job sequences through bmv2.

After every sequence each job's state registers and counters on the switch equal the model's,
and every packet whose Symphony probability is 0 or 1 was marked exactly as the model says
(`SymphonyTest.roce` checks each packet). Where the model's probability is strictly between,
the switch's coin decides and the observed mark is fed back to the model's counter.
"""

from base_test import T_WIN_ALWAYS_US, T_WIN_NEVER_US, SymphonyTest
from ptf import testutils
from scapy.layers.inet import IP
from sequences import CLOSE_WINDOW, generate

SEEDS = range(50)


class DifferentialAgainstGoldenModel(SymphonyTest):
    def runTest(self) -> None:
        certain = uncertain = 0
        for seed in SEEDS:
            seq = generate(seed)
            self.install_plans(seq.jobs)
            closing: set[int] = set()
            unknown_marks = False
            for item in seq.items:
                if isinstance(item, tuple) and item[0] == CLOSE_WINDOW:
                    if item[1] not in closing:
                        self.set_window(item[1], T_WIN_ALWAYS_US)
                        closing.add(item[1])
                    continue
                ecn, decision = self.roce(item)
                if decision.tracked and decision.job_id in closing:
                    self.set_window(decision.job_id, T_WIN_NEVER_US)
                    closing.discard(decision.job_id)
                if decision.mark is None:
                    uncertain += 1
                    if item[IP].tos & 3 in (1, 2):  # ECT: the mark is visible
                        if ecn == 3:
                            self.model.jobs[decision.job_id].marks += 1
                    else:
                        unknown_marks = True
                elif decision.tracked:
                    certain += 1
            testutils.verify_no_other_packets(self)
            for plan in seq.jobs:
                with self.subTest(seed=seed, job=plan.job_id):
                    if unknown_marks:
                        self.assert_state(plan.job_id, counters=False)
                    else:
                        self.assert_state(plan.job_id)
            self.cleanup()
        # The sequences exercise both kinds of decisions.
        self.assertGreater(certain, 1000)
        self.assertGreater(uncertain, 20)
