"""Background work steps aside for requests (symphony.foreground) and the heap is settled after
telemetry sweeps (symphony.heap)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from symphony import heap
from symphony.foreground import Foreground, Yielder


def test_pause_waits_while_a_request_is_in_progress():
    async def run() -> list[str]:
        fg = Foreground()
        events: list[str] = []

        async def request() -> None:
            with fg.request():
                events.append("request start")
                await asyncio.sleep(0.05)
                events.append("request end")

        async def background() -> None:
            y = Yielder(fg, max_defer_s=10)
            for i in range(3):
                await y.pause()
                events.append(f"slice {i}")

        task = asyncio.create_task(request())
        await asyncio.sleep(0)  # the request is in progress
        await background()
        await task
        return events

    assert asyncio.run(run()) == [
        "request start",
        "request end",
        "slice 0",
        "slice 1",
        "slice 2",
    ]


def test_pause_does_not_wait_when_idle_and_counts_nested_requests():
    async def run() -> tuple[int, int, float]:
        fg = Foreground()
        y = Yielder(fg, max_defer_s=10)
        await y.pause()
        with fg.request(), fg.request():
            inner = fg.active
        return inner, fg.active, y.deferred_s

    assert asyncio.run(run()) == (2, 0, 0.0)


def test_a_steady_stream_of_requests_defers_background_work_only_up_to_its_budget():
    async def run() -> tuple[float, bool]:
        fg = Foreground()
        y = Yielder(fg, max_defer_s=0.05)
        with fg.request():  # never ends while the background work runs
            for _ in range(5):
                await y.pause()
            return y.deferred_s, fg.active == 1

    deferred, still_busy = asyncio.run(run())
    assert still_busy
    # Waited out the budget once, then no more (a loose bound: this is not a speed test).
    assert 0.05 <= deferred < 5


def test_a_failed_request_still_ends():
    async def run() -> int:
        fg = Foreground()
        try:
            with fg.request():
                raise ValueError("refused")
        except ValueError:
            pass
        y = Yielder(fg, max_defer_s=10)
        await asyncio.wait_for(y.pause(), 1)
        return fg.active

    assert asyncio.run(run()) == 0


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_settler_freezes_the_heap_and_collects_cycles_when_due_and_idle():
    now = [0.0]
    fg = Foreground()
    settle = heap.Settler(fg, full_every_s=60, clock=lambda: now[0])
    try:
        gc.unfreeze()
        settle()
        assert gc.get_freeze_count() > 0  # what is alive now is skipped by collections
        assert settle.full_collections == 0

        cycle = _Cycle()
        ref = weakref.ref(cycle)
        settle()  # frozen while still referenced
        del cycle
        gc.collect()
        assert ref() is not None  # garbage now, but frozen: no collection frees it

        now[0] = 61.0
        with fg.request():  # a full collection is due, but not while a request runs
            settle()
        assert settle.full_collections == 0 and ref() is not None
        settle()
        assert settle.full_collections == 1
        assert ref() is None
        assert gc.get_freeze_count() > 0  # and the survivors are frozen again
    finally:
        gc.unfreeze()
