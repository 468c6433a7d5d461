"""Chakra execution traces (Astra-Sim 2's workload input): one file per NPU, `<prefix>.<rank>.et`,
each a `GlobalMetadata` then the NPU's `Node`s, every message preceded by its length as a
protobuf varint (Chakra's protolib; a file may be gzipped). The schema is Chakra's own, compiled
(`chakra_schema`).

What a node means is what Astra-Sim 2's workload layer (Workload.cc @ 518bd51) does with it:

- `COMP_NODE`: `duration_micros` microseconds of compute (Astra-Sim: `runtime() * 1000` ns; 0
  is 1 ns). `num_ops`/`tensor_size` are its roofline mode's, which is off by default: not read.
- `COMM_COLL_NODE`: attributes `comm_type` (a `CollectiveCommType`) and `comm_size` (bytes) over
  the dimensions `involved_dim` selects (a bool list; all of them when absent).
- `METADATA_NODE`: done when issued.
- A node waits for its `data_deps` and `ctrl_deps` (both are dependencies in Chakra's schema;
  Astra-Sim's older feeder resolved `data_deps` only, its FeederV3 both).

Astra-Sim 2 matches collectives across NPUs by their order, and Chakra's converters number
nodes on across files (rank 1's ids follow rank 0's), so ranks are compared by position: the
k-th node of every rank must be the same node (type, name, dependencies by position, collective)
or the trace is refused; only compute durations may differ between ranks. Every departure is
refused with the file and the node (`WorkloadError`); nothing is guessed.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from evaluation.fabric.chakra_schema import et_def_pb2 as pb
from evaluation.fabric.workload_text import Comm, WorkloadError

# CollectiveCommType -> the kind the simulator names it by (workload_text's, where it has one)
COLLECTIVES = {
    pb.ALL_REDUCE: "ALLREDUCE",
    pb.ALL_GATHER: "ALLGATHER",
    pb.REDUCE_SCATTER: "REDUCESCATTER",
    pb.ALL_TO_ALL: "ALLTOALL",
    pb.REDUCE: "REDUCE",
    pb.GATHER: "GATHER",
    pb.SCATTER: "SCATTER",
    pb.BROADCAST: "BROADCAST",
    pb.REDUCE_SCATTER_BLOCK: "REDUCE_SCATTER_BLOCK",
    pb.BARRIER: "BARRIER",
}
_INT_FIELDS = (
    "int64_val",
    "uint64_val",
    "int32_val",
    "uint32_val",
    "sint64_val",
    "sint32_val",
    "fixed64_val",
    "fixed32_val",
    "sfixed64_val",
    "sfixed32_val",
)


@dataclass(frozen=True)
class EtNode:
    index: int  # its position among its rank's nodes (0-based; the metadata not counted)
    id: int  # rank 0's id
    name: str
    type: str  # NodeType's name: COMP_NODE, COMM_COLL_NODE, ...
    deps: tuple[int, ...]  # the positions of the nodes it waits for
    comm: Comm | None = None  # COMM_COLL_NODE: its kind and size
    involved_dim: tuple[bool, ...] | None = None
    is_cpu_op: bool = False
    pg_name: str = ""


@dataclass(frozen=True)
class EtWorkload:
    """A trace of `ranks` NPUs: rank 0's nodes (every rank's are the same, checked) and each
    rank's compute durations."""

    source: str  # the prefix, `<prefix>.<rank>.et`
    nodes: tuple[EtNode, ...]
    duration_us: np.ndarray  # [ranks, nodes], int64
    version: str  # GlobalMetadata.version (or its "schema" attribute)

    @property
    def ranks(self) -> int:
        return int(self.duration_us.shape[0])


