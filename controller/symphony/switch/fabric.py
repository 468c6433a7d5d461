"""Routes around a lost switch: the topology's routes recomputed without the switches that are down.

A switch counts as down from the moment its session loses it (the P4Runtime stream broke, or a
connection attempt failed: ``SwitchSession.on_down``) until its session has reconnected and
reconciled it (pipeline, base entries, every job's entries: ``on_reconciled``). On each change
every session gets its routes from `config.topology.routes_for` on the topology without the down
switches and their links, and the sessions whose routes changed write the difference of their
base entries at once (a base-only diff: the ECMP groups lose or regain the down switch's ports).
A down switch's own routes are computed as if it alone were up again, so that its reconciliation
on return installs the right ones; the others take it back into their groups only after that
reconciliation, never towards a switch without its entries.

The controller cannot tell a dead switch from one it cannot reach; it routes around both.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Protocol

from symphony.config.topology import Fib, Topology, routes_for

LOG = logging.getLogger(__name__)


class Routed(Protocol):
    """What the fabric uses of a switch session (switch/session.py's SwitchSession)."""

    @property
    def name(self) -> str: ...

    @property
    def is_ready(self) -> bool: ...

    def set_fib(self, fib: Fib) -> bool: ...

    async def sync(self, job_ids: Iterable[int] | None = None) -> int: ...


def fibs(topology: Topology, down: frozenset[str]) -> dict[str, Fib]:
    """Every switch's routes with ``down`` switches removed; a down switch's own as if it alone
    were back (what it must hold when it returns)."""
    out = routes_for(topology, down)
    for name in down:
        out[name] = routes_for(topology, down - {name})[name]
    return out


class Fabric:
    def __init__(self, topology: Topology, sessions: Mapping[str, Routed]) -> None:
        self.topology = topology
        self.sessions = dict(sessions)
        self.down: set[str] = set()
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        # Route changes pushed (one per switch down or back), and when the last one was.
        self.reroutes = 0
        self.last_reroute: float | None = None

    def switch_down(self, name: str) -> None:
        """``name``'s session lost its switch (SwitchSession.on_down)."""
        if self._closed or name in self.down:
            return
        LOG.warning("%s is down: routing around it", name)
        self.down.add(name)
        self._push()

    def switch_up(self, name: str) -> None:
        """``name``'s session reconciled its switch (SwitchSession.on_reconciled)."""
        if self._closed or name not in self.down:
            return
        LOG.info("%s is back: routing through it again", name)
        self.down.discard(name)
        self._push()

    def close(self) -> None:
        """The sessions are being stopped (the controller stops, or a replica steps down): their
        channels going down is not a switch lost."""
        self._closed = True
        for task in self._tasks:
            task.cancel()

    async def settle(self) -> None:
        """Wait for the route writes under way."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _push(self) -> None:
        self.reroutes += 1
        self.last_reroute = time.time()
        new = fibs(self.topology, frozenset(self.down))
        for name, session in self.sessions.items():
            if not session.set_fib(new.get(name, ())):
                continue
            # Not ready (down, connecting, reconciling, backup): its next reconciliation
            # writes the new routes; a ready one writes them now.
            if session.is_ready and name not in self.down:
                task = asyncio.get_running_loop().create_task(self._write(session))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _write(self, session: Routed) -> None:
        started = time.monotonic()
        try:
            changes = await session.sync(())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the session's next sync or reconciliation writes them
            LOG.warning("%s: new routes not written yet: %s", session.name, exc)
            return
        LOG.info(
            "%s: routes updated, %d changes in %.3f s (down: %s)",
            session.name,
            changes,
            time.monotonic() - started,
            ", ".join(sorted(self.down)) or "none",
        )
