"""P4Runtime reads that keep the switch's protobufs as they are, on a channel of their own.

finsy's ``Switch.read`` decodes every entity into Python values (names, ints). The controller
compares table entries as protobufs and reads whole counter arrays: at 16k jobs that is about
40k table entries on a reconciliation and 49k counter cells per telemetry sweep, all decoded only
to be encoded again or summed. finsy's own client is private, so these reads go through a
``finsy.P4Client`` of their own to the same address with the same credentials, opened on the
first call and closed when the switch stops: a Read needs no arbitration, and the one write
here (``probe_write``) carries the switch's election id and role, which is what a P4Runtime
server checks (the fencing test on bmv2 shows a deposed id refused).
"""

from __future__ import annotations

import asyncio

import finsy
from finsy.proto import p4r

from symphony.foreground import Pause, next_turn

# Where the client is kept: finsy's per-switch stash of user data.
_STASH_KEY = "symphony.raw_read"
_U64 = (1 << 64) - 1
# Closes under way (a task is only weakly referenced by the loop).
_closing: set[asyncio.Task[None]] = set()


async def _client(switch: finsy.Switch) -> finsy.P4Client:
    """The switch's raw client, opened on first use and closed when the switch stops."""
    client = switch.stash.get(_STASH_KEY)
    if isinstance(client, finsy.P4Client) and client.channel is not None:
        return client
    fresh = finsy.P4Client(switch.address, switch.options.channel_credentials)
    await fresh.open()
    switch.stash[_STASH_KEY] = fresh

    def close(*_: object) -> None:
        if switch.stash.get(_STASH_KEY) is fresh:
            del switch.stash[_STASH_KEY]
        task = asyncio.get_running_loop().create_task(fresh.close())
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    switch.ee.once(finsy.SwitchEvent.SWITCH_STOP, close)
    return fresh


async def read(switch: finsy.Switch, *entities: p4r.Entity) -> list[p4r.Entity]:
    """Every entity the switch returns for these (wildcard) queries."""
    request = p4r.ReadRequest(
        device_id=switch.device_id, role=switch.role_name, entities=list(entities)
    )
    client = await _client(switch)
    return [ent async for reply in client.request_iter(request) for ent in reply.entities]


async def table_entries(switch: finsy.Switch, query: p4r.TableEntry) -> list[p4r.TableEntry]:
    return [e.table_entry for e in await read(switch, p4r.Entity(table_entry=query))]


async def probe_write(switch: finsy.Switch) -> None:
    """An empty WriteRequest with the switch's election id and role: refused
    (PERMISSION_DENIED, raised as finsy.P4ClientError) unless that id is the primary's. finsy's
    own ``write`` skips an empty request."""
    eid = switch.election_id
    request = p4r.WriteRequest(
        device_id=switch.device_id,
        role=switch.role_name,
        election_id=p4r.Uint128(high=eid >> 64, low=eid & _U64),
    )
    await (await _client(switch)).request(request)


# Cells decoded between two pauses (16k cells take about 10 ms).
DECODE_SLICE = 4096


async def counter_array(switch: finsy.Switch, name: str, pause: Pause = next_turn) -> list[int]:
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
