"""Table entries as P4Runtime protobufs: encoding the model's specs, and the diff that
reconciliation applies.

Entries are compared as protobufs, not as Python values, because what the switch returns on a
read is a protobuf: comparing the canonical bytes of match fields and actions means "equal" is
exactly "the switch would do the same thing", whatever spelling (int, string, prefix) the spec
used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from finsy import P4Schema, P4TableAction, P4TableEntry, P4TableMatch
from finsy.proto import p4r

# (table_id, priority, sorted serialized FieldMatches) or (table_id, "default").
EntryKey = tuple[Any, ...]


def key_of(entry: p4r.TableEntry) -> EntryKey:
    if entry.is_default_action:
        return (entry.table_id, "default")
    fields = sorted(m.SerializeToString(deterministic=True) for m in entry.match)
    return (entry.table_id, entry.priority, tuple(fields))


def action_of(entry: p4r.TableEntry) -> bytes:
    return entry.action.SerializeToString(deterministic=True)


def resolve_field(schema: P4Schema, table: str, name: str) -> str:
    """The P4Info match-field name for ``name``: itself, or the one field whose dotted name ends
    with it (the model may say ``tag`` for ``meta.symphony.tag``)."""
    fields = [f.name for f in schema.tables[table].match_fields]
    if name in fields:
        return name
    candidates = [f for f in fields if f.endswith("." + name) or f.rsplit(".", 1)[-1] == name]
    if len(candidates) == 1:
        return candidates[0]
    if len(fields) == 1:
        return fields[0]
    raise KeyError(f"table {table}: no match field {name!r} (fields: {', '.join(fields)})")


def encode(spec: Any, schema: P4Schema) -> p4r.TableEntry:
    """A ``TableEntrySpec`` (symphony.model.tables) as a P4Runtime TableEntry."""
    if spec.is_default:
        entry = P4TableEntry(
            spec.table, action=P4TableAction(spec.action, **spec.params), is_default_action=True
        )
    else:
        match = {resolve_field(schema, spec.table, k): v for k, v in spec.match.items()}
        entry = P4TableEntry(
            spec.table,
            match=P4TableMatch(match),
            action=P4TableAction(spec.action, **spec.params),
            priority=spec.priority,
        )
    return entry.encode(schema).table_entry


@dataclass
class Diff:
    """What to write so that the switch holds ``desired``: deletes, then modifies, then inserts."""

    delete: list[p4r.TableEntry] = field(default_factory=list)
    modify: list[p4r.TableEntry] = field(default_factory=list)
    insert: list[p4r.TableEntry] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.delete or self.modify or self.insert)

    def __len__(self) -> int:
        return len(self.delete) + len(self.modify) + len(self.insert)


def diff(
    actual: Mapping[EntryKey, p4r.TableEntry], desired: Mapping[EntryKey, p4r.TableEntry]
) -> Diff:
    """Entries to delete, modify and insert to turn ``actual`` into ``desired``.

    A default entry is never deleted (a table always has one); one that the desired state does
    not mention is left as the switch has it.
    """
    d = Diff()
    for k, entry in actual.items():
        if k not in desired and not entry.is_default_action:
            d.delete.append(entry)
    for k, entry in desired.items():
        have = actual.get(k)
        if have is None:
            (d.modify if entry.is_default_action else d.insert).append(entry)
        elif have is not entry and action_of(have) != action_of(entry):
            d.modify.append(entry)
    return d


def index(entries: Iterable[p4r.TableEntry]) -> dict[EntryKey, p4r.TableEntry]:
    return {key_of(e): e for e in entries}


def updates(kind: p4r.Update.Type.ValueType, entries: Iterable[p4r.TableEntry]) -> list[p4r.Update]:
    return [p4r.Update(type=kind, entity=p4r.Entity(table_entry=e)) for e in entries]


def strip_for_compare(entry: p4r.TableEntry) -> p4r.TableEntry:
    """A read-back entry without the fields a read adds (counters, meters, metadata), so it can be
    written back as a DELETE or compared."""
    out = p4r.TableEntry()
    out.table_id = entry.table_id
    out.match.extend(entry.match)
    if entry.HasField("action"):
        out.action.CopyFrom(entry.action)
    out.priority = entry.priority
    out.is_default_action = entry.is_default_action
    return out
