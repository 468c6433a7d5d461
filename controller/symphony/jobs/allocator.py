"""Job_ID choice: which free ID a new job gets (pure, so it can be property-tested).

Design (docs/design.md): IDs are 1..MAX_JOBS-1; a 13-bit tag can only name 1..8191, so tag-mode
jobs must get an ID there, while hosts-mode jobs can use any ID and take the upper half first to
leave the tag space to the jobs that need it. Within a range the search starts after the last ID
handed out (a rotating cursor) rather than at the lowest free one: a just-freed ID is then the
last to be reused, which keeps stale state or a late packet of an old job away from a new one
for as long as the fleet allows.
"""

from __future__ import annotations

from collections.abc import Callable, Container

from symphony.sizes import MAX_JOBS, TAG_MAX

MODES = ("tag", "hosts")


def ranges_for(mode: str) -> tuple[range, ...]:
    """The ID ranges a job of this mode may use, in order of preference."""
    if mode == "tag":
        return (range(1, TAG_MAX + 1),)
    if mode == "hosts":
        return (range(TAG_MAX + 1, MAX_JOBS), range(1, TAG_MAX + 1))
    raise ValueError(f"unknown mode {mode!r}")


def pick(used: Container[int], mode: str, cursor: int = 0) -> int | None:
    """The first ID of the mode's ranges not in ``used``, searching each range from just after
    ``cursor`` (wrapping); None when every ID the mode may use is taken."""

    def first_free(lo: int, hi: int) -> int | None:
        return next((i for i in range(lo, hi + 1) if i not in used), None)

    return search(first_free, mode, cursor)


def search(first_free: Callable[[int, int], int | None], mode: str, cursor: int = 0) -> int | None:
    """`pick` over any source of free IDs: ``first_free(lo, hi)`` is the lowest free ID in
    lo..hi (inclusive), or None. The store answers it from its index without listing every live
    ID (jobs/store.py)."""
    for r in ranges_for(mode):
        start = cursor + 1 if r.start <= cursor < r.stop else r.start
        got = first_free(start, r.stop - 1) if start < r.stop else None
        if got is None and start > r.start:
            got = first_free(r.start, start - 1)
        if got is not None:
            return got
    return None
