"""The ECMP hash of the golden model (symphony.model.ecmp): the standard CRC-32 of the 13-byte
5-tuple, its bucket, and how a group's members fill the buckets. The switches' side is checked
frame by frame in ptf_tests/test_ecmp.py."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from symphony.model.ecmp import bucket_members, ecmp_bucket, ecmp_hash, next_hop
from symphony.sizes import ECMP_BUCKETS


def _crc32_bitwise(data: bytes) -> int:
    """CRC-32 written out (reflected polynomial 0xEDB88320, init and final xor all ones), so that
    the test does not take zlib's word for what the switch computes."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_the_reference_crc_is_the_standard_one() -> None:
    # The CRC-32 check value of the catalogue (CRC-32/ISO-HDLC): crc("123456789").
    assert _crc32_bitwise(b"123456789") == 0xCBF43926


def test_hash_is_crc32_of_the_big_endian_5_tuple() -> None:
    # 10.0.0.1 -> 10.0.1.2, UDP 4791, sport 1000: the 13 bytes in order.
    data = bytes.fromhex("0a0000010a0001021103e812b7")
    assert ecmp_hash(0x0A000001, 0x0A000102, 17, 1000, 4791) == _crc32_bitwise(data)
    assert ecmp_hash(0, 0, 0, 0, 0) == _crc32_bitwise(bytes(13))
    assert ecmp_hash(0, 0, 0, 0, 0) == 0x0F744682  # a literal, in case both sides drift
    rng = random.Random(1)
    for _ in range(200):
        t = (rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(8))
        ports = (rng.getrandbits(16), rng.getrandbits(16))
        data = b"".join(
            v.to_bytes(n, "big") for v, n in zip((*t, *ports), (4, 4, 1, 2, 2), strict=True)
        )
        assert ecmp_hash(*t, *ports) == _crc32_bitwise(data)


def test_bucket_is_the_low_bits() -> None:
    h = ecmp_hash(0x0A000001, 0x0A000102, 17, 1000, 4791)
    assert ecmp_bucket(0x0A000001, 0x0A000102, 17, 1000, 4791) == h % ECMP_BUCKETS
    assert ECMP_BUCKETS == 16


def test_every_field_moves_the_hash() -> None:
    base = [0x0A000001, 0x0A000102, 17, 1000, 4791]
    for i in range(5):
        other = list(base)
        other[i] ^= 1
        assert ecmp_hash(*other) != ecmp_hash(*base)


def test_out_of_range_fields_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="sport"):
        ecmp_hash(1, 2, 17, 1 << 16, 0)
    with pytest.raises(ValueError, match="src"):
        ecmp_hash(-1, 2, 17, 0, 0)
    with pytest.raises(ValueError, match="proto"):
        ecmp_hash(1, 2, 256, 0, 0)


def test_buckets_spread_the_step_ports() -> None:
    """A ring's steps differ only in the UDP source port: over many of them, every bucket is hit,
    none far from its share (a loose bound: the hash is not a test of chance)."""
    n = 16_000
    counts = Counter(ecmp_bucket(0x0A000001, 0x0A000202, 17, sport, 4791) for sport in range(n))
    assert set(counts) == set(range(ECMP_BUCKETS))
    share = n / ECMP_BUCKETS
    assert all(0.9 * share < c < 1.1 * share for c in counts.values()), counts


def test_bucket_members_fill_in_port_order() -> None:
    assert bucket_members([7]) == (7,) * ECMP_BUCKETS
    assert bucket_members([3, 2]) == (2, 3) * (ECMP_BUCKETS // 2)
    three = bucket_members([6, 1, 4])
    assert three[:6] == (1, 4, 6, 1, 4, 6)
    assert len(three) == ECMP_BUCKETS
    assert Counter(three) == {1: 6, 4: 5, 6: 5}


def test_bucket_members_refuse_bad_groups() -> None:
    with pytest.raises(ValueError, match="at least one"):
        bucket_members([])
    with pytest.raises(ValueError, match="repeat"):
        bucket_members([1, 1])
    with pytest.raises(ValueError, match="buckets"):
        bucket_members(range(ECMP_BUCKETS + 1))


def test_next_hop_is_the_member_of_the_bucket() -> None:
    members = (5, 2, 9)
    rng = random.Random(2)
    seen = set()
    for _ in range(300):
        t = (rng.getrandbits(32), rng.getrandbits(32), 17, rng.getrandbits(16), 4791)
        port = next_hop(members, *t)
        assert port == bucket_members(members)[ecmp_bucket(*t)]
        seen.add(port)
    assert seen == set(members)
    # Without UDP the ports are 0; the order of the members given does not matter.
    assert next_hop([9, 2, 5], 1, 2, 6, 0, 0) == next_hop(members, 1, 2, 6, 0, 0)