def _messages(path: Path) -> list[bytes]:
    """The length-delimited messages of one file (gzipped or not)."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise WorkloadError(f"{path}: cannot read: {e}") from None
    out, pos = [], 0
    while pos < len(raw):
        size, shift, start = 0, 0, pos
        while True:
            if pos >= len(raw) or shift > 63:
                raise WorkloadError(
                    f"{path}: message {len(out)}: its length (a varint at byte {start}) is cut off"
                )
            b = raw[pos]
            pos += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if pos + size > len(raw):
            raise WorkloadError(
                f"{path}: message {len(out)} at byte {start}: {size} bytes announced, "
                f"{len(raw) - pos} left in the file (truncated?)"
            )
        out.append(raw[pos : pos + size])
        pos += size
    return out


def _attr_int(a: pb.AttributeProto, where: str) -> int:
    which = a.WhichOneof("value")
    if which not in _INT_FIELDS:
        raise WorkloadError(f"{where}: attribute {a.name!r} must be an integer, not {which}")
    v = int(getattr(a, which))
    if v < 0:
        raise WorkloadError(f"{where}: attribute {a.name!r} must be >= 0, not {v}")
    return v


def _node(n: pb.Node, index: int, where: str, pos_of: dict[int, int]) -> tuple[EtNode, int]:
    """(the node, its duration in us), its dependencies as positions."""
    type_name = pb.NodeType.Name(n.type) if n.type in pb.NodeType.values() else str(n.type)
    if n.type == pb.INVALID_NODE or type_name == str(n.type):
        raise WorkloadError(f"{where}: node type {type_name} is not a node Astra-Sim runs")
    deps = []
    for d in [*n.data_deps, *n.ctrl_deps]:
        if d not in pos_of:
            raise WorkloadError(f"{where}: depends on node {d}, which the file does not hold")
        deps.append(pos_of[d])
    attrs: dict[str, pb.AttributeProto] = {}
    for a in n.attr:
        if a.name in attrs:
            raise WorkloadError(f"{where}: attribute {a.name!r} given twice")
        attrs[a.name] = a
    comm, dims, cpu, pg = None, None, False, ""
    if "is_cpu_op" in attrs:
        if attrs["is_cpu_op"].WhichOneof("value") != "bool_val":
            raise WorkloadError(f"{where}: attribute 'is_cpu_op' must be a bool")
        cpu = attrs["is_cpu_op"].bool_val
    if "pg_name" in attrs:
        pg = attrs["pg_name"].string_val
    if n.type == pb.COMM_COLL_NODE:
        for need in ("comm_type", "comm_size"):
            if need not in attrs:
                raise WorkloadError(f"{where}: a collective without its {need!r} attribute")
        kind = _attr_int(attrs["comm_type"], where)
        if kind not in COLLECTIVES:
            raise WorkloadError(f"{where}: comm_type {kind} is not a CollectiveCommType")
        size = _attr_int(attrs["comm_size"], where)
        if size == 0 and kind != pb.BARRIER:
            raise WorkloadError(f"{where}: a {COLLECTIVES[kind]} of 0 bytes")
        comm = Comm(COLLECTIVES[kind], size)  # type: ignore[arg-type]
        if "involved_dim" in attrs:
            a = attrs["involved_dim"]
            if a.WhichOneof("value") != "bool_list":
                raise WorkloadError(f"{where}: attribute 'involved_dim' must be a bool list")
            dims = tuple(bool(v) for v in a.bool_list.values)
    node = EtNode(index, n.id, n.name, type_name, tuple(deps), comm, dims, cpu, pg)
    return node, int(n.duration_micros)


def _rank(path: Path) -> tuple[str, list[EtNode], list[int]]:
    msgs = _messages(path)
    if not msgs:
        raise WorkloadError(f"{path}: empty (a trace starts with its GlobalMetadata)")
    meta = pb.GlobalMetadata()
    try:
        meta.ParseFromString(msgs[0])
    except DecodeError as e:
        raise WorkloadError(f"{path}: message 0 is not Chakra's GlobalMetadata: {e}") from None
    version = meta.version or next((a.string_val for a in meta.attr if a.name == "schema"), "")
    nodes: list[EtNode] = []
    durations: list[int] = []
    pos_of: dict[int, int] = {}
    parsed = []
    for k, m in enumerate(msgs[1:]):
        n = pb.Node()
        try:
            n.ParseFromString(m)
        except DecodeError as e:
            raise WorkloadError(f"{path}: message {k + 1} is not a Chakra Node: {e}") from None
        if n.id in pos_of:
            raise WorkloadError(
                f"{path}: node {n.id} ({n.name!r}) appears twice (messages "
                f"{pos_of[n.id] + 1} and {k + 1})"
            )
        pos_of[n.id] = k
        parsed.append(n)
    for k, n in enumerate(parsed):
        node, us = _node(n, k, f"{path}: node {n.id} ({n.name!r})", pos_of)
        nodes.append(node)
        durations.append(us)
    if not nodes:
        raise WorkloadError(f"{path}: no nodes after the GlobalMetadata")
    _check_acyclic(nodes, path)
    return version, nodes, durations


def _check_acyclic(nodes: list[EtNode], path: Path) -> None:
    indeg = [len(n.deps) for n in nodes]
    succ: list[list[int]] = [[] for _ in nodes]
    for n in nodes:
        for d in n.deps:
            succ[d].append(n.index)
    ready = [i for i, d in enumerate(indeg) if d == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if seen < len(nodes):
        stuck = next(n for n in nodes if indeg[n.index] > 0)
        raise WorkloadError(
            f"{path}: the dependencies form a cycle (node {stuck.id} ({stuck.name!r}) waits on it)"
        )


def rank_files(prefix: Path) -> list[Path]:
    """`<prefix>.0.et`, `<prefix>.1.et`, ...: every rank's file, none missing."""
    pat = re.compile(re.escape(prefix.name) + r"\.(\d+)\.et$")
    found = {}
    if prefix.parent.is_dir():
        for p in prefix.parent.iterdir():
            m = pat.match(p.name)
            if m:
                found[int(m.group(1))] = p
    if not found:
        raise WorkloadError(
            f"{prefix}: no trace files ({prefix.name}.0.et, {prefix.name}.1.et, ...)"
        )
    missing = sorted(set(range(max(found) + 1)) - set(found))
    if missing:
        raise WorkloadError(
            f"{prefix}: ranks 0-{max(found)} found but not {', '.join(map(str, missing))}"
        )
    return [found[r] for r in range(len(found))]


