"""The P4Runtime ``p4_device_config`` for Tofino / Tofino2: the compiler's outputs, packed.

Two formats exist, and which one a server accepts depends on the server:

- ``pi``: the packing of PI's Tofino target, used by the SDE's own P4Runtime server (bf_switchd
  with ``--p4rt-server``, open-p4studio) and accepted by stratum_bf. Three length-prefixed
  fields, each length a 32-bit little-endian integer: the program name, the ``tofino.bin`` /
  ``tofino2.bin`` binary, the ``context.json``. (Same layout as p4runtime-shell's
  ``config_builders/tofino.py``.)
- ``stratum``: Stratum's ``stratum.hal.barefoot.BfPipelineConfig`` protobuf (stratum_bfrt,
  stratum_tdi): ``p4_name`` (1), ``bfruntime_info`` (2, the bf-rt.json), repeated ``profiles``
  (3) each with ``profile_name`` (1), ``context`` (2), ``binary`` (3), ``pipe_scope`` (4).

The protobuf is encoded from a descriptor built here (message_factory), so the bytes are those of
the real schema without vendoring Stratum's proto.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FORMATS = ("pi", "stratum")


@dataclass(frozen=True)
class TofinoProgram:
    name: str
    binary: bytes
    context: bytes
    bfrt: bytes = b""
    # Pipes the profile applies to (stratum format); empty = all pipes.
    pipe_scope: tuple[int, ...] = ()
    profile_name: str = "pipe"

    @classmethod
    def from_files(
        cls, name: str, binary: Path, context: Path, bfrt: Path | None = None
    ) -> TofinoProgram:
        return cls(
            name=name,
            binary=binary.read_bytes(),
            context=context.read_bytes(),
            bfrt=bfrt.read_bytes() if bfrt is not None else b"",
        )


def pack(program: TofinoProgram, fmt: str = "pi") -> bytes:
    if fmt == "pi":
        return pack_pi(program)
    if fmt == "stratum":
        return pack_stratum(program)
    raise ValueError(f"unknown Tofino device config format {fmt!r} (known: {', '.join(FORMATS)})")


def pack_pi(program: TofinoProgram) -> bytes:
    name = program.name.encode()
    out = bytearray()
    for field in (name, program.binary, program.context):
        out += struct.pack("<i", len(field))
        out += field
    return bytes(out)


def unpack_pi(blob: bytes) -> TofinoProgram:
    """Inverse of pack_pi (for tests and for inspecting a config read back from a switch)."""
    fields = []
    pos = 0
    for what in ("program name", "binary", "context"):
        if pos + 4 > len(blob):
            raise ValueError(f"truncated before the length of the {what}")
        (n,) = struct.unpack_from("<i", blob, pos)
        pos += 4
        if n < 0 or pos + n > len(blob):
            raise ValueError(f"bad length {n} for the {what}")
        fields.append(blob[pos : pos + n])
        pos += n
    if pos != len(blob):
        raise ValueError(f"{len(blob) - pos} trailing bytes")
    return TofinoProgram(name=fields[0].decode(), binary=fields[1], context=fields[2])


def _bf_pipeline_config_class() -> type:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="symphony_stratum_bf.proto", package="stratum.hal.barefoot", syntax="proto3"
    )
    msg = fdp.message_type.add(name="BfPipelineConfig")
    prof = msg.nested_type.add(name="Profile")
    f = descriptor_pb2.FieldDescriptorProto
    prof.field.add(name="profile_name", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    prof.field.add(name="context", number=2, type=f.TYPE_BYTES, label=f.LABEL_OPTIONAL)
    prof.field.add(name="binary", number=3, type=f.TYPE_BYTES, label=f.LABEL_OPTIONAL)
    prof.field.add(name="pipe_scope", number=4, type=f.TYPE_UINT32, label=f.LABEL_REPEATED)
    msg.field.add(name="p4_name", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    msg.field.add(name="bfruntime_info", number=2, type=f.TYPE_BYTES, label=f.LABEL_OPTIONAL)
    msg.field.add(
        name="profiles",
        number=3,
        type=f.TYPE_MESSAGE,
        label=f.LABEL_REPEATED,
        type_name=".stratum.hal.barefoot.BfPipelineConfig.Profile",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("stratum.hal.barefoot.BfPipelineConfig")
    )


BfPipelineConfig = _bf_pipeline_config_class()


def pack_stratum(program: TofinoProgram) -> bytes:
    if not program.bfrt:
        raise ValueError("the stratum format needs the bf-rt.json (pipelines.tofino2.bfrt)")
    cfg = BfPipelineConfig(p4_name=program.name, bfruntime_info=program.bfrt)
    cfg.profiles.add(
        profile_name=program.profile_name,
        context=program.context,
        binary=program.binary,
        pipe_scope=list(program.pipe_scope),
    )
    return bytes(cfg.SerializeToString(deterministic=True))
