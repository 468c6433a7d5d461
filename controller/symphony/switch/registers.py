"""Per-job registers and counters, read and zeroed per target: `JobRegisters`.

The controller reads and resets a job's state through this interface, and so does the PTF suite
(which also clears everything between tests and reads whole arrays): a second target needs a
second implementation of it, nothing else.

bmv2's P4Runtime server does not implement RegisterEntry (p4lang/PI#376), so on bmv2 they go
over bmv2's Thrift runtime API (symphony.switch.thrift_registers). Tofino's P4Runtime servers
do implement them, so there they go over the session's own P4Runtime channel.

A job's state is "zero" when every register slot is 0 (alpha is stored as alpha - 1, so zero is
alpha = 1) and its counters are 0: SPEC section 3's initial state.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from finsy import P4CounterData, P4CounterEntry, P4RegisterEntry

from symphony.foreground import Pause, next_turn
from symphony.model.switch_model import JobState
from symphony.p4names import FLOW_BASE, JOB_COUNTERS, JOB_REGISTERS, TOFINO_JOB_REGISTERS
from symphony.sizes import WRITE_BATCH
from symphony.switch import raw_read
from symphony.switch.thrift_registers import Bmv2Thrift

T = TypeVar("T")
# Reading this many jobs or more fetches whole register and counter arrays (one call each)
# instead of one slot per call: a telemetry sweep costs the same at 32 jobs as at 16k.
READ_ALL_FROM = 32


class JobRegisters(Protocol):
    async def read(self, job_ids: Iterable[int], pause: Pause = next_turn) -> dict[int, JobState]:
        """Each job's registers and counters, decoded; a long read awaits ``pause()`` between
        its calls and slices."""

    async def reset(self, job_ids: Iterable[int]) -> None:
        """Zero each job's registers and counter cells (SPEC section 3's initial state)."""

    async def clear_all(self) -> None:
        """Zero every slot of every Symphony register and counter, flow bases included: the
        state of a freshly started switch (tests start from it)."""

    async def read_array(self, name: str) -> list[int]:
        """Every slot of one register array (P4Info name), index = slot."""


class ThriftJobRegisters:
    """bmv2: registers and counters through the Thrift runtime API (blocking, so in a thread).

    bmv2's Thrift API reads a whole register array in one call but a counter one cell per call;
    its P4Runtime server reads a whole counter array (a wildcard CounterEntry) but no register
    (p4lang/PI#376). So with ``switch`` (the session's P4Runtime connection) a read of many jobs
    takes registers over Thrift and counters over P4Runtime, a fixed number of calls (6 + 3)."""

    def __init__(self, host: str, port: int, client: Any = None, switch: Any = None) -> None:
        self.host = host
        self.port = port
        self.switch = switch
        self._client = client
        # One Thrift connection is not safe to share between threads; calls are serialized.
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        if self._client is None:
            self._client = Bmv2Thrift(host=self.host, port=self.port)
        return self._client

    def drop(self) -> None:
        """Forget the connection (the switch restarted); the next call reconnects."""
        with self._lock:
            close = getattr(self._client, "close", None)
            if close is not None:
                # The old connection is dead anyway; closing it is a courtesy.
                with contextlib.suppress(Exception):
                    close()
            self._client = None

    def _call(self, fn: Callable[[Any], T]) -> T:
        """``fn(client)`` under the lock; a failure drops the connection (reconnect next time).
        Long reads take the lock in short turns, so a job's reset never waits for a whole
        telemetry sweep."""
        with self._lock:
            try:
                return fn(self._connect())
            except Exception:
                self._client = None
                raise

    def _register_arrays(self) -> dict[str, list[int]]:
        return {name: self._read_all(name) for name in JOB_REGISTERS.values()}

    def _read_all(self, name: str) -> list[int]:
        return self._call(lambda c: c.register_read_all(name))

    def _read_sync(self, job_ids: list[int]) -> dict[int, JobState]:
        regs: dict[str, Any]
        # A few jobs: one call per slot; many: whole arrays, MAX_JOBS each.
        if len(job_ids) < READ_ALL_FROM:

            def slots(name: str) -> Callable[[Any], dict[int, int]]:
                return lambda c: {j: c.register_read(name, j) for j in job_ids}

            regs = {name: self._call(slots(name)) for name in JOB_REGISTERS.values()}
        else:
            regs = self._register_arrays()

        def counters(j: int) -> Callable[[Any], dict[str, int]]:
            return lambda c: {f: c.counter_read(name, j)[1] for f, name in JOB_COUNTERS.items()}

        out = {}
        for jid in job_ids:
            raw = {name: values[jid] for name, values in regs.items()}
            # bmv2's Thrift API reads one counter cell per call: (bytes, packets).
            cnt = self._call(counters(jid))
            out[jid] = JobState.from_registers(raw, cnt)
        return out

    def _reset_sync(self, job_ids: list[int]) -> None:
        with self._lock:
            try:
                c = self._connect()
                for jid in job_ids:
                    for name in JOB_REGISTERS.values():
                        c.register_write(name, jid, 0)
                    # One slot at a time: resetting the whole array would zero every other
                    # job's counters too.
                    for name in JOB_COUNTERS.values():
                        c.counter_write(name, jid, 0, 0)
            except Exception:
                self._client = None
                raise

    async def read(self, job_ids: Iterable[int], pause: Pause = next_turn) -> dict[int, JobState]:
        ids = list(job_ids)
        if len(ids) < READ_ALL_FROM or self.switch is None:
            return await asyncio.to_thread(self._read_sync, ids)
        return await _whole_arrays(self, self.switch, ids, pause)

    async def reset(self, job_ids: Iterable[int]) -> None:
        ids = list(job_ids)
        if ids:
            await asyncio.to_thread(self._reset_sync, ids)

    async def clear_all(self) -> None:
        def clear(c: Any) -> None:
            for name in (*JOB_REGISTERS.values(), FLOW_BASE):
                c.register_reset(name)
            for name in JOB_COUNTERS.values():
                c.counter_reset(name)

        await asyncio.to_thread(self._call, clear)

    async def read_array(self, name: str) -> list[int]:
        return await asyncio.to_thread(self._read_all, name)


class P4RuntimeJobRegisters:
    """Tofino: RegisterEntry / CounterEntry over the switch's P4Runtime channel (finsy)."""

    def __init__(self, switch: Any) -> None:
        self.switch = switch

    async def read(self, job_ids: Iterable[int], pause: Pause = next_turn) -> dict[int, JobState]:
        ids = list(job_ids)
        if len(ids) >= READ_ALL_FROM:
            # Many jobs (telemetry): one wildcard read per register and counter array.
            return await _whole_arrays(self, self.switch, ids, pause)
        raw: dict[int, dict[str, int]] = {j: {} for j in ids}
        cnt: dict[int, dict[str, int]] = {j: {} for j in ids}
        # A few jobs: one read per job and register.
        reg_reads = [P4RegisterEntry(name, index=j) for j in ids for name in JOB_REGISTERS.values()]
        async for e in self.switch.read(reg_reads):
            raw[e.index][_alias_to_full(e.register_id, JOB_REGISTERS.values())] = _int(e.data)
        cnt_reads = [P4CounterEntry(name, index=j) for j in ids for name in JOB_COUNTERS.values()]
        by_name = {v: k for k, v in JOB_COUNTERS.items()}
        async for e in self.switch.read(cnt_reads):
            full = _alias_to_full(e.counter_id, JOB_COUNTERS.values())
            cnt[e.index][by_name[full]] = e.packet_count
        return {j: JobState.from_registers(raw[j], cnt[j]) for j in ids}

    async def reset(self, job_ids: Iterable[int]) -> None:
        updates: list[Any] = []
        for j in job_ids:
            names = [*JOB_REGISTERS.values(), *TOFINO_JOB_REGISTERS.values()]
            updates += [~P4RegisterEntry(name, index=j, data=0) for name in names]
            zero = P4CounterData(byte_count=0, packet_count=0)
            updates += [~P4CounterEntry(name, index=j, data=zero) for name in JOB_COUNTERS.values()]
        # Batched: many jobs at once (a switch that came back) would exceed gRPC's message limit.
        for i in range(0, len(updates), WRITE_BATCH):
            await self.switch.write(updates[i : i + WRITE_BATCH])

    async def clear_all(self) -> None:
        # One update per slot (P4Runtime has no "reset the array"), sent in batches.
        schema = self.switch.p4info
        zero = P4CounterData(byte_count=0, packet_count=0)
        updates: list[Any] = []
        for name in (*JOB_REGISTERS.values(), *TOFINO_JOB_REGISTERS.values(), FLOW_BASE):
            size = schema.registers[name].size
            updates += [~P4RegisterEntry(name, index=i, data=0) for i in range(size)]
        for name in JOB_COUNTERS.values():
            size = schema.counters[name].size
            updates += [~P4CounterEntry(name, index=i, data=zero) for i in range(size)]
        for i in range(0, len(updates), WRITE_BATCH):
            await self.switch.write(updates[i : i + WRITE_BATCH])

    async def read_array(self, name: str) -> list[int]:
        values = [0] * self.switch.p4info.registers[name].size
        async for e in self.switch.read(P4RegisterEntry(name)):
            values[e.index] = _int(e.data)
        return values


async def _whole_arrays(
    registers: JobRegisters, switch: Any, job_ids: list[int], pause: Pause
) -> dict[int, JobState]:
    """Many jobs' states from whole arrays: each register array through ``registers``, each
    counter array by a wildcard P4Runtime read (both targets' servers have it), with a pause
    before each call."""
    regs = {}
    for name in JOB_REGISTERS.values():
        await pause()
        regs[name] = await registers.read_array(name)
    counters = {}
    for f, name in JOB_COUNTERS.items():
        await pause()
        counters[f] = await raw_read.counter_array(switch, name, pause)
    return await _states(job_ids, regs, counters, pause)


# Jobs decoded between two yields to the event loop (16k of them take tens of milliseconds).
DECODE_SLICE = 2048


async def _states(
    job_ids: list[int],
    regs: dict[str, list[int]],
    counters: dict[str, list[int]],
    pause: Pause = next_turn,
) -> dict[int, JobState]:
    """Each job's state from whole arrays (register P4Info name -> values; counter field ->
    packet counts), in slices so that requests are served in between."""
    out: dict[int, JobState] = {}
    for i in range(0, len(job_ids), DECODE_SLICE):
        for j in job_ids[i : i + DECODE_SLICE]:
            out[j] = JobState.from_registers(
                {name: values[j] for name, values in regs.items()},
                {f: values[j] for f, values in counters.items()},
            )
        await pause()
    return out


def _alias_to_full(alias: str, names: Iterable[str]) -> str:
    """finsy decodes to the P4Info alias (shortest unique suffix); map it back to the full name."""
    for name in names:
        if name == alias or name.endswith("." + alias):
            return name
    raise KeyError(alias)


def _int(data: Any) -> int:
    return int(data) if data is not None else 0