def et_prefix(path: str | Path) -> Path:
    """A trace named by its prefix or by one of its files (`x.3.et` -> `x`)."""
    p = Path(path)
    m = re.match(r"(.+)\.\d+\.et$", p.name)
    return p.with_name(m.group(1)) if m else p


def is_et(path: str | Path) -> bool:
    """Whether `path` names a Chakra trace (a `.et` file, or a prefix with a `.0.et` file)."""
    p = Path(path)
    return p.name.endswith(".et") or p.with_name(p.name + ".0.et").exists()


def _same(a: EtNode, b: EtNode) -> bool:
    """The same node of the graph (names carry nothing the run uses, and may name the rank)."""
    return (a.type, a.deps, a.comm, a.involved_dim, a.is_cpu_op, a.pg_name) == (
        b.type,
        b.deps,
        b.comm,
        b.involved_dim,
        b.is_cpu_op,
        b.pg_name,
    )


def read_et(path: str | Path) -> EtWorkload:
    """Every rank's file of the trace `path` (a prefix or one of its files)."""
    prefix = et_prefix(path)
    files = rank_files(prefix)
    version, nodes, dur0 = _rank(files[0])
    durations = [dur0]
    for f in files[1:]:
        _, other, dur = _rank(f)
        if len(other) != len(nodes):
            raise WorkloadError(
                f"{f}: {len(other)} nodes, rank 0 has {len(nodes)}: this simulator runs traces "
                f"whose ranks run the same graph (SPMD)"
            )
        for a, b in zip(nodes, other, strict=True):
            if not _same(a, b):
                raise WorkloadError(
                    f"{f}: node {b.id} ({b.name!r}, position {b.index}) is not rank 0's node "
                    f"{a.id} ({a.name!r}): this simulator runs traces whose ranks run the same "
                    f"graph (SPMD)"
                )
        durations.append(dur)
    return EtWorkload(str(prefix), tuple(nodes), np.asarray(durations, dtype=np.int64), version)
