"""Chakra execution traces (issue 47): Astra-Sim 2's workload input read, refused node by node,
and run by Astra-Sim 2's workload-layer rules (one compute and one collective in flight per
NPU, the lowest id first)."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evaluation.fabric.chakra_schema import et_def_pb2 as pb
from evaluation.fabric.scenarios import TABLE1
from evaluation.fabric.sim import simulate
from evaluation.fabric.training import graph_builder, iteration_graph, main, simulate_training
from evaluation.fabric.workload_chakra import read_et
from evaluation.fabric.workload_text import WorkloadError, parse_text

TRACES = Path(__file__).resolve().parents[1] / "evaluation" / "workloads" / "chakra"
SMALL = replace(TABLE1, hosts=16, chunk_bytes=16 * 1024, start_jitter_ns=0)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _frame(msg: bytes) -> bytes:
    return _varint(len(msg)) + msg


def comp(i: int, us: int, deps: tuple[int, ...] = (), **kw: object) -> pb.Node:
    return pb.Node(id=i, name=f"c{i}", type=pb.COMP_NODE, duration_micros=us, data_deps=deps, **kw)


def coll(
    i: int,
    size: int,
    deps: tuple[int, ...] = (),
    kind: int = pb.ALL_REDUCE,
    extra: tuple[pb.AttributeProto, ...] = (),
) -> pb.Node:
    attrs = [
        pb.AttributeProto(name="comm_type", int64_val=kind),
        pb.AttributeProto(name="comm_size", int64_val=size),
        *extra,
    ]
    return pb.Node(id=i, name=f"x{i}", type=pb.COMM_COLL_NODE, data_deps=deps, attr=attrs)


def write(tmp: Path, ranks: list[list[pb.Node]], name: str = "t") -> Path:
    """One file per rank, as Chakra's converters write them (ids numbered on across ranks)."""
    for r, nodes in enumerate(ranks):
        body = _frame(pb.GlobalMetadata(version="0.0.4").SerializeToString())
        body += b"".join(_frame(n.SerializeToString()) for n in nodes)
        (tmp / f"{name}.{r}.et").write_bytes(body)
    return tmp / name


def spmd(nodes: list[pb.Node], ranks: int) -> list[list[pb.Node]]:
    """The same graph on every rank, ids offset per rank as Chakra's text converter does."""
    out = []
    for r in range(ranks):
        shift = r * 1000
        mine = []
        for n in nodes:
            m = pb.Node()
            m.CopyFrom(n)
            m.id += shift
            del m.data_deps[:]
            m.data_deps.extend(d + shift for d in n.data_deps)
            mine.append(m)
        out.append(mine)
    return out


def test_astra_sims_own_all_reduce_trace_is_the_same_run_as_the_text_all_reduce() -> None:
    """Astra-Sim's example trace (8 NPUs, one 1 MiB all-reduce) is read as written and run as
    the same all-reduce written in the text format: the same iteration to the nanosecond."""
    et = read_et(TRACES / "all_reduce-8npus-1MB" / "all_reduce")
    assert et.ranks == 8 and len(et.nodes) == 1 and et.version == "0.0.4"
    node = et.nodes[0]
    assert node.type == "COMM_COLL_NODE" and node.comm is not None
    assert (node.comm.kind, node.comm.size_bytes) == ("ALLREDUCE", 1 << 20)
    cfg = replace(SMALL, hosts=8, tors=1, topology="rings", rings=1)
    text = parse_text(f"MICRO\n1\nar -1 0 NONE 0 0 NONE 0 0 ALLREDUCE {1 << 20} 0")
    a, b = simulate_training(et, cfg, 5), simulate_training(text, cfg, 5)
    assert a.jct_ms == b.jct_ms and a.sends == b.sends and a.jct_ms > 0


def test_a_trace_is_found_by_its_prefix_or_any_of_its_files_and_may_be_gzipped(
    tmp_path: Path,
) -> None:
    prefix = write(tmp_path, spmd([comp(0, 3), coll(1, 4096, (0,))], 2))
    one = tmp_path / "t.1.et"
    one.write_bytes(gzip.compress(one.read_bytes()))
    for name in (prefix, tmp_path / "t.0.et", one):
        et = read_et(name)
        assert et.ranks == 2 and [n.type for n in et.nodes] == ["COMP_NODE", "COMM_COLL_NODE"]
        assert et.nodes[1].deps == (0,) and et.duration_us.tolist() == [[3, 0], [3, 0]]


