"""The Tofino2 build against the bmv2 one: one controller code path drives both.

Runs in the test command's "Tofino2 compile" group, after `make build` and `make tofino2` (it is
deselected from the plain pytest run with the `tofino2` marker).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from finsy.proto.p4.config.v1 import p4info_pb2
from google.protobuf import text_format

from symphony_tools import tofino_resources as resources

pytestmark = pytest.mark.tofino2

ROOT = Path(__file__).resolve().parents[1]
BMV2 = ROOT / "build" / "bmv2" / "symphony.p4info.txtpb"
TOFINO2 = ROOT / "build" / "tofino2"
FABRIC = ROOT / "build" / "tofino2-fabric_demo"
# Symphony's own stage budget (docs/tofino.md): at most 12 of Tofino2's 20 stages, so that a
# forwarding program keeps the rest.
SYMPHONY_STAGE_BUDGET = 12


def _p4info(path: Path) -> p4info_pb2.P4Info:
    if not path.exists():
        pytest.fail(f"{path} missing: run `make build tofino2` first")
    return text_format.Parse(path.read_text(), p4info_pb2.P4Info())


@pytest.fixture(scope="module")
def both() -> tuple[p4info_pb2.P4Info, p4info_pb2.P4Info]:
    return _p4info(BMV2), _p4info(TOFINO2 / "symphony.p4info.txtpb")


def _tables(info: p4info_pb2.P4Info) -> dict[str, object]:
    actions = {a.preamble.id: a.preamble.name for a in info.actions}
    return {
        t.preamble.name: (
            [(f.name, f.bitwidth, f.match_type) for f in t.match_fields],
            sorted(actions[r.id] for r in t.action_refs),
            t.const_default_action_id != 0,
        )
        for t in info.tables
    }


def _actions(info: p4info_pb2.P4Info) -> dict[str, list[tuple[str, int]]]:
    return {a.preamble.name: [(p.name, p.bitwidth) for p in a.params] for a in info.actions}


def test_tables_keys_and_actions_match_bmv2(both) -> None:
    bmv2, tofino = both
    assert _tables(tofino) == _tables(bmv2)


def test_action_parameters_match_bmv2(both) -> None:
    bmv2, tofino = both
    tofino_actions = _actions(tofino)
    for name, params in _actions(bmv2).items():
        assert tofino_actions.get(name) == params, name


# Every P4Info name the controller uses, and the per-job array sizes, are checked against this
# P4Info by tests/test_p4info_names.py (its tofino2-marked half).


def _summary(out: Path) -> resources.Summary:
    res = next(out.rglob("resources.json"), None)
    assert res is not None, "no resources.json: `make tofino2` compiles with -g --verbose 2"
    return resources.parse_resources(res)


def test_symphony_fits_its_stage_budget() -> None:
    summary = _summary(TOFINO2)
    assert summary.n_stages == 20
    assert 0 < summary.depth <= SYMPHONY_STAGE_BUDGET


def test_coexistence_program_fits_with_symphony_in_its_budget() -> None:
    summary = _summary(FABRIC)
    assert 0 < summary.depth <= summary.n_stages
    symphony_stages = summary.part_stages()["symphony"]
    assert symphony_stages and max(symphony_stages) < SYMPHONY_STAGE_BUDGET
    assert summary.part_stages()["program"], "the forwarding tables are placed"


def test_coexistence_program_exposes_the_same_symphony_names(both) -> None:
    """The library's absolute names: the controller drives Symphony inside any program."""
    _, tofino = both
    fabric = _p4info(FABRIC / "symphony.p4info.txtpb")

    # Forwarding and the ACK class (docs/ack_priority.md) are each top's own, not the library's:
    # fabric_demo.p4 forwards its own way and has no ACK class (the config refuses ack_priority
    # on a program without it).
    def symphony_only(d: dict) -> dict:
        return {
            k: v
            for k, v in d.items()
            if k.startswith("Symphony") and ".forward." not in k and ".ack_priority." not in k
        }

    assert symphony_only(_tables(fabric)) == symphony_only(_tables(tofino))
    assert symphony_only(_actions(fabric)) == symphony_only(_actions(tofino))
    for kind in ("registers", "counters"):
        ours = {r.preamble.name: r.size for r in getattr(tofino, kind)}
        theirs = {r.preamble.name: r.size for r in getattr(fabric, kind)}
        assert symphony_only(theirs) == symphony_only(ours), kind


def test_binary_and_context_are_written() -> None:
    assert (TOFINO2 / "pipe" / "tofino2.bin").stat().st_size > 0
    assert (TOFINO2 / "pipe" / "context.json").stat().st_size > 0
    assert (TOFINO2 / "bfrt.json").stat().st_size > 0


def test_controller_packs_the_compiled_program() -> None:
    from symphony.switch.tofino_config import TofinoProgram, pack, unpack_pi

    program = TofinoProgram.from_files(
        "symphony",
        TOFINO2 / "pipe" / "tofino2.bin",
        TOFINO2 / "pipe" / "context.json",
        TOFINO2 / "bfrt.json",
    )
    assert unpack_pi(pack(program, "pi")) == TofinoProgram(
        "symphony", program.binary, program.context
    )
    assert len(pack(program, "stratum")) > len(program.binary) + len(program.context)
