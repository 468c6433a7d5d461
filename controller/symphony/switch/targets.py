"""What differs between targets: the device config pushed with the P4Info, the timestamp unit,
and how per-job registers are reached."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from symphony.config import PipelineConfig, SwitchConfig
from symphony.sizes import TICK_NS
from symphony.switch.registers import JobRegisters, P4RuntimeJobRegisters, ThriftJobRegisters
from symphony.switch.tofino_config import TofinoProgram, pack


@dataclass(frozen=True)
class Target:
    name: str
    # Ingress timestamp unit (docs/design.md "Timestamps"): T_win is written in these ticks.
    tick_ns: int

    def device_config(self, pipeline: PipelineConfig) -> bytes:
        raise NotImplementedError

    def registers(self, sw: SwitchConfig, session_switch: Any) -> JobRegisters:
        raise NotImplementedError


class Bmv2(Target):
    def device_config(self, pipeline: PipelineConfig) -> bytes:
        assert pipeline.device_config is not None
        return pipeline.device_config.read_bytes()

    def registers(self, sw: SwitchConfig, session_switch: Any) -> JobRegisters:
        # p4lang/PI#376: no RegisterEntry over bmv2's P4Runtime; use its Thrift API (and the
        # session's P4Runtime channel for whole counter arrays).
        return ThriftJobRegisters(sw.thrift_host, sw.thrift_port, switch=session_switch)


class Tofino2(Target):
    def device_config(self, pipeline: PipelineConfig) -> bytes:
        assert pipeline.binary is not None and pipeline.context is not None
        program = TofinoProgram.from_files(
            pipeline.program_name, pipeline.binary, pipeline.context, pipeline.bfrt
        )
        return pack(program, pipeline.device_config_format)

    def registers(self, sw: SwitchConfig, session_switch: Any) -> JobRegisters:
        return P4RuntimeJobRegisters(session_switch)


# One implementation per name in sizes.TARGETS (tests/test_switch_targets.py checks it).
BY_NAME: dict[str, Target] = {
    "bmv2": Bmv2("bmv2", tick_ns=TICK_NS["bmv2"]),
    "tofino2": Tofino2("tofino2", tick_ns=TICK_NS["tofino2"]),
}


def target(name: str) -> Target:
    return BY_NAME[name]
