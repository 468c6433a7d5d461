"""Every P4Info name the Python code uses, checked against both targets' compiled P4Info.

The names live in one module (symphony/p4names.py); sizes in another (symphony/sizes.py). Here
each name must exist in the P4Info of the bmv2 build (`make build`, run first by the test
command) and of the Tofino2 build (`make tofino2`; the `tofino2`-marked half, run by the test
command's Tofino2 group whenever p4c-barefoot is installed). Every entry the controller and the
golden model generate must encode against that P4Info, with exactly the action parameters the
P4 action declares: a table, action, match field or action-data name changed on one side only
fails here, not on a switch.
"""

from __future__ import annotations

import ipaddress
import shutil
from functools import cache
from pathlib import Path

import pytest
from finsy import P4Schema
from finsy.proto.p4.config.v1 import p4info_pb2
from google.protobuf import text_format

from symphony import p4names
from symphony.config import PortConfig, Route, SwitchConfig
from symphony.model import tables
from symphony.model.params import JobParams, QueueParams
from symphony.model.tables import TableEntrySpec
from symphony.sizes import (
    ECMP_BUCKETS,
    ECMP_GROUP_ID_MAX,
    ECMP_MEMBER_TABLE_SIZE,
    FLOW_SLOTS,
    MAX_JOBS,
    PORT_SLOTS,
    TICK_NS,
)
from symphony.switch import desired, entries

ROOT = Path(__file__).resolve().parents[1]
P4INFO = {
    "bmv2": ROOT / "build" / "bmv2" / "symphony.p4info.txtpb",
    "tofino2": ROOT / "build" / "tofino2" / "symphony.p4info.txtpb",
}
BUILD_CMD = {"bmv2": "make build", "tofino2": "make tofino2"}
TARGETS = [pytest.param("bmv2", id="bmv2"), pytest.param("tofino2", marks=pytest.mark.tofino2)]


@cache
def _p4info(target: str) -> p4info_pb2.P4Info:
    path = P4INFO[target]
    if not path.exists():
        if target == "bmv2" and shutil.which("p4c-bm2-ss") is None:
            pytest.skip(f"{path} missing and p4c-bm2-ss not installed")
        pytest.fail(f"{path} missing: run `{BUILD_CMD[target]}` first")
    return text_format.Parse(path.read_text(), p4info_pb2.P4Info())


@cache
def _schema(target: str) -> P4Schema:
    _p4info(target)
    return P4Schema(P4INFO[target])


def _declared(info: p4info_pb2.P4Info, kind: str) -> dict[str, object]:
    return {x.preamble.name: x for x in getattr(info, kind)}


@pytest.mark.parametrize("target", TARGETS)
def test_every_name_the_python_code_uses_is_in_the_p4info(target: str) -> None:
    info = _p4info(target)
    for kind, names in p4names.names(target).items():
        missing = sorted(set(names) - set(_declared(info, kind)))
        assert not missing, f"{target} P4Info has no {kind} {missing}"


@pytest.mark.parametrize("target", TARGETS)
def test_actions_belong_to_their_tables(target: str) -> None:
    info = _p4info(target)
    action_names = {a.preamble.id: a.preamble.name for a in info.actions}
    table_actions = {
        t.preamble.name: {action_names[r.id] for r in t.action_refs} for t in info.tables
    }
    for spec in _every_entry(target):
        assert spec.action in table_actions[spec.table], (spec.table, spec.action)


@pytest.mark.parametrize("target", TARGETS)
def test_arrays_are_sized_as_sizes_py_says(target: str) -> None:
    """sizes.MAX_JOBS and sizes.PORT_SLOTS are p4src/shared/sizes.p4's: the P4Info states the
    array sizes."""
    info = _p4info(target)
    registers = {r.preamble.name: r.size for r in info.registers}
    counters = {c.preamble.name: c.size for c in info.counters}
    job_registers = [*p4names.JOB_REGISTERS.values()]
    if target == "tofino2":
        job_registers += p4names.TOFINO_JOB_REGISTERS.values()
    for name in job_registers:
        assert registers[name] == MAX_JOBS, name
    for name in p4names.JOB_COUNTERS.values():
        assert counters[name] == MAX_JOBS, name
    for name in p4names.PORT_COUNTERS.values():
        assert counters[name] == PORT_SLOTS, name
    if target == "bmv2":
        assert registers[p4names.FLOW_BASE] == FLOW_SLOTS


