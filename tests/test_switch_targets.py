"""Per-target pieces: the Tofino device config packing, and register access over P4Runtime
(Tofino) and Thrift (bmv2), against fakes that record what goes on the wire."""

from __future__ import annotations

import asyncio
import struct

import pytest
from finsy import P4CounterData, P4CounterEntry, P4RegisterEntry

from symphony import sizes
from symphony.config import PipelineConfig
from symphony.model.switch_model import JobState
from symphony.p4names import FLOW_BASE
from symphony.p4names import JOB_COUNTERS as COUNTERS
from symphony.p4names import JOB_REGISTERS as REGISTERS
from symphony.p4names import TOFINO_JOB_REGISTERS as TOFINO_REGISTERS
from symphony.switch import targets
from symphony.switch import tofino_config as tc
from symphony.switch.registers import P4RuntimeJobRegisters, ThriftJobRegisters
from symphony.switch.targets import target

PROGRAM = tc.TofinoProgram(
    name="symphony", binary=b"\x00BIN\xff" * 3, context=b'{"ctx": 1}', bfrt=b'{"tables": []}'
)


def test_pi_format_is_three_length_prefixed_fields():
    blob = tc.pack(PROGRAM, "pi")
    expected = (
        struct.pack("<i", 8)
        + b"symphony"
        + struct.pack("<i", 15)
        + PROGRAM.binary
        + struct.pack("<i", 10)
        + PROGRAM.context
    )
    assert blob == expected
    back = tc.unpack_pi(blob)
    assert (back.name, back.binary, back.context) == (PROGRAM.name, PROGRAM.binary, PROGRAM.context)


@pytest.mark.parametrize("blob", [b"", b"\x08\x00\x00\x00sym", struct.pack("<i", -1)])
def test_unpack_pi_rejects_garbage(blob):
    with pytest.raises(ValueError):
        tc.unpack_pi(blob)


def test_stratum_format_is_bf_pipeline_config():
    blob = tc.pack(PROGRAM, "stratum")
    msg = tc.BfPipelineConfig()
    msg.ParseFromString(blob)
    assert msg.p4_name == "symphony" and msg.bfruntime_info == PROGRAM.bfrt
    assert len(msg.profiles) == 1
    prof = msg.profiles[0]
    assert (prof.profile_name, prof.context, prof.binary) == (
        "pipe",
        PROGRAM.context,
        PROGRAM.binary,
    )
    # Wire check against stratum's bf.proto field numbers: p4_name is field 1 (tag 0x0a),
    # bfruntime_info field 2 (0x12), profiles field 3 (0x1a).
    assert blob[0] == 0x0A and blob[1] == len("symphony")
    assert blob[2 + 8] == 0x12
    assert 0x1A in blob


def test_stratum_format_needs_bfrt():
    with pytest.raises(ValueError, match=r"bf-rt\.json"):
        tc.pack(tc.TofinoProgram("p", b"b", b"c"), "stratum")


def test_tofino2_target_packs_from_files(tmp_path):
    (tmp_path / "tofino2.bin").write_bytes(PROGRAM.binary)
    (tmp_path / "context.json").write_bytes(PROGRAM.context)
    (tmp_path / "bf-rt.json").write_bytes(PROGRAM.bfrt)
    pipe = PipelineConfig(
        p4info=tmp_path / "p4info.txtpb",
        program_name="symphony",
        binary=tmp_path / "tofino2.bin",
        context=tmp_path / "context.json",
        bfrt=tmp_path / "bf-rt.json",
        device_config_format="pi",
    )
    t = target("tofino2")
    assert t.tick_ns == 1024  # global_tstamp >> 10 (p4src/t2na/symphony.p4)
    assert t.device_config(pipe) == tc.pack(PROGRAM, "pi")
    stratum = PipelineConfig(**{**pipe.__dict__, "device_config_format": "stratum"})
    assert t.device_config(stratum) == tc.pack(PROGRAM, "stratum")
    assert target("bmv2").tick_ns == 1000


class FakeP4RuntimeSwitch:
    """Answers RegisterEntry / CounterEntry reads from a dict; records writes."""

    def __init__(self, regs: dict[tuple[str, int], int], counters: dict[tuple[str, int], int]):
        self.regs = regs
        self.counters = counters
        self.writes: list = []
        self.reads: list = []

    async def read(self, requests):
        for r in requests:
            self.reads.append(r)
            if isinstance(r, P4RegisterEntry):
                # finsy decodes names to the P4Info alias: give back the short one.
                alias = r.register_id.split(".", 1)[1]
                yield P4RegisterEntry(
                    alias, index=r.index, data=self.regs.get((r.register_id, r.index), 0)
                )
            else:
                yield P4CounterEntry(
                    r.counter_id,
                    index=r.index,
                    data=P4CounterData(packet_count=self.counters.get((r.counter_id, r.index), 0)),
                )

    async def write(self, updates):
        self.writes.extend(updates)


def test_p4runtime_registers_read_decodes_job_state():
    regs = {
        (REGISTERS["step_min"], 7): 12,
        (REGISTERS["psn_rec"], 7): 300,
        (REGISTERS["alpha"], 7): 3,
        (REGISTERS["window_packets"], 7): 40,
        (REGISTERS["window_ahead_packets"], 7): 9,
        (REGISTERS["win_start"], 7): 1234,
    }
    counters = {
        (COUNTERS["packets"], 7): 100,
        (COUNTERS["marks"], 7): 5,
        (COUNTERS["queue_marks"], 7): 2,
    }
    sw = FakeP4RuntimeSwitch(regs, counters)
    got = asyncio.run(P4RuntimeJobRegisters(sw).read([7, 8]))
    assert got[7] == JobState(
        step_min=12,
        psn_rec=300,
        alpha=4,
        window_packets=40,
        window_ahead_packets=9,
        win_start=1234,
        packets=100,
        marks=5,
        queue_marks=2,
    )
    assert got[8] == JobState()  # all zero = the initial state, alpha 1
    # Only the two jobs' slots were read, never a wildcard over all MAX_JOBS slots.
    assert {r.index for r in sw.reads} == {7, 8}