@pytest.mark.parametrize(
    ("ranks", "says"),
    [
        (
            [[comp(0, 1), comp(0, 2)]],
            "node 0 ('c0') appears twice",
        ),
        ([[comp(0, 1, (7,))]], "depends on node 7, which the file does not hold"),
        ([[comp(0, 1, (1,)), comp(1, 1, (0,))]], "the dependencies form a cycle"),
        ([[pb.Node(id=0, name="bad", type=pb.INVALID_NODE)]], "INVALID_NODE is not a node"),
        (
            [[pb.Node(id=0, type=pb.COMM_COLL_NODE, attr=[pb.AttributeProto(name="comm_type")])]],
            "a collective without its 'comm_size' attribute",
        ),
        (
            [
                [
                    coll(0, 1, extra=()),
                    pb.Node(
                        id=1,
                        type=pb.COMM_COLL_NODE,
                        attr=[
                            pb.AttributeProto(name="comm_type", int64_val=pb.ALL_REDUCE),
                            pb.AttributeProto(name="comm_size", string_val="1MB"),
                        ],
                    ),
                ]
            ],
            "attribute 'comm_size' must be an integer, not string_val",
        ),
        ([[coll(0, 0)]], "a ALLREDUCE of 0 bytes"),
        ([[coll(0, 64, kind=42)]], "comm_type 42 is not a CollectiveCommType"),
        ([[comp(0, 1)], [comp(5, 1), comp(6, 1)]], "t.1.et: 2 nodes, rank 0 has 1"),
        ([[comp(0, 1), coll(1, 64)], [comp(5, 1), coll(6, 128)]], "is not rank 0's node"),
    ],
)
def test_malformed_traces_are_refused_with_their_file_and_node(
    tmp_path: Path, ranks: list[list[pb.Node]], says: str
) -> None:
    with pytest.raises(WorkloadError, match=_re(says)):
        read_et(write(tmp_path, ranks))


def _re(s: str) -> str:
    return re.escape(s)


def test_broken_files_and_missing_ranks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no trace files"):
        read_et(tmp_path / "none")
    prefix = write(tmp_path, spmd([comp(0, 1)], 3))
    (tmp_path / "t.1.et").unlink()
    with pytest.raises(WorkloadError, match="ranks 0-2 found but not 1"):
        read_et(prefix)
    write(tmp_path, spmd([comp(0, 1)], 3))
    data = (tmp_path / "t.2.et").read_bytes()
    (tmp_path / "t.2.et").write_bytes(data[:-2])
    with pytest.raises(WorkloadError, match=r"t\.2\.et: message 1 .* left in the file"):
        read_et(prefix)
    (tmp_path / "t.2.et").write_bytes(data[:-2] + b"\xff\xff")  # a Node that does not parse
    with pytest.raises(WorkloadError, match=r"t\.2\.et: message 1 is not a Chakra Node"):
        read_et(prefix)
    (tmp_path / "t.2.et").write_bytes(b"")
    with pytest.raises(WorkloadError, match="empty"):
        read_et(prefix)


@pytest.mark.parametrize(
    ("node", "says"),
    [
        (pb.Node(id=1, name="s", type=pb.COMM_SEND_NODE), "COMM_SEND_NODE is read but not run"),
        (pb.Node(id=1, name="m", type=pb.MEM_LOAD_NODE), "MEM_LOAD_NODE is read but not run"),
        (coll(1, 4096, kind=pb.ALL_TO_ALL), "ALLTOALL is not run by this simulator"),
        (
            coll(1, 4096, extra=(pb.AttributeProto(name="pg_name", string_val="3"),)),
            "process group '3'",
        ),
        (
            coll(1, 4096, extra=(pb.AttributeProto(name="is_cpu_op", bool_val=True),)),
            "a collective on the CPU",
        ),
        (
            coll(
                1,
                4096,
                extra=(
                    pb.AttributeProto(
                        name="involved_dim", bool_list=pb.BoolList(values=[True, True, True])
                    ),
                ),
            ),
            "does not fit the fabric's 2 dimensions",
        ),
    ],
)
def test_nodes_the_simulator_does_not_run_are_refused_by_name(
    tmp_path: Path, node: pb.Node, says: str
) -> None:
    et = read_et(write(tmp_path, spmd([comp(0, 1), node], SMALL.hosts)))
    with pytest.raises(WorkloadError, match=_re(says)):
        iteration_graph(et, SMALL)


