"""The ACK class in the controller's config (docs/ack_priority.md): `ack_priority` per switch, off
by default, refused at load where the switch could not serve it; its entries on the switch."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_config_load import write_example

from symphony import config
from symphony import p4names as n
from symphony.config import ConfigError
from symphony.model import opcodes
from symphony.sizes import BMV2_ACK_PRIORITY, BMV2_PRIORITY_QUEUES_MIN
from symphony.switch import desired

# A P4Info that declares the ACK class's table (the real one is build/bmv2's).
P4INFO_WITH_ACK = f'tables {{ preamble {{ id: 1 name: "{n.ACK_CLASS}" alias: "ack_class" }} }}\n'


def _switch(raw: dict) -> dict:
    return raw["switches"][0]


def _load(tmp_path: Path, p4info: str = P4INFO_WITH_ACK, **keys: object) -> config.Config:
    path = write_example(tmp_path, lambda raw: _switch(raw).update(keys))
    (tmp_path / "build/bmv2/symphony.p4info.txtpb").write_text(p4info)
    return config.load(path)


def _refused(tmp_path: Path, field: str, p4info: str = P4INFO_WITH_ACK, **keys: object) -> str:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, p4info, **keys)
    assert err.value.field == field
    assert str(err.value).startswith(f"config error: {field}: ")
    return str(err.value)


def test_off_by_default(tmp_path):
    sw = _load(tmp_path).switch("s1")
    assert sw.ack_priority is False
    # The shipped example declares what bmv2_env/start.sh starts.
    assert sw.priority_queues == 2
    assert n.ACK_CLASS not in {e.table for e in desired.base_entries(sw)}


def test_on_writes_one_entry_per_opcode_of_the_class(tmp_path):
    sw = _load(tmp_path, ack_priority=True).switch("s1")
    assert sw.ack_priority is True
    ack = [e for e in desired.base_entries(sw) if e.table == n.ACK_CLASS]
    assert sorted(e.match["opcode"] for e in ack) == sorted(opcodes.ACK_CLASS)
    assert {e.action for e in ack} == {n.TO_ACK_QUEUE}
    assert all(e.params == {} for e in ack)


def test_the_class_is_acks_atomic_acks_and_cnps_none_of_them_step_traffic():
    assert sorted(opcodes.ACK_CLASS) == [0x11, 0x12, 0x81]
    assert not any(opcodes.is_tracked_opcode(o) for o in opcodes.ACK_CLASS)


def test_bmv2_without_priority_queues_is_refused(tmp_path):
    def edit(raw: dict) -> None:
        _switch(raw).pop("priority_queues")
        _switch(raw)["ack_priority"] = True

    path = write_example(tmp_path, edit)
    (tmp_path / "build/bmv2/symphony.p4info.txtpb").write_text(P4INFO_WITH_ACK)
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert err.value.field == "switches[0].ack_priority"
    text = str(err.value)
    assert f"priority queue {BMV2_ACK_PRIORITY}" in text
    assert f"--priority-queues {BMV2_PRIORITY_QUEUES_MIN}" in text
    assert "priority_queues is 1" in text


def test_bmv2_with_one_priority_queue_is_refused(tmp_path):
    text = _refused(tmp_path, "switches[0].ack_priority", ack_priority=True, priority_queues=1)
    assert "drops frames of a priority it does not have" in text


def test_one_priority_queue_is_fine_with_the_class_off(tmp_path):
    assert _load(tmp_path, priority_queues=1).switch("s1").priority_queues == 1


def test_a_program_without_the_table_is_refused(tmp_path):
    text = _refused(tmp_path, "switches[0].ack_priority", p4info="", ack_priority=True)
    assert f"has no table {n.ACK_CLASS}" in text
    assert "set ack_priority = false" in text


@pytest.mark.parametrize(
    ("keys", "field", "words"),
    [
        ({"ack_priority": "yes"}, "switches[0].ack_priority", "must be true or false"),
        ({"ack_priority": 1}, "switches[0].ack_priority", "must be true or false"),
        ({"priority_queues": 0}, "switches[0].priority_queues", "must be in 1..8"),
        ({"priority_queues": 9}, "switches[0].priority_queues", "must be in 1..8"),
    ],
)
def test_bad_values_name_the_field(tmp_path, keys, field, words):
    assert words in _refused(tmp_path, field, **keys)


def test_priority_queues_is_bmv2_only(tmp_path):
    def edit(raw: dict) -> None:
        raw["pipelines"]["tofino2"] = {
            "p4info": "../build/bmv2/symphony.p4info.txtpb",
            "binary": "../build/bmv2/symphony.json",
            "context": "../build/bmv2/symphony.json",
        }
        _switch(raw)["target"] = "tofino2"

    path = write_example(tmp_path, edit)
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert err.value.field == "switches[0].priority_queues"
    assert "traffic manager" in str(err.value)


def test_tofino2_serves_the_class(tmp_path):
    def edit(raw: dict) -> None:
        raw["pipelines"]["tofino2"] = {
            "p4info": "../build/bmv2/symphony.p4info.txtpb",
            "binary": "../build/bmv2/symphony.json",
            "context": "../build/bmv2/symphony.json",
        }
        _switch(raw).update(target="tofino2", ack_priority=True)
        _switch(raw).pop("priority_queues")

    path = write_example(tmp_path, edit)
    (tmp_path / "build/bmv2/symphony.p4info.txtpb").write_text(P4INFO_WITH_ACK)
    sw = config.load(path).switch("s1")
    assert (sw.ack_priority, sw.priority_queues) == (True, None)


def test_the_conformance_traces_send_acks_and_cnps():
    """The suite's traces carry the class among their untracked opcodes (so the model and every
    implementation are checked on them), ptf_tests/test_ack_priority.py replays those with the
    class on."""
    from conformance.traces import UNTRACKED, generate

    assert {opcodes.ACK, opcodes.CNP} <= set(UNTRACKED)
    frames = sum(
        p.pkt.opcode in opcodes.ACK_CLASS for seed in range(20) for p in generate(seed, 100).packets
    )
    assert frames > 0
