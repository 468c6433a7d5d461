"""The two ECMP hashes: the first version's seeded mix (a new salt per run) and ns-3's, as HPCC's
switch model and Astra-Sim's ns-3 backend run it (src/point-to-point/model/switch-node.cc in
astra-sim/astra-network-ns3 and alibaba-edu/High-Precision-Congestion-Control)."""

from __future__ import annotations

import numpy as np

ROCE_DPORT = 4791
UDP = 17
# The UDP source port of the emulated hosts' ACK and CNP frames (evaluation/hosts/wire.py): the
# bmv2 switches hash a control frame on its own 5-tuple (receiver -> sender, this port), not on
# the data's, so ecmp "switch" routes the simulator's ACKs the same way.
CONTROL_SPORT = 0
# Astra-Sim's ns-3 frontend (scratch/common.h, entry.h send_flow): every host pair's source
# ports count up from 10000, one per message; the destination port is 100.
NS3_SPORT_BASE = 10000
NS3_DPORT = 100
M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1


def mix64(x: int) -> int:
    """splitmix64's finaliser: the salted hash of our switches."""
    x &= M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def ecmp_choice(src_ip: int, dst_ip: int, sport: int, salt: int, n: int) -> int:
    """The salted choice among `n` next hops (seeded per run)."""
    key = (src_ip << 32 | dst_ip) ^ (sport << 16 | ROCE_DPORT) << 8 ^ UDP
    return mix64(key ^ mix64(salt)) % n


def host_ip(h: int) -> int:
    """The salted model's host address, 10.1.x.y (also keys Symphony's flow table)."""
    return (10 << 24) | (1 << 16) | h


def ns3_ip(node_id: int) -> int:
    """common.h node_id_to_ip: 11.x.y.1 from the ns-3 node id."""
    return 0x0B000001 + (node_id // 256) * 0x00010000 + (node_id % 256) * 0x00000100


def ns3_hash(words: tuple[int, ...], seed: int) -> int:
    """SwitchNode::EcmpHash: murmur3 (32 bit) over 32-bit words (the key is a union of u32s,
    so whole words only: no tail for 12 bytes)."""
    h = seed & M32
    for k in words:
        k = (k * 0xCC9E2D51) & M32
        k = ((k << 15) | (k >> 17)) & M32
        k = (k * 0x1B873593) & M32
        h ^= k
        h = ((h << 13) | (h >> 19)) & M32
        h = (h * 5 + 0xE6546B64) & M32
    h ^= 4 * len(words)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def ns3_choice(sip: int, dip: int, sport: int, dport: int, seed: int, n: int) -> int:
    """SwitchNode::GetOutDev: EcmpHash of (sip, dip, sport | dport << 16) with the switch's
    m_ecmpSeed (its node id), modulo the number of next hops. An ACK hashes its own header:
    (receiver, sender, data dport | data sport << 16)."""
    return ns3_hash((sip, dip, (sport & 0xFFFF) | (dport & 0xFFFF) << 16), seed) % n


def _rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def ns3_hash_many(words: tuple[np.ndarray, ...], seed: np.ndarray) -> np.ndarray:
    """`ns3_hash` of many keys at once: words[i][k] is key k's i-th word (uint32 arithmetic
    wraps as the & M32 of the scalar one does; tested against it)."""
    with np.errstate(over="ignore"):
        h = np.asarray(seed).astype(np.uint32)
        for w in words:
            k = np.asarray(w).astype(np.uint32) * np.uint32(0xCC9E2D51)
            k = _rotl32(k, 15) * np.uint32(0x1B873593)
            h = _rotl32(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h = h ^ np.uint32(4 * len(words))
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        return h ^ (h >> np.uint32(16))


def ns3_ip_many(node_id: np.ndarray) -> np.ndarray:
    return 0x0B000001 + (node_id // 256) * 0x00010000 + (node_id % 256) * 0x00000100
