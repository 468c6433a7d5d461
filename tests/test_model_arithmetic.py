"""The golden model's integer arithmetic: serial steps, PSN, logs, thresholds, hashes."""

import math
import random

import pytest

from conformance import accuracy
from symphony.model import arithmetic as ar
from symphony.model.tables import log_buckets


@pytest.mark.parametrize(
    ("s", "ref", "later", "earlier"),
    [
        (5, 5, False, False),
        (6, 5, True, False),
        (4, 5, False, True),
        (0, 65535, True, False),  # wrap: 65535 -> 0 is one step later
        (65535, 0, False, True),
        (32767, 0, True, False),
        (32768, 0, False, True),  # the ambiguous half-way distance counts as earlier
    ],
)
def test_serial_step_order(s: int, ref: int, later: bool, earlier: bool) -> None:
    assert ar.step_later(s, ref) is later
    assert ar.step_earlier(s, ref) is earlier


def test_relative_psn_wraps_at_2_24() -> None:
    assert ar.relative_psn(5, 0xFFFFFE) == 7
    assert ar.relative_psn(100, 100) == 0


def _lpm_lookup(table: dict[int, dict[int, int]], x: int) -> tuple[int, int]:
    for plen in sorted(table, reverse=True):
        prefix = x >> (ar.PSN_BITS - plen) << (ar.PSN_BITS - plen)
        if prefix in table[plen]:
            return prefix, plen
    raise AssertionError(f"no entry matches {x}")


def test_log_buckets_partition_the_input_range() -> None:
    buckets = list(log_buckets())
    assert len(set(buckets)) == len(buckets) == 1215
    assert sum(1 << (ar.PSN_BITS - plen) for _, plen in buckets) == ar.PSN_MASK
    table: dict[int, dict[int, int]] = {}
    for lo, plen in buckets:
        table.setdefault(plen, {})[lo] = 1
    rng = random.Random(7)
    samples = [1, 2, 127, 128, 129, 255, 256, ar.PSN_MASK] + [
        rng.randrange(1, ar.PSN_MASK + 1) for _ in range(2000)
    ]
    for x in samples:
        assert _lpm_lookup(table, x) == ar.log_bucket(x), x


def test_log_is_exact_for_small_values_and_close_everywhere() -> None:
    for x in range(1, 128):
        assert ar.log2_fixed(x) == round(math.log2(x) * ar.LOG_ONE)
    errors = accuracy.log_table_errors()[1:]
    # Bucket half-width log2(1 + 2^-6) / 2 plus half a unit of rounding.
    limit = math.log2(1 + 2**-ar.LOG_MANTISSA_BITS) / 2 * ar.LOG_ONE + 0.5
    assert abs(errors).max() <= limit


def test_threshold_table_is_monotone_and_spans_the_coin() -> None:
    thresholds = [ar.threshold_for(d) for d in range(ar.PROB_TABLE_SIZE)]
    assert thresholds == sorted(thresholds)
    assert thresholds[0] == round(ar.COIN_RANGE * 2**-16)
    assert thresholds[-1] < ar.COIN_RANGE
    assert ar.threshold_for(ar.PROB_TABLE_SIZE) == ar.COIN_RANGE


def test_probability_accuracy_meets_the_spec_over_the_whole_range() -> None:
    """SPEC 5: within 10 % relative for every P >= 2^-12; the measured bound is far tighter."""
    b = accuracy.bound(None)
    assert b.worst < accuracy.SPEC_BOUND
    assert b.worst < 0.025  # what docs/lut.md publishes (about 2.1 %)


def test_sampled_probabilities_stay_inside_the_measured_bound() -> None:
    rng = random.Random(11)
    b = accuracy.bound(None)
    checked = 0
    for _ in range(20000):
        k = 2 ** rng.uniform(-12, 2)
        alpha = rng.randint(1, 255)
        q = rng.randrange(1, ar.PSN_MASK + 1)
        p = rng.randrange(1, ar.PSN_MASK + 1)
        exact = ar.exact_probability(k, alpha, p, q)
        if exact < accuracy.P_FLOOR:
            continue
        applied = ar.applied_probability(ar.mark_threshold(ar.k_to_log(k), alpha, p, q))
        assert b.rel_low - 1e-12 <= applied / exact - 1 <= b.rel_high + 1e-12
        checked += 1
    assert checked > 5000


def test_eq5_integer_form() -> None:
    assert ar.window_raises_alpha(window_ahead_packets=25, window_packets=100, tau_q8=64)
    assert not ar.window_raises_alpha(window_ahead_packets=24, window_packets=100, tau_q8=64)
    assert ar.window_raises_alpha(window_ahead_packets=0, window_packets=100, tau_q8=0)


def test_k_encoding_range() -> None:
    assert ar.k_to_log(2**-16) == 0
    assert ar.k_to_log(1.0) == 16 * 256
    for bad in (0.0, 2**-17, 256.0):
        with pytest.raises(ValueError):
            ar.k_to_log(bad)


def test_bmv2_hash_algorithms() -> None:
    # The standard check values of CRC-32 and CRC-16/ARC.
    assert ar.crc32(b"123456789") == 0xCBF43926
    assert ar.crc16(b"123456789") == 0xBB3D


def test_tofino_16_bit_d_equals_the_exact_sum_everywhere() -> None:
    # t2na sums d in 16 bits and reads its sign from bit 15 (docs/tofino.md). The exact sum
    # stays inside 16 signed bits at the extremes of every term (so wrapping never changes it),
    # and a random sweep checks the chain of operations itself.
    xs = [1, 2, 3, 1 << 12, (1 << 24) - 1]
    alphas = [1, 2, 31, 32, ar.ALPHA_LIMIT]
    k_logs = [ar.k_to_log(ar.K_MIN), ar.k_to_log(0.01), ar.k_to_log(1.0), ar.k_to_log(255.99)]
    for p in xs:
        for rec in xs:
            for a in alphas:
                for k_log in k_logs:
                    exact = ar.log2_fixed(p) + ar.log2_alpha(a) + k_log - ar.log2_fixed(rec)
                    assert -(1 << 15) < exact < (1 << 15)
                    assert ar.d_tofino(k_log, a, p, rec) == exact
    rng = random.Random(4)
    for _ in range(20000):
        p = rng.randrange(1, 1 << 24)
        rec = rng.randrange(1, 1 << 24)
        a = rng.randrange(1, ar.ALPHA_LIMIT + 1)
        k_log = rng.choice(k_logs)
        exact = ar.log2_fixed(p) + ar.log2_alpha(a) + k_log - ar.log2_fixed(rec)
        assert ar.d_tofino(k_log, a, p, rec) == exact
        assert ar.mark_threshold(k_log, a, p, rec, tofino=True) == ar.mark_threshold(
            k_log, a, p, rec
        )


def test_step_overlap_is_serial() -> None:
    assert ar.step_overlap(5, 5) == 1
    assert ar.step_overlap(5, 7) == 3
    assert ar.step_overlap(65535, 1) == 3  # across the wrap
    assert ar.step_overlap(8, 7) == 0  # step_max behind step_min: all completed
    assert ar.step_overlap(0, ar.STEP_HALF - 1) == ar.STEP_HALF
    assert ar.step_overlap(0, ar.STEP_HALF) == 0  # the ambiguous distance counts as behind


def test_crc16_by_table_is_crc16_bit_by_bit() -> None:
    rng = random.Random(16)
    for n in (0, 1, 2, 7, 64):
        for _ in range(50):
            data = bytes(rng.randrange(256) for _ in range(n))
            assert ar.crc16(data) == ar._crc16_bitwise(data)