def test_a_trace_runs_on_as_many_hosts_as_it_has_ranks(tmp_path: Path) -> None:
    et = read_et(write(tmp_path, spmd([comp(0, 1)], 4)))
    with pytest.raises(WorkloadError, match="a trace of 4 NPUs runs on 4 hosts, not 16"):
        iteration_graph(et, SMALL)


def test_one_compute_and_one_collective_at_a_time_per_npu(tmp_path: Path) -> None:
    """Astra-Sim 2's HardwareResource: two compute nodes with no dependency between them run
    one after the other (the lower id first), and so do two collectives; compute (in
    microseconds) and a collective overlap. Per-rank durations: the slowest rank's chain.
    (Queues of 8 slots, so that nothing but the rule keeps the collectives apart.)"""
    cfg = replace(SMALL, active_chunks=8)
    nodes = [comp(0, 30), comp(1, 50), coll(2, 65536), coll(3, 65536)]
    ranks = spmd(nodes, cfg.hosts)
    ranks[5][1].duration_micros = 80  # rank 5's second compute is slower
    et = read_et(write(tmp_path, ranks))
    g = iteration_graph(et, cfg)
    assert g.comm_free_end_ps == (30 + 80) * 10**6
    r = simulate_training(et, cfg, 1)
    sends = g.sends()[0]
    ns = g.n_sends
    coll_of, src = np.asarray(sends.pass_[:ns]), sends.src[:ns]
    first, second = coll_of == 0, coll_of == 1
    res = simulate(cfg, 1, flows=graph_builder(g))
    assert res.cct_us[0] / 1000 == pytest.approx(r.jct_ms)
    begin, done = res.flow_begin_us[:ns], res.flow_done_us[:ns]
    assert begin[first].min() == pytest.approx(0.0, abs=1e-3)  # issued at once, no deps
    for h in range(cfg.hosts):  # h starts the second when it has finished the first
        got_first = done[first & (sends.dst[:ns] == h)].max()
        assert begin[second & (src == h)].min() >= got_first - 1e-9


def test_involved_dim_picks_the_dimensions_a_collective_runs_on(tmp_path: Path) -> None:
    dim0 = pb.AttributeProto(name="involved_dim", bool_list=pb.BoolList(values=[True, False]))
    et = read_et(write(tmp_path, spmd([coll(0, 65536, extra=(dim0,))], SMALL.hosts)))
    g = iteration_graph(et, SMALL)
    sends = g.sends()[0]
    n0 = SMALL.dim_sizes[0]
    src, dst = sends.src[: g.n_sends], sends.dst[: g.n_sends]
    assert g.n_sends > 0 and ((src // n0) == (dst // n0)).all()  # dim-0 rings only


def test_the_command_line_runs_a_trace_and_refuses_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = write(tmp_path, spmd([comp(0, 3), coll(1, 65536, (0,))], 16))
    assert main([str(prefix), "--hosts", "16", "--seed", "1"]) == 0
    assert "Chakra trace (schema 0.0.4), 2 nodes a rank" in capsys.readouterr().out
    assert main([str(tmp_path / "t.0.et"), "--hosts", "8"]) == 2
    assert "runs on 16 hosts, not 8" in capsys.readouterr().err


def test_a_broadcast_holds_the_collective_resource_for_its_duration(tmp_path: Path) -> None:
    """BROADCAST as Astra-Sim 2 runs it: its duration_micros on the NPU's collective resource,
    so the all-reduce after it (no dependency between them) waits for it."""
    bcast = coll(0, 4096, kind=pb.BROADCAST)
    bcast.duration_micros = 40
    et = read_et(write(tmp_path, spmd([bcast, coll(1, 65536)], SMALL.hosts)))
    g = iteration_graph(et, SMALL)
    assert g.comm_free_end_ps == 40 * 10**6 and len(g.collectives) == 1
    r = simulate(SMALL, 2, flows=graph_builder(g))
    assert r.flow_begin_us[: g.n_sends].min() >= 40.0
