"""SwitchSession.sync coalescing: callers queued behind a running sync are covered only by a sync
that began after their commit, and one sync writes the jobs of all of them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from symphony.switch.session import SwitchSession


class Probe(SwitchSession):
    """A session without a switch: _sync_jobs records which commits and jobs it saw."""

    def __init__(self) -> None:  # no config, no finsy: only the sync bookkeeping
        self._lock = asyncio.Lock()
        self._ready = asyncio.Event()
        self._ready.set()
        self._tickets = 0
        self._synced = 0
        self._mirror_stale = False
        self._mirror = {}
        self._dirty = set()
        self._dirty_all = False
        self._dirty_base = False
        self.status = SimpleNamespace(entries=0)
        self._sw = object()
        self.committed = 0
        self.runs: list[int] = []
        self.jobs: list[set[int]] = []

    async def _sync_jobs(self, sw: object, job_ids: set[int]) -> int:
        seen = self.committed  # what a real sync reads from the store, before any await
        self.jobs.append(set(job_ids))
        await asyncio.sleep(0.01)  # the switch write
        self.runs.append(seen)
        return 1


async def _commit_and_sync(s: Probe) -> int:
    s.committed += 1
    mine = s.committed
    await s.sync([mine])
    # When sync returns, some sync that had read this commit has finished.
    assert any(seen >= mine for seen in s.runs), (mine, s.runs)
    return mine


def test_concurrent_syncs_coalesce_and_cover_every_commit():
    async def main() -> Probe:
        s = Probe()
        await asyncio.gather(*(_commit_and_sync(s) for _ in range(10)))

        return s

    s = asyncio.run(main())
    # The first caller syncs alone; the nine queued behind it are covered by one more sync,
    # which writes the nine jobs together.
    assert s.runs == [1, 10]
    assert s.jobs == [{1}, set(range(2, 11))]


def test_a_commit_after_a_sync_started_gets_its_own_sync():
    async def main() -> list[int]:
        s = Probe()
        first = asyncio.create_task(_commit_and_sync(s))
        await asyncio.sleep(0.005)  # the first sync has read the state and is writing
        await _commit_and_sync(s)
        await first
        return s.runs

    assert asyncio.run(main()) == [1, 2]


class ReconcileProbe(Probe):
    """A reconciliation reads the whole desired state, then writes for a while."""

    def __init__(self) -> None:
        super().__init__()
        self._ready.clear()
        self.on_reconciled = None
        self.status = SimpleNamespace(entries=0, state="connecting", last_reconcile=None,
                                      last_reconcile_changes=0)  # fmt: skip
        self.full_reads: list[int] = []
        self.cfg = SimpleNamespace(name="s1")

    async def _read_all(self, sw: object) -> dict:
        return {}

    async def _sync_all(self, sw: object) -> int:
        self.full_reads.append(self.committed)
        await asyncio.sleep(0.01)
        return 1


def test_a_job_committed_during_a_reconciliation_is_installed_by_it():
    """The manager defers a change a session is not ready for; the reconciliation in progress,
    already past its read of the desired state, runs once more for it (before: it waited for
    the next periodic reconciliation, 30 s by default)."""

    async def main() -> ReconcileProbe:
        s = ReconcileProbe()
        run = asyncio.create_task(s.reconcile())
        await asyncio.sleep(0.005)  # the reconciliation has read the state and is writing
        s.committed += 1
        assert not s.is_ready
        s.defer([s.committed])
        await run
        return s

    s = asyncio.run(main())
    assert s.full_reads == [0] and s.jobs == [{1}] and s.is_ready
