"""Symphony's flow-table keys of many flows at once: `switch_model.flow_slot` (the register
index and signature bmv2's crc32 and crc16 give over src_addr ++ dqpn) over arrays, for the
simulator's millions of flows. The controller's model stays scalar (the daemon needs no numpy);
tests/test_fabric_hashing.py proves these equal to it."""

from __future__ import annotations

import numpy as np

from symphony.model import arithmetic as ar
from symphony.sizes import FLOW_SLOTS


def _crc32_table() -> np.ndarray:
    """zlib's CRC-32 register step per byte (reflected polynomial 0xEDB88320)."""
    out = np.zeros(256, dtype=np.int64)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        out[b] = c
    return out


_CRC32 = _crc32_table()
# CRC-16/ARC from init 0: one byte's crc is the table entry
_CRC16 = np.array([ar.crc16(bytes([b])) for b in range(256)], dtype=np.int64)


def crc32_rows(data: np.ndarray) -> np.ndarray:
    """`ar.crc32` of each row of `data` ([n, bytes], values 0-255)."""
    crc = np.full(data.shape[0], 0xFFFFFFFF, dtype=np.int64)
    for j in range(data.shape[1]):
        crc = _CRC32[(crc ^ data[:, j]) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc16_rows(data: np.ndarray) -> np.ndarray:
    """`ar.crc16` of each row of `data` ([n, bytes], values 0-255)."""
    crc = np.zeros(data.shape[0], dtype=np.int64)
    for j in range(data.shape[1]):
        crc = (crc >> 8) ^ _CRC16[(crc ^ data[:, j]) & 0xFF]
    return crc


def flow_slots(
    src: np.ndarray, dqpn: np.ndarray, slots: int = FLOW_SLOTS
) -> tuple[np.ndarray, np.ndarray]:
    """`switch_model.flow_slot(src[i], dqpn[i], slots)` for every i: (slot, signature)."""
    s, q = np.asarray(src, dtype=np.int64), np.asarray(dqpn, dtype=np.int64)
    key = np.stack(
        [(s >> k) & 0xFF for k in (24, 16, 8, 0)] + [(q >> k) & 0xFF for k in (16, 8, 0)], axis=1
    )
    return crc32_rows(key) % slots, crc16_rows(key) | 0x8000
