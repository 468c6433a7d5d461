"""Table generation: parameters as action data, lookup tables, the queue ramp."""

import pytest

from symphony.model import arithmetic as ar
from symphony.model.params import JobParams, QueueParams
from symphony.model.tables import lut_entries, queue_mark_entries, queue_mark_threshold
from symphony.p4names import LOG_ALPHA, LOG_P, LOG_PSN_REC, PROB_THRESHOLD, QUEUE_THRESHOLD
from symphony.sizes import QUEUE_DEPTH_LIMIT


def test_default_parameters_encode_as_action_data() -> None:
    ap = JobParams().to_action_params(tick_ns=1000)
    assert ap == {
        "mark_enable": 1,
        "k_log": ar.k_to_log(0.01),
        "tau_q8": 64,
        "t_win": 100,
        "n_warmup": 16,
        "n_sample": 32,
        "alpha_max": 32,
        "psn_absolute": 0,
        "sym_gate": 0,
    }
    assert JobParams().to_action_params(tick_ns=1)["t_win"] == 100_000


def test_k_zero_disables_marking() -> None:
    ap = JobParams(k=0).to_action_params()
    assert ap["mark_enable"] == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k", -1.0),
        ("k", 300.0),
        ("tau", 1.5),
        ("t_win_us", -1.0),
        ("n_warmup", 1 << 24),
        ("n_sample", -1),
        ("alpha_max", 0),
        ("alpha_max", 256),
        ("psn_mode", "sideways"),
    ],
)
def test_bad_parameters_name_their_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        JobParams().merged({field: value})


def test_unknown_parameter_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"^kk: unknown parameter"):
        JobParams().merged({"kk": 1})


def test_lut_entries_cover_every_table_once() -> None:
    entries = lut_entries()
    by_table: dict[str, int] = {}
    for e in entries:
        if not e.is_default:
            by_table[e.table] = by_table.get(e.table, 0) + 1
    assert by_table == {LOG_P: 1215, LOG_PSN_REC: 1215, LOG_ALPHA: 255, PROB_THRESHOLD: 4096}
    defaults = [e for e in entries if e.is_default]
    assert [(e.table, e.params) for e in defaults] == [
        (PROB_THRESHOLD, {"threshold": ar.COIN_RANGE})
    ]


def _ramp_lookup(entries, depth: int) -> int:
    for e in entries:
        lo, hi = e.match["deq_qdepth"]
        if lo <= depth <= hi:
            return e.params["threshold"]
    return 0


def test_queue_ramp_in_packets_is_exact() -> None:
    q = QueueParams(k_min=50, k_max=100, p_max=0.2)
    entries = queue_mark_entries(3, q)
    assert all(e.table == QUEUE_THRESHOLD and e.match["egress_port"] == 3 for e in entries)
    for depth in (0, 49, 50, 51, 75, 99, 100, 101, 5000, QUEUE_DEPTH_LIMIT - 1):
        assert _ramp_lookup(entries, depth) == queue_mark_threshold(depth, q), depth
    assert queue_mark_threshold(100, q) == round(0.2 * ar.COIN_RANGE)
    assert queue_mark_threshold(101, q) == ar.COIN_RANGE


def test_queue_ramp_up_to_the_largest_depth_fits_the_field() -> None:
    """K_max at the last 19-bit depth (the config accepts it): every range stays inside the
    field, so the switch takes the entries (an overflowing "above K_max" range once made the
    controller retry the pipeline forever)."""
    q = QueueParams(k_min=500_000, k_max=QUEUE_DEPTH_LIMIT - 1, p_max=0.2)
    entries = queue_mark_entries(0, q)
    assert all(0 <= e.match["deq_qdepth"][1] < QUEUE_DEPTH_LIMIT for e in entries)
    assert _ramp_lookup(entries, 0) == _ramp_lookup(entries, q.k_min - 1) == 0
    top = _ramp_lookup(entries, QUEUE_DEPTH_LIMIT - 1) / ar.COIN_RANGE
    assert abs(top - q.p_max) <= q.p_max / 256 + 1e-9  # the ramp's last bucket, not "always"


def test_queue_ramp_in_bytes_is_bucketed() -> None:
    q = QueueParams(k_min=10_000, k_max=200_000, p_max=0.5)
    entries = queue_mark_entries(1, q)
    assert len(entries) <= 257
    for depth in range(q.k_min, q.k_max + 1, 997):
        exact = q.p_max * (depth - q.k_min) / (q.k_max - q.k_min)
        applied = _ramp_lookup(entries, depth) / ar.COIN_RANGE
        assert abs(applied - exact) <= q.p_max / 256 + 1e-9


@pytest.mark.parametrize(
    ("kw", "field"),
    [({"k_min": -1}, "k_min"), ({"k_max": 10, "k_min": 10}, "k_max"), ({"p_max": 2.0}, "p_max")],
)
def test_bad_queue_parameters(kw: dict, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        QueueParams(**kw).validate()
