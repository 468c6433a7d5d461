"""The conformance suite (conformance/) on a small trace set: the golden model's bmv2 and tofino2
variants and the fabric kernel against the reference, the traces reaching what they must, and
broken implementations failing it. The full run is `python -m conformance` (200 traces, 1 M
packets); bmv2 runs the same traces in the PTF suite (ptf_tests/test_conformance.py)."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise

import pytest

from conformance.adapters import in_process
from conformance.adapters.bmv2_ptf import Bmv2PtfAdapter
from conformance.adapters.model import ModelAdapter
from conformance.adapters.t2na import T2naModelAdapter
from conformance.faults import AlphaPlusTwo, Perturbed
from conformance.implementation import Row
from conformance.packets import parsed_view
from conformance.runner import Result, report, run_suite
from conformance.traces import GAPS, Trace, TracePacket, generate, trace_set
from evaluation.fabric import golden_diff
from evaluation.fabric import symphony_kernel as sk
from evaluation.fabric.conformance_adapter import KernelAdapter
from symphony.model import arithmetic as ar
from symphony.model.opcodes import is_first, is_last, is_tracked_opcode
from symphony.model.params import T_WIN_MAX_TICKS, JobParams
from symphony.model.switch_model import JobState, SwitchModel, ecn_out
from symphony.p4names import FLOW_BASE
from symphony.sizes import FLOW_SLOTS

# A window that never closes in these tests: the longest T_win, in us (bmv2: 1 tick = 1 us).
T_WIN_NEVER_US = float(T_WIN_MAX_TICKS)

TRACES = trace_set(50, 50_000)


@pytest.fixture(scope="module")
def results() -> list[Result]:
    return run_suite(TRACES, in_process())


def test_model_variants_and_kernel_conform(results: list[Result]) -> None:
    by_name = {r.adapter: r for r in results}
    for name in ("model-bmv2", "model-tofino2", "kernel"):
        r = by_name[name]
        assert r.skipped is None and r.traces == 50 and r.packets == 50_000
        assert r.mismatches == [], report([r])


def test_the_traces_reach_every_branch(results: list[Result]) -> None:
    reached = next(r for r in results if r.adapter == "kernel").coverage
    assert reached["thr_partial"] > 500 and reached["thr_certain"] > 300
    assert reached["unknown_p"] > 1000 and reached["untracked"] > 1000
    assert reached["marks"] > 500 and reached["alpha_above_1"] > 20


def test_the_traces_hold_the_hard_cases() -> None:
    jobs = [j for t in TRACES for j in t.jobs]
    assert {0.0, 255.0} <= {j.params.k for j in jobs}
    assert {"absolute", "relative"} == {j.params.psn_mode for j in jobs}
    assert {True, False} == {j.tag for j in jobs}
    for attr in ("t_win_us", "n_warmup", "n_sample", "alpha_max"):
        assert len({getattr(j.params, attr) for j in jobs}) >= 4, attr
    pkts = [tp for t in TRACES for tp in t.packets]
    assert any(not is_tracked_opcode(tp.pkt.opcode) for tp in pkts)
    assert {0, ar.STEP_MASK} <= {tp.pkt.step for tp in pkts}  # steps wrap
    assert max(tp.pkt.psn for tp in pkts) > ar.PSN_MASK - 3 and min(tp.pkt.psn for tp in pkts) == 0
    assert any(is_first(tp.pkt.opcode) for tp in pkts) and any(
        is_last(tp.pkt.opcode) for tp in pkts
    )
    gaps = [(b.now - a.now) % (1 << 32) for t in TRACES for a, b in pairwise(t.packets)]
    assert 0 in gaps and max(gaps) >= 1 << 31 and set(GAPS) <= set(gaps)
    dups = sum(a.pkt == b.pkt for t in TRACES for a, b in pairwise(t.packets))
    assert dups > 100


def test_a_short_trace_is_the_prefix_of_a_long_one() -> None:
    assert generate(7, 100).packets == generate(7, 3000).packets[:100]
    assert generate(7, 100).jobs == generate(7, 3000).jobs
    assert generate(7, 100) != generate(8, 100)


def _fields(result: Result) -> set[str]:
    return {m.field.split()[-1] for m in result.mismatches}


def test_alpha_plus_two_fails_in_state_and_decisions() -> None:
    [r] = run_suite(TRACES[:10], [AlphaPlusTwo()])
    assert "alpha" in _fields(r)
    assert any(m.packet is not None and m.field == "threshold" for m in r.mismatches)
    line = str(r.mismatches[0])
    assert f"trace seed {r.mismatches[0].seed}" in line and "expected" in line and "got" in line


@pytest.mark.parametrize("state", ["step_max", "win_start", "queue_marks"])
def test_a_perturbed_state_field_fails(state: str) -> None:
    [r] = run_suite(TRACES[:3], [Perturbed(KernelAdapter(), state=state)])
    assert _fields(r) == {state}
    assert all(m.packet is None and m.got == m.expected + 1 for m in r.mismatches)


@pytest.mark.parametrize("column", ["p", "mark", "ecn"])
def test_a_perturbed_decision_fails_at_its_first_packet(column: str) -> None:
    [r] = run_suite(TRACES[:2], [Perturbed(KernelAdapter(), column=column)])
    first = [m for m in r.mismatches if m.packet is not None]
    assert [(m.packet, m.field) for m in first] == [(0, column), (0, column)]


class OwnCoinModel(ModelAdapter):
    """The golden model with its own random numbers, seeing only what a switch shows: the
    runner's lockstep must accept its marks where P is strictly between 0 and 1."""

    own_coin = True
    exposes = frozenset({"mark", "ecn"})
    volatile = frozenset({"win_start"})

    def __init__(self, mark_when_certain_no: bool = False) -> None:
        super().__init__()
        self.name = "own-coin-model"
        self.rng = random.Random(1)
        self.fault = mark_when_certain_no

    def process(self, tp: TracePacket) -> Row:
        job, p, thr, mark, ecn = super().process(replace(tp, coin=self.rng.randrange(1 << 24)))
        if self.fault and job and thr == 0 and tp.pkt.ecn == 0b10:
            self.model.jobs[job].marks += 1
            return (job, p, thr, 1, 0b11)
        return (job, p, thr, mark, ecn)


