"""One switch, kept programmed: connect, push the pipeline if it changed, reconcile, repeat.

The session owns one P4Runtime connection (finsy) at a time and loops forever:

1. connect and win arbitration (finsy, with the configured device id);
2. push the pipeline only when the switch's cookie differs from ours (finsy compares the
   ForwardingPipelineConfig cookie, a hash of P4Info and device config) - a controller restart
   leaves a running switch alone;
3. read every table entry back and write the difference to the desired state (routes, port
   queue marking, lookup tables, job entries), zeroing a job's registers before its first entry
   goes in and after its last entry came out;
4. wait for the channel to go down (bmv2 killed, network gone), re-reconciling every
   ``reconcile_interval_s`` meanwhile, then back off and go to 1.

With a topology, ``on_down`` (the channel went down, or a connection failed) and ``on_reconciled``
tell switch/fabric.py, which gives the other sessions routes around a down switch (``set_fib``)
and back when it has been reconciled; a route change is written as a base-only diff.

We drive finsy's one-shot ``async with Switch`` rather than ``Switch.run()`` because run()
waits 10 s after a quick failure and lets gRPC back off up to 15 s: too slow to have a restarted
bmv2 reconciled within seconds. Our backoff starts at ``backoff_initial_s`` and doubles to
``backoff_max_s``.

Job changes while connected (Allocate, Release, SetParams of one job) call ``sync(job_ids)``: only
those jobs' desired entries are derived and diffed against the session's mirror of what they hold
on the switch, so a change costs what it changes, whatever the number of live jobs. A global
change (``sync()`` with no job) and any sync after a failed write diff the whole switch, as a
reconciliation does. docs/scale.md has the design and the measurements.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import finsy
from finsy import SwitchEvent, SwitchOptions
from finsy.proto import p4r

from symphony import p4names
from symphony.config import Config, SwitchConfig
from symphony.config.topology import Fib
from symphony.foreground import Pause, next_turn
from symphony.jobs.store import Job
from symphony.model.switch_model import JobState
from symphony.sizes import WRITE_BATCH
from symphony.switch import desired, entries, raw_read
from symphony.switch.registers import JobRegisters, ThriftJobRegisters
from symphony.switch.targets import Target, target

LOG = logging.getLogger(__name__)
# Job-entry encodings kept per session (~1 KiB each); dropped wholesale when this many.
MAX_CACHED_JOBS = 16384


class DesiredSource(Protocol):
    """What the session asks the job manager."""

    def jobs_on(self, switch: str) -> tuple[list[Job], list[Job]]:
        """(active jobs on this switch, releasing jobs still pending on it)."""

    def job(self, job_id: int) -> Job | None:
        """The live job that holds ``job_id`` (active or releasing), if any."""

    def action_params(self, job: Job, tick_ns: int) -> dict[str, int]: ...

    def cleared(self, job: Job, switch: str) -> None:
        """The switch holds nothing of this releasing job any more."""


class Backoff:
    def __init__(self, initial: float, maximum: float) -> None:
        self.initial = initial
        self.maximum = maximum
        self._next = initial

    def next(self) -> float:
        delay = self._next
        self._next = min(self.maximum, self._next * 2)
        return delay

    def reset(self) -> None:
        self._next = self.initial


@dataclass
class SessionStatus:
    name: str
    address: str
    target: str
    state: str = "starting"  # starting | connecting | reconciling | ready | down
    connected_since: float | None = None
    last_error: str = ""
    connects: int = 0
    last_reconcile: float | None = None
    last_reconcile_changes: int = 0
    entries: int = 0
    jobs: int = 0
    # P4Runtime table updates written since the daemon started (a one-job change adds its own).
    updates: int = 0
    # Routes the switch should hold now (explicit + from the topology), ECMP groups among them.
    routes: int = 0
    ecmp_groups: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class SwitchSession:
    def __init__(
        self,
        cfg: SwitchConfig,
        config: Config,
        source: DesiredSource,
        *,
        election_id: int | None = None,
        fence: Callable[[], None] | None = None,
        fib: Fib = (),
    ) -> None:
        """``election_id``: a replicated controller's, derived from its lease epoch (None: finsy's
        default). ``fence`` raises while this process may not write (its lease is not known to
        be valid); it is called before every write, and with it the session also checks, before
        each bmv2 Thrift write (which no arbitration guards), that the switch still takes its
        P4Runtime writes. ``fib``: the switch's routes derived from the config's topology."""
        self.cfg = cfg
        self.fib = fib
        self.election_id = election_id
        self.fence = fence
        self.config = config
        self.source = source
        self.target: Target = target(cfg.target)
        self.pipeline = config.pipelines[cfg.target]
        self.status = SessionStatus(cfg.name, cfg.address, cfg.target)
        self._count_routes()
        self._sw: finsy.Switch | None = None
        self._registers: JobRegisters | None = None
        self._lock = asyncio.Lock()
        # What we believe the switch holds, keyed like entries.key_of; refreshed by full reads.
        self._mirror: dict[entries.EntryKey, p4r.TableEntry] = {}
        self._mirror_stale = True
        self._base: dict[entries.EntryKey, p4r.TableEntry] | None = None
        # The base entries that no fib changes: config routes, ports, lookup tables.
        self._static: dict[entries.EntryKey, p4r.TableEntry] | None = None
        # Encoded entries per job, keyed by everything they depend on (see _job_entries).
        self._job_cache: dict[tuple[Any, ...], list[tuple[entries.EntryKey, p4r.TableEntry]]] = {}
        # Job_ID -> the keys of its entries in the mirror (what a one-job sync diffs against).
        self._job_keys: dict[int, list[entries.EntryKey]] = {}
        # Jobs whose desired state changed since the last sync; _dirty_all: everything did;
        # _dirty_base: the base entries did (set_fib).
        self._dirty: set[int] = set()
        self._dirty_all = False
        self._dirty_base = False
        self._ready = asyncio.Event()
        # sync() coalescing: tickets handed to callers, and the last one a finished sync covered.
        self._tickets = 0
        self._synced = 0
        self._device_config = self.target.device_config(self.pipeline)
        self.on_reconciled: Callable[[SwitchSession], None] | None = None
        # Called when the session lost its switch (channel down, connection failed).
        self.on_down: Callable[[SwitchSession], None] | None = None

    @property
    def name(self) -> str:
        return self.cfg.name

    def _count_routes(self) -> None:
        self.status.routes = len(self.cfg.routes) + len(self.fib)
        self.status.ecmp_groups = len(desired.ecmp_groups(self.fib))

    @property
    def is_ready(self) -> bool:
        return self._ready.is_set()

    def options(self) -> SwitchOptions:
        opts = SwitchOptions(
            p4info=self.pipeline.p4info,
            p4blob=self._device_config,
            device_id=self.cfg.device_id,
        )
        if self.election_id is not None:
            opts = dataclasses.replace(opts, initial_election_id=self.election_id)
        return opts

    async def run(self) -> None:
        backoff = Backoff(self.config.backoff_initial_s, self.config.backoff_max_s)
        while True:
            self.status.state = "connecting"
            try:
                async with finsy.Switch(self.name, self.cfg.address, self.options()) as sw:
                    down = sw.ee.event_future(SwitchEvent.CHANNEL_DOWN)
                    # Another client with a higher election id can take the primary role (and
                    # write); get it back by reconciling as soon as the switch returns it.
                    role = asyncio.Event()
                    for event in (SwitchEvent.BECOME_PRIMARY, SwitchEvent.BECOME_BACKUP):
                        sw.ee.on(event, lambda *_, ev=role: ev.set())
                    self._sw = sw
                    self.status.connects += 1
                    self.status.connected_since = time.time()
                    self._registers = self.target.registers(self.cfg, sw)
                    await self._reconcile_if_primary(sw)
                    backoff.reset()
                    while not down.done():
                        changed = asyncio.ensure_future(role.wait())
                        await asyncio.wait(
                            [down, changed],
                            timeout=self.config.reconcile_interval_s,
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                        changed.cancel()
                        role.clear()
                        if not down.done():
                            await self._reconcile_if_primary(sw)
                    self.status.last_error = "channel down"
                    LOG.warning("%s: channel down", self.name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure means: reconnect
                self.status.last_error = f"{type(exc).__name__}: {exc}"
                LOG.warning("%s: %s", self.name, self.status.last_error)
            finally:
                self._ready.clear()
                self._sw = None
                if isinstance(self._registers, ThriftJobRegisters):
                    self._registers.drop()
                self._registers = None
                self.status.state = "down"
                self.status.connected_since = None
                if self.on_down is not None:
                    self.on_down(self)
            await asyncio.sleep(backoff.next())

    # ---- reconciliation ----------------------------------------------------------------------

    async def _reconcile_if_primary(self, sw: finsy.Switch) -> None:
        """Reconcile when we hold the primary role; as a backup, write nothing and say why
        (changes wait, pending, until the role comes back)."""
        if sw.is_primary:
            await self.reconcile()
            return
        self._ready.clear()
        self.status.state = "backup"
        self.status.last_error = "another P4Runtime client holds the primary role"
        LOG.warning("%s: %s", self.name, self.status.last_error)

    async def reconcile(self) -> int:
        """Full read-back of the switch's tables, then write the difference to the whole desired
        state (on connect, and every ``reconcile_interval_s``)."""
        async with self._lock:
            sw = self._require()
            self.status.state = "reconciling"
            self._mirror_stale = True  # read afresh below, whatever the mirror held
            self._dirty_all = True
            changes = await self._sync_locked(sw)
            # Changes committed while this ran were deferred to it (defer()): cover them too.
            while self._dirty or self._dirty_all or self._dirty_base:
                changes += await self._sync_locked(sw)
            self.status.state = "ready"
            self.status.last_reconcile = time.time()
            self.status.last_reconcile_changes = changes
            self._ready.set()
            LOG.info("%s: reconciled, %d changes", self.name, changes)
        if self.on_reconciled is not None:
            self.on_reconciled(self)
        return changes

    async def sync(self, job_ids: Iterable[int] | None = None) -> int:
        """Bring the switch to the current desired state of ``job_ids`` (every job and the base
        entries when None), diffing against the mirror.

        Called after the caller committed its change. Concurrent callers coalesce: a sync that
        took the dirty jobs after a caller's commit covers that caller too (one write per kind
        for all of them), so callers queued behind the lock return as soon as such a sync
        succeeded.
        """
        if job_ids is None:
            self._dirty_all = True
        else:
            self._dirty.update(job_ids)
        self._tickets += 1
        ticket = self._tickets
        async with self._lock:
            if self._synced >= ticket:
                return 0
            if not self.is_ready:
                raise SwitchUnavailable(self.name, self.status.last_error or self.status.state)
            return await self._sync_locked(self._require())

    def defer(self, job_ids: Iterable[int] | None = None) -> None:
        """A committed change this session cannot write now (not ready): the reconciliation in
        progress or the next one covers it. Without this, a job committed while a reconciliation
        was already past its read of the desired state waited for the next periodic one."""
        if job_ids is None:
            self._dirty_all = True
        else:
            self._dirty.update(job_ids)

    def set_fib(self, fib: Fib) -> bool:
        """New routes derived from the topology (a switch went down or came back). Written by
        the next sync (``sync(())`` writes only the base entries' difference), or by the
        reconciliation in progress or the next one when not ready. False: nothing changed."""
        if fib == self.fib:
            return False
        self.fib = fib
        self._base = None
        self._dirty_base = True
        self._count_routes()
        return True

    def _require(self) -> finsy.Switch:
        if self._sw is None:
            raise SwitchUnavailable(self.name, self.status.last_error or "not connected")
        return self._sw

    def _base_entries(self, schema: Any) -> dict[entries.EntryKey, p4r.TableEntry]:
        # The base entries depend only on the config, the fib and the model: encode them once,
        # and the fib's again when it changes (the lookup tables are thousands of entries).
        if self._base is None:
            if self._static is None:
                static = desired.base_entries(self.cfg)
                self._static = entries.index(entries.encode(s, schema) for s in static)
            fib = entries.index(entries.encode(s, schema) for s in desired.fib_entries(self.fib))
            self._base = {**self._static, **fib}
        return self._base

    async def _sync_locked(self, sw: finsy.Switch) -> int:
        # Everything committed before this point is covered: the dirty set is taken here, and the
        # desired state is read from the store after it, with no await in between.
        covers = self._tickets
        dirty, self._dirty = self._dirty, set()
        full = self._dirty_all or self._mirror_stale
        base, self._dirty_base = self._dirty_base, False
        self._dirty_all = False
        # If a write fails half way, the mirror no longer matches the switch: the next sync reads
        # it afresh and diffs everything (so the dirty jobs taken here are not lost).
        stale, self._mirror_stale = self._mirror_stale, True
        if stale:
            self._mirror = await self._read_all(sw)
        if full:
            changes = await self._sync_all(sw)
        else:
            changes = await self._sync_base(sw) if base else 0
            changes += await self._sync_jobs(sw, dirty) if dirty else 0
        self._mirror_stale = False
        self._synced = max(self._synced, covers)
        self.status.entries = len(self._mirror)
        return changes

    async def _sync_all(self, sw: finsy.Switch) -> int:
        """The whole switch: base entries and every job, against the whole mirror."""
        schema = sw.p4info
        active, releasing = self.source.jobs_on(self.name)
        want: dict[entries.EntryKey, p4r.TableEntry] = dict(self._base_entries(schema))
        owner: dict[entries.EntryKey, int] = {}
        for job in active:
            for k, pb in self._job_entries(job, schema):
                want[k] = pb
                owner[k] = job.job_id
        # No job entry on the switch (a cold start, a restarted switch): no job is tracked, so
        # zeroing whole register arrays (a few calls) replaces zeroing each new job (9 each).
        job_tables = {schema.tables[t].id for t in desired.JOB_TABLES}
        no_job_present = not any(k[0] in job_tables for k in self._mirror)
        changes = await self._apply(
            sw, self._mirror, want, owner, releasing, bulk_reset=no_job_present
        )
        self._job_keys = {}
        for k, jid in owner.items():
            self._job_keys.setdefault(jid, []).append(k)
        self.status.jobs = len(active)
        return changes

    async def _sync_base(self, sw: finsy.Switch) -> int:
        """Only the base entries (new routes): against what the mirror holds outside the job
        tables."""
        schema = sw.p4info
        job_tables = {schema.tables[t].id for t in desired.JOB_TABLES}
        have = {k: e for k, e in self._mirror.items() if k[0] not in job_tables}
        return await self._apply(
            sw, have, dict(self._base_entries(schema)), {}, [], bulk_reset=False
        )

    async def _sync_jobs(self, sw: finsy.Switch, job_ids: set[int]) -> int:
        """Only these jobs: their desired entries against what the mirror holds of them."""
        schema = sw.p4info
        want: dict[entries.EntryKey, p4r.TableEntry] = {}
        owner: dict[entries.EntryKey, int] = {}
        releasing: list[Job] = []
        for jid in sorted(job_ids):
            job = self.source.job(jid)
            if job is None:
                continue  # released everywhere: nothing of it is wanted
            if job.state == "active" and self.name in job.switches:
                for k, pb in self._job_entries(job, schema):
                    want[k] = pb
                    owner[k] = jid
            elif job.state == "releasing" and self.name in job.pending:
                releasing.append(job)
        # What the switch holds of these jobs, and whatever sits at the keys they want.
        have = {
            k: self._mirror[k]
            for jid in job_ids
            for k in self._job_keys.get(jid, ())
            if k in self._mirror
        }
        have.update((k, self._mirror[k]) for k in want if k in self._mirror)
        before = sum(1 for jid in job_ids if self._job_keys.get(jid))
        changes = await self._apply(sw, have, want, owner, releasing, bulk_reset=False)
        for jid in job_ids:
            self._job_keys.pop(jid, None)
        for k, jid in owner.items():
            self._job_keys.setdefault(jid, []).append(k)
        after = sum(1 for jid in job_ids if self._job_keys.get(jid))
        self.status.jobs += after - before
        return changes

    async def _apply(
        self,
        sw: finsy.Switch,
        have: dict[entries.EntryKey, p4r.TableEntry],
        want: dict[entries.EntryKey, p4r.TableEntry],
        owner: dict[entries.EntryKey, int],
        releasing: list[Job],
        *,
        bulk_reset: bool,
    ) -> int:
        """Write what turns ``have`` (part of the mirror) into ``want``, in the safe order, and
        update the mirror."""
        schema = sw.p4info
        d = entries.diff(have, want)
        # Entries the switch already holds as wanted: keep the desired object in the mirror, so
        # the next diff recognises them by identity instead of comparing their bytes again.
        changed = {entries.key_of(e) for e in d.modify}
        for k, pb in want.items():
            if k in have and k not in changed:
                self._mirror[k] = pb
        # A job is new on this switch when none of its entries is there yet: zero its state
        # before the first entry can classify a packet to it.
        present_jobs = {owner[k] for k in have if k in owner}
        new_jobs = sorted(
            {owner[entries.key_of(e)] for e in d.insert if entries.key_of(e) in owner}
            - present_jobs
        )

        plan = write_plan(d, lambda e: schema.tables[e.table_id].name)
        await self._write(sw, p4r.Update.DELETE, plan.delete)
        if self._registers is not None and new_jobs:
            if bulk_reset and len(new_jobs) > 1:
                await self._reset_registers(sw, None)
            else:
                await self._reset_registers(sw, new_jobs)
        await self._write(sw, p4r.Update.INSERT, plan.insert_members)
        await self._write(sw, p4r.Update.MODIFY, plan.modify)
        await self._write(sw, p4r.Update.INSERT, plan.insert)
        await self._write(sw, p4r.Update.DELETE, plan.delete_members)

        for e in d.delete:
            self._mirror.pop(entries.key_of(e), None)
        for e in d.modify + d.insert:
            self._mirror[entries.key_of(e)] = e

        # Releasing jobs: nothing of theirs is wanted, so the diff deleted all of it; zero their
        # state and report them cleared here.
        if releasing:
            if self._registers is not None:
                await self._reset_registers(sw, [j.job_id for j in releasing])
            for job in releasing:
                self.source.cleared(job, self.name)
        return len(d)

    def _job_entries(self, job: Job, schema: Any) -> list[tuple[entries.EntryKey, p4r.TableEntry]]:
        """A job's encoded entries with their keys; encoding is cached because a reconciliation
        re-derives the desired state of all jobs on the switch."""
        params = self.source.action_params(job, self.target.tick_ns)
        ck = (job.job_id, job.mode, tuple(job.hosts), tuple(sorted(params.items())))
        got = self._job_cache.get(ck)
        if got is None:
            got = []
            for spec in desired.job_entries(job, params):
                pb = entries.encode(spec, schema)
                got.append((entries.key_of(pb), pb))
            if len(self._job_cache) >= MAX_CACHED_JOBS:
                self._job_cache.clear()
            self._job_cache[ck] = got
        return got

    async def _read_all(self, sw: finsy.Switch) -> dict[entries.EntryKey, p4r.TableEntry]:
        schema = sw.p4info
        const = {t.id for t in schema.tables if t.is_const}
        # Const tables (classify.opcode_class) hold the program's own entries: read-only at
        # runtime, never part of the diff (a DELETE of them would fail the whole batch).
        # Read undecoded (raw_read): the entries are compared as protobufs anyway.
        got = [
            e for e in await raw_read.table_entries(sw, p4r.TableEntry()) if e.table_id not in const
        ]
        # Default entries are not part of a wildcard read; read those we have an opinion on.
        defaults = [k[0] for k in self._base_entries(schema) if k[1:] == ("default",)]
        for table_id in defaults:
            got += await raw_read.table_entries(
                sw, p4r.TableEntry(table_id=table_id, is_default_action=True)
            )
        return entries.index(entries.strip_for_compare(e) for e in got)

    def _check_fence(self, sw: finsy.Switch) -> None:
        if self.fence is None:
            return
        self.fence()
        # finsy bids a higher election id when the switch promotes it after the primary left;
        # a replica must keep its epoch's, or a deposed leader could outbid the new one.
        if sw.election_id != self.election_id:
            raise SwitchUnavailable(
                self.name, f"election id changed under us ({sw.election_id}); not writing"
            )

    async def _reset_registers(self, sw: finsy.Switch, job_ids: Iterable[int] | None) -> None:
        """Zero these jobs' registers (every job's when None), fenced: bmv2's Thrift API has no
        arbitration, so a replica first proves that the switch still takes its P4Runtime writes
        (an empty WriteRequest, refused with PERMISSION_DENIED unless we are the primary), then
        checks its lease deadline once more right before the call."""
        assert self._registers is not None
        if self.fence is not None:
            self._check_fence(sw)
            await raw_read.probe_write(sw)
            self._check_fence(sw)
        if job_ids is None:
            await self._registers.clear_all()
        else:
            await self._registers.reset(job_ids)

    async def _write(
        self, sw: finsy.Switch, kind: p4r.Update.Type.ValueType, items: Sequence[p4r.TableEntry]
    ) -> None:
        for i in range(0, len(items), WRITE_BATCH):
            chunk = items[i : i + WRITE_BATCH]
            self._check_fence(sw)
            await sw.write(entries.updates(kind, chunk))
            self.status.updates += len(chunk)

    # ---- live state --------------------------------------------------------------------------

    async def read_state(
        self, job_ids: Iterable[int], pause: Pause = next_turn
    ) -> dict[int, JobState]:
        if self._registers is None or not self.is_ready:
            raise SwitchUnavailable(self.name, self.status.last_error or self.status.state)
        return await self._registers.read(job_ids, pause)

    async def wait_ready(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False


@dataclass
class WritePlan:
    """A diff in the order it is written (register zeroing of new jobs after ``delete``)."""

    delete: list[p4r.TableEntry]
    insert_members: list[p4r.TableEntry]
    modify: list[p4r.TableEntry]
    insert: list[p4r.TableEntry]
    delete_members: list[p4r.TableEntry]

    def __iter__(self) -> Iterator[list[p4r.TableEntry]]:
        yield from (self.delete, self.insert_members, self.modify, self.insert)
        yield self.delete_members


def write_plan(d: entries.Diff, table_of: Callable[[p4r.TableEntry], str]) -> WritePlan:
    """The order that never lets a packet see a half-made state:

    - deletes first, classifiers before parameters, so that an address or tag moving from a
      released job to a new one never collides;
    - ECMP members of new groups before the routes that point to them (make before break), and
      members of groups no route points to any more last;
    - inserts with lookup tables and parameters before classifiers, so that a packet classified
      to a job always finds its parameters.
    """
    rank = {p4names.JOB_BY_TAG: 2, p4names.JOB_BY_SRC: 2, p4names.JOB_PARAMS: 1}

    def member(e: p4r.TableEntry) -> bool:
        return table_of(e) == p4names.ECMP_MEMBER

    return WritePlan(
        delete=sorted(
            (e for e in d.delete if not member(e)), key=lambda e: -rank.get(table_of(e), 0)
        ),
        insert_members=[e for e in d.insert if member(e)],
        modify=list(d.modify),
        insert=sorted(
            (e for e in d.insert if not member(e)), key=lambda e: rank.get(table_of(e), 0)
        ),
        delete_members=[e for e in d.delete if member(e)],
    )


class SwitchUnavailable(Exception):
    def __init__(self, switch: str, reason: str) -> None:
        super().__init__(f"switch {switch} unavailable: {reason}")
        self.switch = switch
        self.reason = reason
