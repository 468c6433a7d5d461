"""Leadership of one controller replica: a follower until it takes the lease, then the leader
until it loses it (jobs/lease.py has the lease itself, docs/operations.md the deployment).

Only the leader writes: it holds the store's write epoch (PgJobStore.epoch) and runs the switch
sessions, with its epoch as their P4Runtime election id (`election_id`), so every switch makes
it the primary and refuses the writes of any replica that led before it. A follower serves
reads from the store and refuses changes with NOT_LEADER naming the leader.

Three fences stop a deposed leader (one that was paused, or cut off, while another took over):

1. its own clock: the gate (`check`) closes at the lease's local deadline, before anyone can
   have taken over, even when the database cannot be reached to ask;
2. the store: every write transaction locks the lease row and checks the epoch;
3. the switches: a higher election id is primary, and bmv2's Thrift writes are preceded by a
   P4Runtime probe (switch/session.py).

Becoming the leader: take the lease, forget cached rows, start one session per switch (each
connects, becomes primary and reconciles: reads every entry back and repairs the difference),
start telemetry. Stepping down: close the gate first, then stop the sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Protocol

from symphony.jobs.errors import StoreError, not_leader
from symphony.jobs.lease import Held, LeaderInfo, Lease
from symphony.jobs.pg_store import PgJobStore

LOG = logging.getLogger(__name__)


def election_id(epoch: int) -> int:
    """The P4Runtime election id of a lease epoch: the epoch in the high 64 bits, so any lease
    holder outranks the tools and readers that bid low ids (p4runtime-shell, tests: 1) and a
    standalone controller (finsy's default, 10), and a later epoch outranks an earlier one."""
    return epoch << 64


@dataclass(frozen=True)
class ReplicaStatus:
    name: str
    role: str  # "leader" | "follower"
    epoch: int  # the epoch this replica leads with, else the last leader's it saw (0: none)
    failovers: int  # times this replica took the lease
    leader: str  # the leader's API address, when known


class LeaderWork(Protocol):
    """What a replica runs while it leads (the daemon's switch sessions and telemetry)."""

    async def start(self, epoch: int | None) -> None: ...

    async def stop(self) -> None: ...


class Replica:
    def __init__(self, name: str, store: PgJobStore, lease: Lease) -> None:
        self.name = name
        self.store = store
        self.lease = lease
        self._work: LeaderWork | None = None
        self.held: Held | None = None
        self.leader: LeaderInfo | None = None
        self.failovers = 0
        ttl = lease.ttl_s
        # Renew three times per lease; poll as a follower about as often (bounded).
        self.renew_s = ttl / 3
        self.poll_s = min(max(ttl / 6, 0.05), 1.0)

    # ---- the gate (JobManager's WriteGate) ----------------------------------------------------

    @property
    def leads(self) -> bool:
        return self.held is not None and time.monotonic() < self.held.valid_until

    def check(self) -> None:
        if self.leads:
            return
        raise not_leader(self.why_not(), self._leader_address())

    def why_not(self) -> str:
        if self.leads:
            return ""
        if self.held is not None:
            return f"replica {self.name}'s lease (epoch {self.held.epoch}) is not renewed"
        return f"replica {self.name} is a follower"

    def _leader_address(self) -> str:
        info = self.leader
        if info is None or not info.live or info.holder == self.name:
            return ""
        return info.address

    def status(self) -> ReplicaStatus:
        held = self.held
        info = self.leader
        epoch = held.epoch if held is not None else (info.epoch if info is not None else 0)
        leader = self.lease.address if self.leads else self._leader_address()
        return ReplicaStatus(
            self.name, "leader" if self.leads else "follower", epoch, self.failovers, leader
        )

    # ---- the loop -----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, work: LeaderWork) -> None:
        """Follow or lead until ``stop``; ``work`` runs from each takeover to the step-down."""
        self._work = work
        try:
            while not stop.is_set():
                try:
                    if self.held is None:
                        await self._follow()
                    else:
                        await self._renew()
                except StoreError as exc:
                    LOG.warning("replica %s: %s", self.name, exc)
                    if self.held is not None and not self.leads:
                        await self._step_down("cannot renew the lease before its deadline")
                wait = self.renew_s if self.held is not None else self.poll_s
                if self.held is not None:
                    # Never sleep past the deadline: step down on time if renewals fail.
                    wait = max(0.0, min(wait, self.held.valid_until - time.monotonic()))
                await _wait(stop, wait)
        finally:
            if self.held is not None:
                held = self.held
                await self._step_down("stopping")
                try:
                    await asyncio.to_thread(self.lease.release, held)
                except StoreError as exc:  # the lease then expires by itself
                    LOG.warning("replica %s: could not hand the lease back: %s", self.name, exc)
            self.lease.close()

    async def _follow(self) -> None:
        held = await asyncio.to_thread(self.lease.try_acquire)
        if held is None:
            info = await asyncio.to_thread(self.lease.leader)
            if self.leader is None or (info.holder, info.epoch) != (
                self.leader.holder,
                self.leader.epoch,
            ):
                LOG.info(
                    "replica %s: following %s (epoch %d, %s)",
                    self.name,
                    info.holder or "nobody",
                    info.epoch,
                    info.address or "-",
                )
            self.leader = info
            return
        await self._take(held)

    async def _take(self, held: Held) -> None:
        LOG.warning("replica %s: took the lease, epoch %d: leading", self.name, held.epoch)
        self.store.invalidate()
        self.store.epoch = held.epoch
        self.held = held
        self.failovers += 1
        self.leader = LeaderInfo(held.epoch, self.name, self.lease.address, True)
        try:
            assert self._work is not None
            await self._work.start(held.epoch)
        except Exception:
            LOG.exception("replica %s: could not start leading", self.name)
            await self._step_down("failed to start leading")

    async def _renew(self) -> None:
        assert self.held is not None
        renewed = await asyncio.to_thread(self.lease.renew, self.held)
        if renewed is None:
            info = await asyncio.to_thread(self.lease.leader)
            self.leader = info
            await self._step_down(f"replica {info.holder} took the lease (epoch {info.epoch})")
            return
        if self.held is not None and renewed.epoch == self.held.epoch:
            self.held = renewed
        if not self.leads:
            await self._step_down("the lease was renewed too late")

    async def _step_down(self, why: str) -> None:
        held = self.held
        # The gate closes first, synchronously: no request starts a write from here on.
        self.held = None
        self.store.epoch = None
        if held is None:
            return
        LOG.warning("replica %s: stepping down from epoch %d: %s", self.name, held.epoch, why)
        assert self._work is not None
        await self._work.stop()


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
