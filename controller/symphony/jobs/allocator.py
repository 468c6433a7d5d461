"""Job_ID choice: which free ID a new job gets (pure, so it can be property-tested).

Design (docs/design.md): IDs are 1..MAX_JOBS-1; a 13-bit tag can only name 1..8191, so tag-mode
jobs must get an ID there, while hosts-mode jobs can use any ID and take the upper half first to
leave the tag space to the jobs that need it. Within a range the search starts after the last ID
handed out (a rotating cursor) rather than at the lowest free one: a just-freed ID is then the
last to be reused, which keeps stale state or a late packet of an old job away from a new one
for as long as the fleet allows.
"""

from __future__ import annotations

from collections.abc import Container

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
    for r in ranges_for(mode):
        n = len(r)
        start = (cursor - r.start + 1) % n if r.start <= cursor < r.stop else 0
        for i in range(n):
            candidate = r.start + (start + i) % n
            if candidate not in used:
                return candidate
    return None
