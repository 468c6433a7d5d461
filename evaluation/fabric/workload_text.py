"""Astra-Sim's text workload format (ASTRA-sim 1.0's benchmark suite, which the paper's Table 2
and Fig. 6 run: `Resnet50_DataParallel.txt`, `Transformer_HybridParallel.txt`; Astra-Sim 2's
Chakra text converter reads the same files).

    DATA                                          the parallelism (line 1)
    54                                            the number of layers (line 2)
    conv1 -1 13003 NONE 0 12864 NONE 0 32291 ALLREDUCE 37632 3229
    ...

A layer line, whitespace-separated: name, a reserved field, forward compute, forward
communication type and size, input-gradient compute, type and size, weight-gradient compute,
type and size, and the update delay after the weight-gradient collective. Compute is in cycles
(Astra-Sim's tick: 1 ns), sizes in bytes; types NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER,
ALLTOALL (Workload::initialize_workload, Layer). HYBRID_TRANSFORMER's first line also names its
model-parallel group (`model_parallel_NPU_group: 4`); HYBRID_DLRM's names its last bottom layer.

Every departure from the format is refused with the line it is on; nothing is guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

CommKind = Literal["NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL"]
COMM_KINDS: tuple[CommKind, ...] = ("NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL")
# Workload::decode_parallelsim's names
PARALLELISMS = (
    "DATA",
    "HYBRID_TRANSFORMER",
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD",
    "HYBRID_DLRM",
    "HYBRID_DLRM_ENHANCED",
    "MODEL",
    "HYBRID_DATA_MODEL",
    "HYBRID_MODEL_DATA",
    "HYBRID_CUSTOMIZED",
    "MICRO",
    "DISTRIBUTED_INFERENCE",
)
LAYER_FIELDS = 12


class WorkloadError(ValueError):
    """A workload file the format does not allow; the message names the file and line."""


@dataclass(frozen=True)
class Comm:
    kind: CommKind
    size_bytes: int

    @property
    def none(self) -> bool:
        return self.kind == "NONE"


@dataclass(frozen=True)
class Layer:
    name: str
    fwd_cycles: int
    fwd: Comm
    ig_cycles: int
    ig: Comm
    wg_cycles: int
    wg: Comm
    update_cycles: int
    line: int  # where it is in its file (1-based), for messages


@dataclass(frozen=True)
class TextWorkload:
    parallelism: str
    layers: tuple[Layer, ...]
    source: str
    model_parallel_group: int = 0  # HYBRID_TRANSFORMER: NPUs per model-parallel group
    dlrm_last_bottom_layer: int = -1


def _int(tok: str, what: str, where: str) -> int:
    try:
        v = int(tok)
    except ValueError:
        raise WorkloadError(f"{where}: {what} must be an integer, not {tok!r}") from None
    if v < 0:
        raise WorkloadError(f"{where}: {what} must be >= 0, not {v}")
    return v


def _comm(kind: str, size: str, what: str, where: str) -> Comm:
    if kind not in COMM_KINDS:
        raise WorkloadError(
            f"{where}: {what} communication type {kind!r} is not one of {', '.join(COMM_KINDS)}"
        )
    n = _int(size, f"{what} communication size", where)
    if kind == "NONE" and n:
        raise WorkloadError(f"{where}: {what} communication NONE with size {n} (must be 0)")
    if kind != "NONE" and n == 0:
        raise WorkloadError(f"{where}: {what} communication {kind} of 0 bytes")
    return Comm(kind, n)  # type: ignore[arg-type]


def _layer(tokens: list[str], where: str) -> Layer:
    if len(tokens) != LAYER_FIELDS:
        raise WorkloadError(
            f"{where}: a layer has {LAYER_FIELDS} fields (name, reserved, then compute, "
            f"type and size for forward, input gradient and weight gradient, and the update "
            f"delay), this line has {len(tokens)}"
        )
    name = tokens[0]
    return Layer(
        name=name,
        fwd_cycles=_int(tokens[2], "forward compute", where),
        fwd=_comm(tokens[3], tokens[4], "forward", where),
        ig_cycles=_int(tokens[5], "input-gradient compute", where),
        ig=_comm(tokens[6], tokens[7], "input-gradient", where),
        wg_cycles=_int(tokens[8], "weight-gradient compute", where),
        wg=_comm(tokens[9], tokens[10], "weight-gradient", where),
        update_cycles=_int(tokens[11], "update delay", where),
        line=int(where.rsplit(":", 1)[1]),
    )


def parse_text(text: str, source: str = "<text>") -> TextWorkload:
    """The workload of `text`; `source` names it in error messages."""
    lines = [(i + 1, ln.split()) for i, ln in enumerate(text.splitlines())]
    lines = [(i, toks) for i, toks in lines if toks]  # blank lines carry nothing
    if not lines:
        raise WorkloadError(f"{source}: empty workload file")
    (n1, head), rest = lines[0], lines[1:]
    kind = head[0]
    if kind not in PARALLELISMS:
        raise WorkloadError(
            f"{source}:{n1}: parallelism {kind!r} is not one of {', '.join(PARALLELISMS)}"
        )
    mp_group, dlrm_last = 0, -1
    if kind.startswith("HYBRID_TRANSFORMER"):
        if len(head) < 3 or head[1].rstrip(":") != "model_parallel_NPU_group":
            raise WorkloadError(
                f"{source}:{n1}: {kind} needs 'model_parallel_NPU_group: N' on its first line"
            )
        mp_group = _int(head[2], "model_parallel_NPU_group", f"{source}:{n1}")
        if mp_group < 1:
            raise WorkloadError(f"{source}:{n1}: model_parallel_NPU_group must be >= 1")
        if kind == "HYBRID_TRANSFORMER_FWD_IN_BCKWD":
            raise WorkloadError(
                f"{source}:{n1}: {kind} (checkpoint lines) is not read by this simulator"
            )
    elif kind.startswith("HYBRID_DLRM"):
        if len(head) < 2:
            raise WorkloadError(f"{source}:{n1}: {kind} needs its last bottom layer on line 1")
        dlrm_last = _int(head[1], "DLRM last bottom layer", f"{source}:{n1}")
    elif len(head) > 1:
        raise WorkloadError(f"{source}:{n1}: unexpected {' '.join(head[1:])!r} after {kind}")
    if not rest:
        raise WorkloadError(f"{source}: no layer count after line {n1}")
    n2, count_toks = rest[0]
    if len(count_toks) != 1:
        raise WorkloadError(f"{source}:{n2}: line 2 holds the number of layers alone")
    count = _int(count_toks[0], "the number of layers", f"{source}:{n2}")
    body = rest[1:]
    if count < 1 or len(body) != count:
        raise WorkloadError(
            f"{source}:{n2}: declares {count} layers, the file has {len(body)} layer lines"
        )
    layers = tuple(_layer(toks, f"{source}:{i}") for i, toks in body)
    if dlrm_last >= count:
        raise WorkloadError(f"{source}:{n1}: DLRM last bottom layer {dlrm_last} of {count}")
    return TextWorkload(kind, layers, source, mp_group, dlrm_last)


def read_text(path: str | Path) -> TextWorkload:
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise WorkloadError(f"{p}: cannot read: {e}") from None
    return parse_text(text, str(p))
