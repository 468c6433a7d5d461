"""ECMP: which member port of an equal-cost group a frame leaves on. The one Python declaration
of the data plane's hash (p4src/*/include/forward.p4), used by the tests, the controller and the
fabric simulator to predict a frame's path.

The hash is the standard CRC-32 (reflected, zlib.crc32; v1model HashAlgorithm.crc32, t2na
HashAlgorithm_t.CRC32) over 13 bytes, big-endian, in this order: IPv4 source (32 bits), IPv4
destination (32), protocol (8), UDP source port (16), UDP destination port (16). A frame without
a UDP header (TCP, ICMP, IPv4 with options or fragments, which the parser does not take to UDP)
hashes with both ports 0. A group has ECMP_BUCKETS buckets, the hash's low bits; the controller
fills bucket b of a group of n members with the b % n-th member, members sorted by port number.
With 16 buckets a group of 3 is not exactly even (6/5/5): docs/design.md "ECMP" says why that is
accepted.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from symphony.sizes import ECMP_BUCKETS

_FIELDS = (("src", 32), ("dst", 32), ("proto", 8), ("sport", 16), ("dport", 16))


def ecmp_hash(src: int, dst: int, proto: int, sport: int, dport: int) -> int:
    """The CRC-32 of the 5-tuple as the switch computes it (sport = dport = 0 without UDP)."""
    values = (src, dst, proto, sport, dport)
    for (name, bits), value in zip(_FIELDS, values, strict=True):
        if not 0 <= value < 1 << bits:
            raise ValueError(f"ecmp_hash: {name} = {value} is not a {bits}-bit unsigned value")
    return zlib.crc32(struct.pack(">IIBHH", *values))


def ecmp_bucket(src: int, dst: int, proto: int, sport: int, dport: int) -> int:
    """The bucket of a group the 5-tuple falls in: the hash's low bits."""
    return ecmp_hash(src, dst, proto, sport, dport) & (ECMP_BUCKETS - 1)


def bucket_members(members: Sequence[int]) -> tuple[int, ...]:
    """The member port of each bucket 0..ECMP_BUCKETS-1: bucket b -> sorted(members)[b % n]."""
    ports = sorted(members)
    if not ports:
        raise ValueError("bucket_members: an ECMP group needs at least one member port")
    if len(set(ports)) != len(ports):
        raise ValueError(f"bucket_members: member ports {ports} repeat a port")
    if len(ports) > ECMP_BUCKETS:
        raise ValueError(
            f"bucket_members: {len(ports)} member ports, more than the {ECMP_BUCKETS} buckets"
        )
    return tuple(ports[b % len(ports)] for b in range(ECMP_BUCKETS))


def next_hop(members: Sequence[int], src: int, dst: int, proto: int, sport: int, dport: int) -> int:
    """The port a frame with this 5-tuple leaves on, routed to a group of these members."""
    return bucket_members(members)[ecmp_bucket(src, dst, proto, sport, dport)]
