"""The policy study's table and runs (evaluation/fabric/policy_study.py), without simulating."""

from __future__ import annotations

from evaluation.fabric import policy_study as ps
from evaluation.fabric.collectives import lockstep_bound_us


def test_every_policy_run_has_its_baseline_on_the_same_seeds():
    by = ps.study_runs(range(100, 104), range(100, 102), range(100, 101))
    assert set(by) == set(ps.ORDER)
    for scenario, runs in by.items():
        base = {(r.param, r.seed) for r in runs if r.variant == "baseline"}
        assert base, scenario
        for r in runs:
            assert (r.param, r.seed) in base or ("", r.seed) in base, (scenario, r.variant)
            if r.variant in ps.POLICIES:
                assert r.cfg.mode == "symphony"
                # the k sweep changes k alone; elsewhere the policy is as declared
                want = ps.POLICIES[r.variant]
                assert r.cfg.symphony.gate_depth == want.params.gate_depth
                if scenario != "k":
                    assert r.cfg == want.apply(r.cfg)


def test_the_candidate_is_the_same_policy_in_every_set():
    assert ps.GATES[ps.CANDIDATE] == ps.CHOOSE[ps.CANDIDATE] == ps.POLICIES[ps.CANDIDATE]
    assert ps.GATES["gate0-k0.01"] == ps.POLICIES["paper"]  # the paper's policy


def test_random_arrivals_are_seeded_and_within_the_first_half():
    cfg = ps.base_config(False, topology="rings", splits=1)
    a, b = ps._arrivals(cfg, 100), ps._arrivals(cfg, 101)
    assert a == ps._arrivals(cfg, 100) and a != b
    assert a.jobs == ps.ARRIVAL_JOBS and len(a.job_start_us) == ps.ARRIVAL_JOBS
    assert all(0 <= t <= 0.5 * lockstep_bound_us(cfg) for t in a.job_start_us)


def test_table_cells_are_medians_against_the_baseline():
    def row(variant: str, cct: float, param: str = "") -> dict[str, str]:
        return {
            "scenario": "rings",
            "param": param,
            "variant": variant,
            "cct_us": str(cct),
            "bound_us": "500",
            "x_bound": str(cct / 500),
        }

    rows = [row("baseline", c) for c in (900, 1000, 1100)]
    rows += [row("pq", c) for c in (1200, 1100, 1000)]
    rows += [row(ps.CANDIDATE, c) for c in (800, 700, 900)]
    text = ps.table(rows)
    line = next(s for s in text.splitlines() if s.startswith("| rings"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # scenario, param, seeds, baseline ms, PQ, paper, candidate, bound, x bound
    assert cells[2:5] == ["3", "1.0", "+10.0%"]
    assert cells[5] == "-" and cells[6] == "-20.0%"
    assert cells[7:] == ["0.5", "2.00"]
