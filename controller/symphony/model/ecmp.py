"""ECMP as the data plane does it: the hash of a frame's 5-tuple, its bucket, a group's buckets.

Both targets (p4src/*/include/forward.p4) hash with the standard reflected CRC-32 (zlib's) over
{ipv4.src_addr, ipv4.dst_addr, ipv4.protocol, UDP sport, UDP dport} (13 bytes, big-endian, in
this order; the ports are 0 without a UDP header) and take its low ECMP_BUCKET_BITS bits as the
bucket. The controller fills a group of n member ports with ECMP_BUCKETS entries, bucket b ->
members[b % n], members ascending by port number. Tests, the controller and the simulator
predict a frame's path with these functions.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from symphony.sizes import ECMP_BUCKETS


def ecmp_hash(src: int, dst: int, proto: int, sport: int, dport: int) -> int:
    """The CRC-32 of the 5-tuple (IPv4 addresses as ints)."""
    data = (
        src.to_bytes(4, "big")
        + dst.to_bytes(4, "big")
        + proto.to_bytes(1, "big")
        + sport.to_bytes(2, "big")
        + dport.to_bytes(2, "big")
    )
    return zlib.crc32(data)


def ecmp_bucket(src: int, dst: int, proto: int, sport: int, dport: int) -> int:
    """The bucket of the 5-tuple: the hash's low bits."""
    return ecmp_hash(src, dst, proto, sport, dport) & (ECMP_BUCKETS - 1)


def bucket_members(members: Sequence[int]) -> tuple[int, ...]:
    """The member port of each bucket (ECMP_BUCKETS of them) of a group of these ports."""
    ordered = sorted(members)
    if not ordered:
        raise ValueError("an ECMP group needs at least one member")
    return tuple(ordered[b % len(ordered)] for b in range(ECMP_BUCKETS))


def next_hop(members: Sequence[int], src: int, dst: int, proto: int, sport: int, dport: int) -> int:
    """The member port a frame with this 5-tuple leaves on."""
    return bucket_members(members)[ecmp_bucket(src, dst, proto, sport, dport)]
