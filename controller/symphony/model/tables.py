"""Every lookup-table entry the switch needs, generated from the arithmetic module.

`symphony-tables` prints them (for inspection, or to diff two versions of the model).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cache

from symphony import p4names as n
from symphony.model import arithmetic as ar
from symphony.model.params import QueueParams
from symphony.sizes import QUEUE_DEPTH_LIMIT

MatchValue = int | tuple[int, int]


@dataclass(frozen=True)
class TableEntrySpec:
    """One table entry, target-neutral: full P4Info names, integer values.

    lpm match values are (value, prefix_len); range values are (low, high).
    """

    table: str
    action: str
    params: dict[str, int]
    match: dict[str, MatchValue] = field(default_factory=dict)
    priority: int = 0
    is_default: bool = False


def log_buckets() -> Iterator[tuple[int, int]]:
    """Every (prefix value, prefix length) of the log2 LPM table, covering 1..2^24-1 once."""
    m = ar.LOG_MANTISSA_BITS
    for e in range(ar.PSN_BITS):
        if e <= m:
            for x in range(1 << e, 1 << (e + 1)):
                yield x, ar.PSN_BITS
        else:
            drop = e - m
            for mant in range(1 << m, 1 << (m + 1)):
                yield mant << drop, ar.PSN_BITS - drop


def _table(
    table: str, key: str, action: str, param: str, rows: Iterable[tuple[MatchValue, int]]
) -> list[TableEntrySpec]:
    """One entry per (match value, action-data value) row."""
    return [
        TableEntrySpec(table=table, match={key: m}, action=action, params={param: v})
        for m, v in rows
    ]


def _log_table(table: str, key: str, action: str) -> list[TableEntrySpec]:
    rows = (((lo, plen), ar.log_bucket_value(lo, plen)) for lo, plen in log_buckets())
    return _table(table, key, action, "value", rows)


@cache
def lut_entries() -> tuple[TableEntrySpec, ...]:
    """The four lookup tables of SPEC section 5: log2 p, log2 psn_rec, log2 alpha, exp."""
    entries = _log_table(n.LOG_P, "p", n.SET_LOG_P)
    entries += _log_table(n.LOG_PSN_REC, "psn_rec", n.SET_LOG_PSN_REC)
    alphas = range(1, ar.ALPHA_LIMIT + 1)
    entries += _table(
        n.LOG_ALPHA, "alpha", n.SET_LOG_ALPHA, "value", ((a, ar.log2_alpha(a)) for a in alphas)
    )
    distances = range(ar.PROB_TABLE_SIZE)
    entries += _table(
        n.PROB_THRESHOLD,
        "d",
        n.SET_THRESHOLD,
        "threshold",
        ((d, ar.threshold_for(d)) for d in distances),
    )
    # Beyond the table P >= 1: mark always.
    entries.append(
        TableEntrySpec(
            table=n.PROB_THRESHOLD,
            action=n.SET_THRESHOLD,
            params={"threshold": ar.COIN_RANGE},
            is_default=True,
        )
    )
    return tuple(entries)


def queue_mark_threshold(depth: int, q: QueueParams) -> int:
    """Coin threshold of the RED-like ramp at one queue depth: 0 below K_min, linear to P_max at
    K_max, always above K_max."""
    if depth < q.k_min:
        return 0
    if depth > q.k_max:
        return ar.COIN_RANGE
    return round(ar.COIN_RANGE * q.p_max * (depth - q.k_min) / (q.k_max - q.k_min))


# At most this many range entries per port for the ramp; wider ramps (bytes, cells) are
# approximated by steps evaluated at each bucket's midpoint.
QUEUE_RAMP_BUCKETS = 256


def queue_mark_entries(port: int, params: QueueParams) -> list[TableEntrySpec]:
    """Range entries on (egress_port, deq_qdepth) for one port's ramp; the default is no mark."""
    params.validate()
    span = params.k_max - params.k_min + 1
    width = -(-span // QUEUE_RAMP_BUCKETS)
    entries = []
    for lo in range(params.k_min, params.k_max + 1, width):
        hi = min(lo + width - 1, params.k_max)
        thr = queue_mark_threshold((lo + hi) // 2, params)
        if thr:
            entries.append(_queue_entry(port, lo, hi, thr))
    # Always mark above K_max; with K_max at the largest depth there is no "above".
    if params.k_max + 1 < QUEUE_DEPTH_LIMIT:
        entries.append(_queue_entry(port, params.k_max + 1, QUEUE_DEPTH_LIMIT - 1, ar.COIN_RANGE))
    return entries


def _queue_entry(port: int, lo: int, hi: int, thr: int) -> TableEntrySpec:
    return TableEntrySpec(
        table=n.QUEUE_THRESHOLD,
        match={"egress_port": port, "deq_qdepth": (lo, hi)},
        action=n.SET_QUEUE_THRESHOLD,
        params={"threshold": thr},
        priority=1,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Print Symphony's lookup-table entries as JSON")
    parser.add_argument("--table", help="only this table (full P4Info name)")
    args = parser.parse_args(argv)
    for entry in lut_entries():
        if args.table in (None, entry.table):
            print(json.dumps(asdict(entry)))


if __name__ == "__main__":
    main()
