"""P4Runtime reads that keep the switch's protobufs as they are.

finsy's ``Switch.read`` decodes every entity into Python values (names, ints). The controller
compares table entries as protobufs and reads whole counter arrays: at 16k jobs that is about
40k table entries on a reconciliation and 49k counter cells per telemetry sweep, all decoded only
to be encoded again or summed. These reads go through finsy's client (the same channel, the same
arbitration) and return the entities undecoded.
"""

from __future__ import annotations

from typing import Any

from finsy.proto import p4r

from symphony.foreground import Pause, next_turn


async def read(switch: Any, *entities: p4r.Entity) -> list[p4r.Entity]:
    """Every entity the switch returns for these (wildcard) queries."""
    client = switch._p4client  # finsy has no public raw read
    if client is None:
        raise ConnectionError(f"switch {switch.name}: not connected")
    request = p4r.ReadRequest(device_id=switch.device_id, entities=list(entities))
    return [ent async for reply in client.request_iter(request) for ent in reply.entities]


async def table_entries(switch: Any, query: p4r.TableEntry) -> list[p4r.TableEntry]:
    return [e.table_entry for e in await read(switch, p4r.Entity(table_entry=query))]


# Cells decoded between two pauses (16k cells take about 10 ms).
DECODE_SLICE = 4096


async def counter_array(switch: Any, name: str, pause: Pause = next_turn) -> list[int]:
    """Packet counts of every cell of one indirect counter (P4Info name), index = cell;
    ``pause()`` is awaited between slices of the decoding."""
    counter = switch.p4info.counters[name]
    query = p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=counter.id))
    out = [0] * counter.size
    cells = await read(switch, query)
    for i in range(0, len(cells), DECODE_SLICE):
        for e in cells[i : i + DECODE_SLICE]:
            out[e.counter_entry.index.index] = e.counter_entry.data.packet_count
        await pause()
    return out
