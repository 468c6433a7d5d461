"""A finsy P4Runtime session driven from synchronous code (PTF tests, scripts, benchmarks).

finsy is asyncio-only; PTF tests are plain unittest methods. The session's event loop runs in a
daemon thread and every call waits for its coroutine, so callers see ordinary blocking methods
while finsy keeps the stream channel (and with it mastership) alive in the background.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

import finsy as fy
from finsy.proto import p4r

from symphony.model.tables import TableEntrySpec
from symphony.sizes import WRITE_BATCH
from symphony.switch import entries

T = TypeVar("T")


class BlockingSwitch:
    """Connect, become primary, push the pipeline if its cookie differs, then serve calls."""

    def __init__(
        self,
        address: str = "127.0.0.1:9559",
        *,
        device_id: int = 0,
        p4info: Path | None = None,
        p4blob: Path | None = None,
        name: str = "sw",
        timeout_s: float = 60.0,
    ) -> None:
        self.timeout_s = timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name=name)
        self._thread.start()
        opts = fy.SwitchOptions(p4info=p4info, p4blob=p4blob, device_id=device_id)
        self.switch = fy.Switch(name, address, opts)
        try:
            self._call(self.switch.__aenter__())
        except BaseException:
            self._stop_loop()
            raise

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout_s)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the session's loop and wait for it, e.g. one of the controller's
        `JobRegisters` methods (the P4Runtime ones need the session's loop)."""
        return self._call(coro)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def close(self) -> None:
        try:
            self._call(self.switch.__aexit__(None, None, None))
        finally:
            self._stop_loop()

    def __enter__(self) -> BlockingSwitch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema(self) -> fy.P4Schema:
        return self.switch.p4info

    def encode(self, spec: TableEntrySpec) -> p4r.TableEntry:
        return entries.encode(spec, self.schema)

    def write(self, specs: Iterable[TableEntrySpec], kind: str = "insert") -> None:
        """Insert, modify or delete entries, batched; default entries are always modified."""
        updates = []
        for spec in specs:
            te = self.encode(spec)
            typ = p4r.Update.MODIFY if spec.is_default else getattr(p4r.Update, kind.upper())
            updates.append(p4r.Update(type=typ, entity=p4r.Entity(table_entry=te)))
        for i in range(0, len(updates), WRITE_BATCH):
            self._call(self.switch.write(updates[i : i + WRITE_BATCH]))

    def read_entries(self, table: str) -> list[p4r.TableEntry]:
        """Every non-default entry of one table, as P4Runtime protobufs."""

        async def read() -> list[p4r.TableEntry]:
            return [
                e.encode(self.schema).table_entry
                async for e in self.switch.read(fy.P4TableEntry(table))
            ]

        return self._call(read())

    def delete_all(self) -> None:
        """Every table entry and multicast group gone (finsy's delete_all)."""
        self._call(self.switch.delete_all())
