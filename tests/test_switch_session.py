"""SwitchSession.sync coalescing: callers queued behind a running sync are covered only by a sync
that began after their commit."""

from __future__ import annotations

import asyncio

from symphony.switch.session import SwitchSession


class Probe(SwitchSession):
    """A session without a switch: _sync_steps records which commits it saw."""

    def __init__(self) -> None:  # no config, no finsy: only the sync bookkeeping
        self._lock = asyncio.Lock()
        self._ready = asyncio.Event()
        self._ready.set()
        self._tickets = 0
        self._synced = 0
        self._mirror_stale = False
        self._sw = object()
        self.committed = 0
        self.runs: list[int] = []

    async def _sync_steps(self, sw: object) -> int:
        seen = self.committed  # what a real sync reads from the store, before any await
        await asyncio.sleep(0.01)  # the switch write
        self.runs.append(seen)
        return 1


async def _commit_and_sync(s: Probe) -> int:
    s.committed += 1
    mine = s.committed
    await s.sync()
    # When sync returns, some sync that had read this commit has finished.
    assert any(seen >= mine for seen in s.runs), (mine, s.runs)
    return mine


def test_concurrent_syncs_coalesce_and_cover_every_commit():
    async def main() -> list[int]:
        s = Probe()
        await asyncio.gather(*(_commit_and_sync(s) for _ in range(10)))
        return s.runs

    runs = asyncio.run(main())
    # The first caller syncs alone; the nine queued behind it are covered by one more sync.
    assert runs == [1, 10]


def test_a_commit_after_a_sync_started_gets_its_own_sync():
    async def main() -> list[int]:
        s = Probe()
        first = asyncio.create_task(_commit_and_sync(s))
        await asyncio.sleep(0.005)  # the first sync has read the state and is writing
        await _commit_and_sync(s)
        await first
        return s.runs

    assert asyncio.run(main()) == [1, 2]