def test_p4runtime_registers_reset_writes_zero_to_every_slot():
    sw = FakeP4RuntimeSwitch({}, {})
    asyncio.run(P4RuntimeJobRegisters(sw).reset([5]))
    regs = {(w.register_id, w.index, w.data) for w in sw.writes if isinstance(w, P4RegisterEntry)}
    # Tofino's running eq. 5 sum (tau_score) is job state too: a reused Job_ID starts clean.
    names = [*REGISTERS.values(), *TOFINO_REGISTERS.values()]
    assert regs == {(name, 5, 0) for name in names}
    cnts = {
        (w.counter_id, w.index, w.data.packet_count, w.data.byte_count)
        for w in sw.writes
        if isinstance(w, P4CounterEntry)
    }
    assert cnts == {(name, 5, 0, 0) for name in COUNTERS.values()}


def test_p4runtime_clear_all_zeroes_every_slot_of_every_array():
    class Sized:
        def __init__(self, size):
            self.size = size

    class Schema:
        registers = {n: Sized(3) for n in [*REGISTERS.values(), *TOFINO_REGISTERS.values()]}
        registers[FLOW_BASE] = Sized(4)
        counters = {n: Sized(3) for n in COUNTERS.values()}

    sw = FakeP4RuntimeSwitch({}, {})
    sw.p4info = Schema()
    asyncio.run(P4RuntimeJobRegisters(sw).clear_all())
    regs = {(w.register_id, w.index, w.data) for w in sw.writes if isinstance(w, P4RegisterEntry)}
    assert regs == {(n, i, 0) for n, r in Schema.registers.items() for i in range(r.size)}
    cnts = {(w.counter_id, w.index) for w in sw.writes if isinstance(w, P4CounterEntry)}
    assert cnts == {(n, i) for n in COUNTERS.values() for i in range(3)}


class FakeThrift:
    def __init__(self):
        names = [*REGISTERS.values(), FLOW_BASE]
        self.regs: dict[str, list[int]] = {n: [0] * 64 for n in names}
        self.counters: dict[str, list[int]] = {n: [0] * 64 for n in COUNTERS.values()}
        self.read_all = 0

    def register_reset(self, name):
        self.regs[name] = [0] * len(self.regs[name])

    def counter_reset(self, name):
        self.counters[name] = [0] * len(self.counters[name])

    def register_read_all(self, name):
        self.read_all += 1
        return list(self.regs[name])

    def register_read(self, name, index):
        return self.regs[name][index]

    def register_write(self, name, index, value):
        self.regs[name][index] = value

    def counter_read(self, name, index):
        return (self.counters[name][index] * 100, self.counters[name][index])

    def counter_write(self, name, index, packets=0, nbytes=0):
        self.counters[name][index] = packets


def test_thrift_registers_read_and_reset_only_that_job():
    fake = FakeThrift()
    for name in REGISTERS.values():
        fake.regs[name][3] = 2
        fake.regs[name][4] = 9
    for name in COUNTERS.values():
        fake.counters[name][3] = 11
        fake.counters[name][4] = 13
    regs = ThriftJobRegisters("127.0.0.1", 9090, client=fake)
    got = asyncio.run(regs.read([3]))
    assert got[3].alpha == 3 and got[3].step_min == 2 and got[3].packets == 11
    asyncio.run(regs.reset([3]))
    after = asyncio.run(regs.read([3, 4]))
    assert after[3] == JobState()
    assert after[4].step_min == 9 and after[4].packets == 13  # the other job is untouched


def test_thrift_registers_many_jobs_read_whole_arrays():
    fake = FakeThrift()
    for j in range(1, 41):
        for name in REGISTERS.values():
            fake.regs[name][j] = j
        for name in COUNTERS.values():
            fake.counters[name][j] = 2 * j
    regs = ThriftJobRegisters("127.0.0.1", 9090, client=fake)
    got = asyncio.run(regs.read(range(1, 41)))
    assert fake.read_all == len(REGISTERS)  # one call per register, not one per job
    assert all(got[j].step_min == j and got[j].packets == 2 * j for j in range(1, 41))
    assert asyncio.run(regs.read([7]))[7].alpha == 8 and fake.read_all == len(REGISTERS)


def test_thrift_clear_all_and_read_array():
    fake = FakeThrift()
    for name in fake.regs:
        fake.regs[name][5] = 7
    for name in COUNTERS.values():
        fake.counters[name][5] = 3
    regs = ThriftJobRegisters("127.0.0.1", 9090, client=fake)
    assert asyncio.run(regs.read_array(FLOW_BASE))[5] == 7
    asyncio.run(regs.clear_all())
    assert not any(asyncio.run(regs.read_array(FLOW_BASE)))
    assert asyncio.run(regs.read([5]))[5] == JobState()


def test_every_target_name_has_one_implementation_with_its_tick():
    assert tuple(targets.BY_NAME) == sizes.TARGETS
    assert {n: t.tick_ns for n, t in targets.BY_NAME.items()} == sizes.TICK_NS
