"""Per-job registers and counters, read and zeroed per target.

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

from symphony.model.pipeline import COUNTERS, REGISTERS, TOFINO_REGISTERS, JobState

T = TypeVar("T")
# Reading this many jobs or more fetches whole register arrays instead of one slot per call.
READ_ALL_FROM = 32


class JobRegisters(Protocol):
    async def read(self, job_ids: Iterable[int]) -> dict[int, JobState]: ...

    async def reset(self, job_ids: Iterable[int]) -> None: ...


class ThriftJobRegisters:
    """bmv2: registers and counters through the Thrift runtime API (blocking, so in a thread)."""

    def __init__(self, host: str, port: int, client: Any = None) -> None:
        self.host = host
        self.port = port
        self._client = client
        # One Thrift connection is not safe to share between threads; calls are serialized.
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        if self._client is None:
            from symphony.switch.thrift_registers import Bmv2Thrift

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

    def _read_sync(self, job_ids: list[int]) -> dict[int, JobState]:
        regs: dict[str, Any]
        # A few jobs: one call per slot; many (telemetry): whole arrays, MAX_JOBS each.
        if len(job_ids) < READ_ALL_FROM:
            regs = {
                name: self._call(lambda c, n=name: {j: c.register_read(n, j) for j in job_ids})
                for name in REGISTERS.values()
            }
        else:
            regs = {
                name: self._call(lambda c, n=name: c.register_read_all(n))
                for name in REGISTERS.values()
            }
        out = {}
        for jid in job_ids:
            raw = {name: values[jid] for name, values in regs.items()}
            # bmv2's Thrift API reads one counter cell per call: (bytes, packets).
            cnt = self._call(
                lambda c, j=jid: {f: c.counter_read(name, j)[1] for f, name in COUNTERS.items()}
            )
            out[jid] = JobState.from_registers(raw, cnt)
        return out

    def _reset_sync(self, job_ids: list[int]) -> None:
        with self._lock:
            try:
                c = self._connect()
                for jid in job_ids:
                    for name in REGISTERS.values():
                        c.register_write(name, jid, 0)
                    # Counter slots are zeroed when the Thrift client can write one slot;
                    # resetting the whole array would zero every other job's counters too.
                    if hasattr(c, "counter_write"):
                        for name in COUNTERS.values():
                            c.counter_write(name, jid, 0, 0)
            except Exception:
                self._client = None
                raise

    async def read(self, job_ids: Iterable[int]) -> dict[int, JobState]:
        return await asyncio.to_thread(self._read_sync, list(job_ids))

    async def reset(self, job_ids: Iterable[int]) -> None:
        ids = list(job_ids)
        if ids:
            await asyncio.to_thread(self._reset_sync, ids)


class P4RuntimeJobRegisters:
    """Tofino: RegisterEntry / CounterEntry over the switch's P4Runtime channel (finsy)."""

    def __init__(self, switch: Any) -> None:
        self.switch = switch

    async def read(self, job_ids: Iterable[int]) -> dict[int, JobState]:
        from finsy import P4CounterEntry, P4RegisterEntry

        ids = list(job_ids)
        raw: dict[int, dict[str, int]] = {j: {} for j in ids}
        cnt: dict[int, dict[str, int]] = {j: {} for j in ids}
        # One read per job and register; a wildcard read would fetch all MAX_JOBS slots.
        reg_reads = [P4RegisterEntry(name, index=j) for j in ids for name in REGISTERS.values()]
        async for e in self.switch.read(reg_reads):
            raw[e.index][_alias_to_full(e.register_id, REGISTERS.values())] = _int(e.data)
        cnt_reads = [P4CounterEntry(name, index=j) for j in ids for name in COUNTERS.values()]
        by_name = {v: k for k, v in COUNTERS.items()}
        async for e in self.switch.read(cnt_reads):
            full = _alias_to_full(e.counter_id, COUNTERS.values())
            cnt[e.index][by_name[full]] = e.packet_count
        return {j: JobState.from_registers(raw[j], cnt[j]) for j in ids}

    async def reset(self, job_ids: Iterable[int]) -> None:
        from finsy import P4CounterData, P4CounterEntry, P4RegisterEntry

        updates: list[Any] = []
        for j in job_ids:
            names = [*REGISTERS.values(), *TOFINO_REGISTERS.values()]
            updates += [~P4RegisterEntry(name, index=j, data=0) for name in names]
            zero = P4CounterData(byte_count=0, packet_count=0)
            updates += [~P4CounterEntry(name, index=j, data=zero) for name in COUNTERS.values()]
        if updates:
            await self.switch.write(updates)


def _alias_to_full(alias: str, names: Iterable[str]) -> str:
    """finsy decodes to the P4Info alias (shortest unique suffix); map it back to the full name."""
    for name in names:
        if name == alias or name.endswith("." + alias):
            return name
    raise KeyError(alias)


def _int(data: Any) -> int:
    return int(data) if data is not None else 0