@pytest.mark.parametrize("target", TARGETS)
def test_ecmp_widths_and_sizes_are_the_python_ones(target: str) -> None:
    """sizes.ECMP_BUCKETS is 2^(the bucket key's width), the group id fits its key and the
    action's parameter, and the member table holds ECMP_MEMBER_TABLE_SIZE entries."""
    info = _p4info(target)
    member = _declared(info, "tables")[p4names.ECMP_MEMBER]
    keys = {k.name: k for k in member.match_fields}
    assert set(keys) == {"group", "bucket"}
    assert all(k.match_type == p4info_pb2.MatchField.EXACT for k in keys.values())
    assert 1 << keys["bucket"].bitwidth == ECMP_BUCKETS
    assert (1 << keys["group"].bitwidth) - 1 == ECMP_GROUP_ID_MAX
    assert member.size == ECMP_MEMBER_TABLE_SIZE
    group_param = _declared(info, "actions")[p4names.SET_ECMP_GROUP].params
    assert [(p.name, p.bitwidth) for p in group_param] == [("group", keys["group"].bitwidth)]


@pytest.mark.parametrize("target", TARGETS)
def test_every_generated_entry_encodes_with_the_declared_action_data(target: str) -> None:
    """Routes, cross-connects, queue ramps, the ACK class, lookup tables and a job's entries (its
    ``set_params`` action data derives from JobParams): each encodes against the P4Info, and
    its action parameters are exactly the ones the P4 action declares."""
    info = _p4info(target)
    schema = _schema(target)
    action_params = {a.preamble.name: {p.name for p in a.params} for a in info.actions}
    specs = _every_entry(target)
    assert {s.table for s in specs} == set(p4names.TABLES) - {p4names.OPCODE_CLASS}
    for spec in specs:
        entries.encode(spec, schema)
        assert set(spec.params) == action_params[spec.action], spec.action


def _every_entry(target: str) -> list[TableEntrySpec]:
    marking = QueueParams(50, 100, 0.2)
    sw = SwitchConfig(
        name="s1",
        address="127.0.0.1:9559",
        device_id=0,
        target=target,
        thrift_port=9090,
        thrift_host="127.0.0.1",
        ports=(PortConfig(0, marking, peer=1), PortConfig(1, marking, peer=0)),
        routes=(Route(ipaddress.IPv4Network("10.0.0.0/24"), 0),),
        ack_priority=True,  # the ACK class's entries too (docs/ack_priority.md)
    )
    prm = JobParams().to_action_params(TICK_NS[target])
    specs = desired.base_entries(sw)
    specs += desired.ecmp_group_entries(1, (0, 1))
    specs.append(desired.ecmp_route(0x0A010000, 16, 1))
    specs += tables.queue_mark_entries(2, QueueParams(10, 20, 0.5))
    specs += desired.entries_for(5, prm, tag=True, hosts=(0x0A000001,))
    return specs


@pytest.mark.parametrize("target", TARGETS)
def test_route_table_size_is_the_python_one(target: str) -> None:
    """sizes.ROUTE_TABLE_SIZE is forward.ipv4_lpm's size: the config refuses a switch whose
    explicit and topology-derived routes would not fit."""
    from symphony.sizes import ROUTE_TABLE_SIZE

    assert _declared(_p4info(target), "tables")[p4names.IPV4_LPM].size == ROUTE_TABLE_SIZE


@pytest.mark.parametrize("target", TARGETS)
def test_ack_class_table_is_keyed_on_the_opcode_and_sized_as_sizes_py_says(target: str) -> None:
    """The ACK class (docs/ack_priority.md): keyed on the 8-bit BTH opcode, room for
    sizes.ACK_CLASS_TABLE_SIZE opcodes, and its action takes no data (the queue is the program's
    constant, the target's own)."""
    from symphony.model.opcodes import ACK_CLASS
    from symphony.sizes import ACK_CLASS_TABLE_SIZE

    info = _p4info(target)
    table = _declared(info, "tables")[p4names.ACK_CLASS]
    assert [(k.name, k.bitwidth) for k in table.match_fields] == [("opcode", 8)]
    assert table.match_fields[0].match_type == p4info_pb2.MatchField.EXACT
    assert table.size == ACK_CLASS_TABLE_SIZE >= len(ACK_CLASS)
    assert not _declared(info, "actions")[p4names.TO_ACK_QUEUE].params