def test_own_coin_marks_are_followed_where_p_is_uncertain() -> None:
    [r] = run_suite(TRACES[:10], [OwnCoinModel()])
    assert r.mismatches == [], report([r])
    assert r.coverage["thr_partial"] > 50  # the coins differed from the trace's somewhere


def test_own_coin_marks_are_checked_where_p_is_certain() -> None:
    [r] = run_suite(TRACES[:3], [OwnCoinModel(mark_when_certain_no=True)])
    assert {"mark", "ecn"} <= _fields(r)


def test_the_tofino_model_adapter_is_skipped_by_name() -> None:
    [r] = run_suite(TRACES[:1], [T2naModelAdapter()])
    assert r.skipped is not None and r.traces == 0
    assert report([r]).startswith("t2na-tofino-model: SKIPPED (not available")


def test_the_kernel_refuses_a_state_layout_it_does_not_compute() -> None:
    with pytest.raises(ImportError, match="extend the kernel"):
        sk._columns(("step_min", "new_register"), "step_min", "the JobState fields")
    assert tuple(sk.JS) == tuple(ModelAdapter().state(1).__dataclass_fields__)
    assert tuple(TRACES[0].jobs[0].action) == sk.ACTION_KEYS


def test_golden_diff_is_the_kernel_conformance_run() -> None:
    reached = golden_diff.compare(5_000, traces=5)
    assert reached["tracked"] > 4000


def test_an_empty_trace_conforms() -> None:
    trace = Trace(seed=-1, jobs=TRACES[0].jobs, packets=())
    [r] = run_suite([trace], [KernelAdapter()])
    assert r.mismatches == [] and r.packets == 0


class ModelSwitch:
    """A stand-in for the PTF base test whose switch is the golden model on a clock of its own
    (one tick per packet, far from the trace's) with its own coin: what the bmv2 adapter must
    bridge on the real switch. The real one runs in ptf_tests/test_conformance.py."""

    def __init__(self) -> None:
        self.pl = SwitchModel()
        self.clock = 12_345
        self.rng = random.Random(5)

    def install_job(
        self, job_id: int, params: JobParams | None = None, *, tag: bool, hosts: tuple[int, ...]
    ) -> dict[str, int]:
        assert params is not None
        prm = params.to_action_params()
        self.pl.install_job(job_id, prm, tag=tag, hosts=hosts)
        return prm

    def set_window(self, job_id: int, t_win_us: float) -> None:
        self.pl.job_params[job_id]["t_win"] = round(t_win_us)  # bmv2: 1 tick = 1 us

    def roce_frame(self, pkt: object, in_port: int = 0, out_port: int = 1) -> int:
        view = parsed_view(pkt)
        self.clock += 1
        d = self.pl.process(view, self.clock, self.rng.randrange(ar.COIN_RANGE))
        return ecn_out(view.ecn, bool(d.mark), False)

    def switch_state(self, job_id: int) -> JobState:
        return self.pl.state(job_id)

    def register_array(self, name: str) -> list[int]:
        assert name == FLOW_BASE
        return [self.pl.flows.get(slot, 0) for slot in range(FLOW_SLOTS)]

    def cleanup(self) -> None:
        self.pl = SwitchModel()


def test_the_bmv2_adapter_bridges_time_and_coin() -> None:
    """The adapter closes exactly the trace's windows on a switch with its own clock and follows
    its coin: no mismatch, on traces whose windows close at every distance."""
    adapter = Bmv2PtfAdapter(ModelSwitch(), T_WIN_NEVER_US, 0.0)
    [r] = run_suite([generate(seed, 300) for seed in range(12)], [adapter])
    assert r.mismatches == [], report([r])
    assert r.coverage["thr_partial"] > 20 and r.coverage["marks"] > 20


def test_the_bmv2_adapter_fails_a_switch_without_window_steering() -> None:
    class Unsteered(Bmv2PtfAdapter):
        def _steer_window(self, tp: TracePacket) -> int | None:
            self.clock.process(tp.pkt, tp.now, tp.coin)
            return self.clock.classify(tp.pkt)

    [r] = run_suite(
        [generate(seed, 300) for seed in range(12)], [Unsteered(ModelSwitch(), T_WIN_NEVER_US, 0.0)]
    )
    assert any(m.field.endswith(("alpha", "window_packets")) for m in r.mismatches)
