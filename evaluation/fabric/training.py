"""A training iteration in the simulator: a workload file's layers (`workload_text`) as compute
nodes on every NPU and collectives on the fabric, with Astra-Sim 1.0's workload-layer rules
(Workload.cc; docs/training.md cites them), run by the kernel like any collective.

Per NPU, each layer's compute is a node of the kernel's DAG that holds no packets and is done
its duration after it starts (`Flows.delay`); a collective is the same ring sends
`collectives.build_sends` makes (Ring.cc phases, `preferred-dataset-splits` chunks, a queue of
`active_chunks` slots per logical dimension), its first sends waiting for the node that issues
it, and a zero-length *join* node per NPU is "this NPU finished the collective" (its last phase
received), which the nodes that wait for the collective wait for.

- DATA (iterate_data_parallel): forward layer 0..L-1, each after the previous and, from the
  second pass on, after its own weight-gradient all-reduce of the pass before and the layer's
  update delay; then backward from L-1: weight-gradient compute, its all-reduce over every
  dimension issued non-blocking, input-gradient compute (not for layer 0), the next layer down.
- HYBRID_TRANSFORMER (iterate_hybrid_parallel_Transformer): as DATA, but the forward and
  input-gradient collectives run on the model-parallel group (the first `model_parallel_NPU_group`
  NPUs of dimension 0, Astra-Sim's break_dimension) and block; backward is input-gradient
  compute and collective, then weight-gradient compute and its collective over the data-parallel
  dimensions (non-blocking), for every layer.
- MICRO (iterate_micro_benchmark): every layer's weight-gradient collective, every pass, issued
  at the start; a single all-reduce is `build_sends`' workload exactly (tested).

The iteration ends when every NPU's last node is done: the job's completion time is the JCT.
Collectives enter a dimension's queue in the order they are issued (every NPU issues them in
the same order, so the queue is static): Astra-Sim's scheduling policy (LIFO, FIFO) reorders
only collectives waiting for a slot at once, which this model does not do; docs/training.md.
"""

from __future__ import annotations

import argparse
import heapq
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from evaluation.fabric.collectives import (
    RingPhase,
    Sends,
    collective_phases,
    dim_rings,
    ring_hosts,
)
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.sim import simulate
from evaluation.fabric.topology import Fabric, Workload, sends_workload
from evaluation.fabric.workload_chakra import EtWorkload, is_et, read_et
from evaluation.fabric.workload_text import Comm, TextWorkload, WorkloadError, read_text

PS_PER_NS = 1000
# bump when the iteration's rules change what a run gives (training_eval's store keys carry it)
TRAINING_VERSION = 1
RUN_PARALLELISMS = ("DATA", "HYBRID_TRANSFORMER", "MICRO")
COMPUTE_BASE = _BIG = 1 << 40  # compute nodes' provisional ids start here (sends' below);
# compute node x is flow n_sends + (x - COMPUTE_BASE) of the run


@dataclass(frozen=True)
class Scales:
    """Astra-Sim's `--compute-scale` and `--comm-scale`: compute times and collective sizes are
    multiplied by them (Fig. 6 divides compute by 1-64: compute 1/64). `cycle_ns`: one compute
    cycle (Astra-Sim's tick, 1 ns in its ns-3 frontend)."""

    compute: float = 1.0
    comm: float = 1.0
    cycle_ns: float = 1.0


def logical_dims(cfg: FabricConfig, mp_group: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(model-parallel dims, data-parallel dims), each a list of [ring, member] -> host arrays.
    "2d": dims (N0, N1) as `collectives.dim_rings`; a model-parallel group of m NPUs takes
    m consecutive NPUs of dim 0 and leaves dim 0's stride-m rings and dim 1 to data
    parallelism (Sys::break_dimension). "rings" with one ring: that ring is the only dim."""
    if cfg.topology == "rings":
        if cfg.rings != 1:
            raise WorkloadError("a training workload runs on one logical topology: rings=1 or 2d")
        dims = [ring_hosts(cfg)]
        n0, n1 = cfg.hosts, 1
    else:
        dims = [dim_rings(cfg, 0), dim_rings(cfg, 1)]
        n0, n1 = cfg.dim_sizes
    if mp_group <= 1:
        return [], dims
    if n0 % mp_group or mp_group > n0:
        raise WorkloadError(
            f"model_parallel_NPU_group {mp_group} must divide dimension 0 ({n0} NPUs)"
        )
    ids = np.arange(cfg.hosts, dtype=np.int64).reshape(n1, n0)
    if cfg.topology == "rings":
        ids = dims[0].reshape(1, n0)
    model = ids.reshape(-1, mp_group)
    rest = n0 // mp_group
    data = []
    if rest > 1:
        data.append(ids.reshape(n1, rest, mp_group).transpose(0, 2, 1).reshape(-1, rest))
    if n1 > 1:
        data.append(ids.T.copy())
    return [model], data


@dataclass
class _Block:
    """One phase of one chunk of one collective: ids[h, s] the send of NPU h at step s."""

    ids: np.ndarray
    src: np.ndarray  # [H] = arange
    dst: np.ndarray
    pred: np.ndarray  # [H] the NPU each one receives from
    ring: np.ndarray  # [H] global ring id
    phase: int  # global phase index
    coll: int
    chunk: int
    q: int
    cstep0: int
    msg_bytes: int
    job: int
    pred_local: np.ndarray  # [m] the row of ids each member receives from


@dataclass
class IterationGraph:
    """The DAG of jobs' iterations before it becomes flows (`sends`). Nodes are made for the
    current job (`use_job`: its Job_ID and its NPUs, all hosts by default): arrays of node ids
    are per member NPU, in the order of `members`."""

    hosts: int
    slots: int
    splits: int
    scales: Scales
    # gate every send on its NPU's phase start (Astra-Sim); collectives.build_sends gates only
    # step 0, so False builds its DAG exactly (tested)
    gate_steps: bool = True
    blocks: list[_Block] = field(default_factory=list)
    phases: list[RingPhase] = field(default_factory=list)
    n_sends: int = 0
    dur_ps: list[np.ndarray] = field(default_factory=list)  # per compute batch, [H]
    edges: list[np.ndarray] = field(default_factory=list)  # [k, 2] provisional ids
    roots: list[np.ndarray] = field(default_factory=list)  # provisional ids of root sends
    n_compute: int = 0
    queues: dict[int, list[_Block]] = field(default_factory=dict)  # per dim key, in order
    ring_base: dict[int, int] = field(default_factory=dict)
    n_rings: int = 0
    comm_free_ps: dict[int, np.ndarray] = field(default_factory=dict)  # node batch -> [m] t
    collectives: list[dict] = field(default_factory=list)
    compute_npus: list[np.ndarray] = field(default_factory=list)  # per compute batch
    compute_job: list[int] = field(default_factory=list)
    job: int = 1
    members: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    local: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    csteps: dict[int, int] = field(default_factory=dict)  # per job: its next collective step

    def __post_init__(self) -> None:
        self.use_job(1, np.arange(self.hosts, dtype=np.int64))

    def use_job(self, job: int, members: np.ndarray) -> None:
        """Make the nodes that follow for Job_ID `job` on NPUs `members` (host ids)."""
        self.job, self.members = job, np.asarray(members, dtype=np.int64)
        self.local = np.full(self.hosts, -1, dtype=np.int64)
        self.local[self.members] = np.arange(self.members.shape[0])

    # -- compute ------------------------------------------------------------------------------
    def compute(
        self,
        cycles: float | np.ndarray,
        deps: Sequence[np.ndarray],
        unit_ns: float | None = None,
    ) -> np.ndarray:
        """A compute node on every member NPU after `deps` (arrays of [m] node ids), `cycles`
        long (one number, or one per member) in units of `unit_ns` (a cycle: `cycle_ns`)."""
        h = self.members.shape[0]
        ids = _BIG + self.n_compute + np.arange(h, dtype=np.int64)
        self.n_compute += h
        unit = self.scales.cycle_ns if unit_ns is None else unit_ns
        x = np.broadcast_to(np.asarray(cycles, dtype=np.float64), (h,))
        dur = np.rint(x * self.scales.compute * unit * PS_PER_NS).astype(np.int64)
        self.dur_ps.append(dur)
        self.compute_npus.append(self.members)
        self.compute_job.append(self.job)
        t0 = np.zeros(h, dtype=np.int64)
        for d in deps:
            self.edges.append(np.stack([d, ids], axis=1))
            t0 = np.maximum(t0, self._t(d))
        self.comm_free_ps[int(ids[0])] = t0 + dur
        return ids

    def _t(self, ids: np.ndarray) -> np.ndarray:
        return self.comm_free_ps[int(ids[0])]

    # -- collectives -------------------------------------------------------------------------
    def collective(
        self, comm: Comm, dims: list[np.ndarray], keys: list[int], issuer: np.ndarray | None
    ) -> np.ndarray:
        """Every member NPU's part of `comm` over `dims` (rings of host ids covering the
        members; queue keys `keys`), issued by `issuer` ([m] node ids; None: at the start).
        Returns the [m] join nodes (the NPU finished it)."""
        size = max(1, round(comm.size_bytes * self.scales.comm))
        chunk = max(1, size // self.splits)
        phases = collective_phases(comm.kind, chunk, [d.shape[1] for d in dims])
        c = len(self.collectives)
        m, members, local = self.members.shape[0], self.members, self.local
        keys = [(self.job, k) for k in keys]  # an NPU's queues; jobs share no NPU
        cstep = self.csteps.get(self.job, 0)
        where = []
        for d, key in zip(dims, keys, strict=True):
            if key not in self.ring_base:
                self.ring_base[key] = self.n_rings
                self.n_rings += d.shape[0]
            ring_of = np.empty(self.hosts, dtype=np.int64)
            pos = np.empty(self.hosts, dtype=np.int64)
            for r, row in enumerate(d):
                ring_of[row] = r
                pos[row] = np.arange(row.shape[0])
            where.append((ring_of, pos))
        # phase-major, as Astra-Sim's queues see them: every chunk enters its first phase at
        # once, a later phase joins its queue's tail (collectives.build_sends)
        offset = 0
        chunk_last: list[_Block | None] = [None] * self.splits
        for q, (ph, di) in enumerate(phases):
            d, key = dims[di], keys[di]
            ring_of, pos = where[di]
            n = d.shape[1]
            r_m, p_m = ring_of[members], pos[members]
            nxt = d[r_m, (p_m + ph.direction) % n]
            pred = d[r_m, (p_m - ph.direction) % n]
            pred_local = local[pred]
            self.phases.append(ph)
            queue = self.queues.setdefault(key, [])
            for k in range(self.splits):
                ids = self.n_sends + np.arange(m * ph.steps, dtype=np.int64).reshape(m, ph.steps)
                self.n_sends += m * ph.steps
                blk = _Block(
                    ids=ids,
                    src=members,
                    dst=nxt,
                    pred=pred,
                    ring=self.ring_base[key] + ring_of[members],
                    phase=len(self.phases) - 1,
                    coll=c,
                    chunk=k,
                    q=q,
                    cstep0=cstep + offset,
                    msg_bytes=max(1, ph.msg_bytes),
                    job=self.job,
                    pred_local=pred_local,
                )
                if ph.steps > 1:  # step s after the predecessor's step s - 1
                    self.edges.append(
                        np.stack([ids[pred_local, :-1].ravel(), ids[:, 1:].ravel()], 1)
                    )
                first = ids[:, 0]
                if self.gate_steps:
                    # NPU h's phase starts at a zero-length node; all its sends of the phase
                    # wait for it (a message that arrives before h runs the phase waits in
                    # h's receive queue: Ring::run sends on receipt, in a running stream)
                    gate = self.compute(0, [])
                    self.edges.append(np.stack([np.repeat(gate, ph.steps), ids.ravel()], 1))
                    first = gate
                before = chunk_last[k]
                if before is not None:  # the NPU finished the chunk's previous phase
                    self._after_finish(before, first)
                elif issuer is not None:
                    self.edges.append(np.stack([issuer, first], axis=1))
                    if self.gate_steps:
                        self.comm_free_ps[int(gate[0])] = self._t(issuer)
                slot_free = len(queue) < self.slots
                if not slot_free:  # a slot of the dimension's queue
                    self._after_finish(queue[len(queue) - self.slots], first)
                queue.append(blk)
                if before is None and issuer is None and slot_free and not self.gate_steps:
                    self.roots.append(first)
                self.blocks.append(blk)
                chunk_last[k] = blk
            offset += ph.steps
        last_blocks = chunk_last
        self.csteps[self.job] = cstep + offset
        join = self.compute(0, [])
        for blk in last_blocks:
            self._after_finish(blk, join)
        t_issue = np.zeros(m, dtype=np.int64) if issuer is None else self._t(issuer)
        self.comm_free_ps[int(join[0])] = t_issue
        self.collectives.append({"kind": comm.kind, "bytes": size, "dims": len(dims)})
        return join

    def _after_finish(self, blk: _Block, succ: np.ndarray) -> None:
        """succ[i] waits until member i received every send of `blk` (from blk.pred[i])."""
        got = blk.ids[blk.pred_local]  # [m, steps]
        self.edges.append(np.stack([got.ravel(), np.repeat(succ, got.shape[1])], axis=1))

    # -- flows -------------------------------------------------------------------------------
    def sends(self) -> tuple[Sends, np.ndarray]:
        """The graph as `Sends` (sends host-major as `build_sends` orders them, then compute
        nodes) and each flow's compute duration."""
        cols = {
            k: []
            for k in (
                "src",
                "dst",
                "ring",
                "coll",
                "chunk",
                "q",
                "s",
                "phase",
                "bytes",
                "cstep",
                "prov",
                "job",
            )
        }
        for b in self.blocks:
            h, steps = b.ids.shape
            s = np.tile(np.arange(steps), h)
            cols["src"].append(np.repeat(b.src, steps))
            cols["dst"].append(np.repeat(b.dst, steps))
            cols["ring"].append(np.repeat(b.ring, steps))
            for k, v in (
                ("coll", b.coll),
                ("chunk", b.chunk),
                ("q", b.q),
                ("phase", b.phase),
                ("bytes", b.msg_bytes),
                ("job", b.job),
            ):
                cols[k].append(np.full(h * steps, v, dtype=np.int64))
            cols["s"].append(s)
            cols["cstep"].append(b.cstep0 + s)
            cols["prov"].append(b.ids.ravel())
        a = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in cols.items()}
        ns, nc = self.n_sends, self.n_compute
        # host-major, then collective, chunk, phase, step: build_sends' flow order
        order = np.lexsort((a["s"], a["q"], a["chunk"], a["coll"], a["src"]))
        a = {k: v[order] for k, v in a.items()}
        final = np.empty(ns, dtype=np.int64)
        final[a["prov"]] = np.arange(ns)

        def fid(x: np.ndarray) -> np.ndarray:
            return np.where(x >= _BIG, ns + (x - _BIG), final[np.minimum(x, ns - 1)])

        edges = np.concatenate(self.edges) if self.edges else np.zeros((0, 2), dtype=np.int64)
        edges = fid(edges)
        root = np.zeros(ns + nc, dtype=bool)
        if self.roots:
            root[fid(np.concatenate(self.roots))] = True
        has_pred = np.zeros(ns + nc, dtype=bool)
        has_pred[edges[:, 1]] = True
        root[ns:] = ~has_pred[ns:]  # compute nodes with nothing before them start the job
        npu = np.concatenate(self.compute_npus) if nc else np.zeros(0, dtype=np.int64)
        cjob = (
            np.concatenate(
                [
                    np.full(b.shape[0], j)
                    for b, j in zip(self.compute_npus, self.compute_job, strict=True)
                ]
            )
            if nc
            else np.zeros(0, np.int64)
        )
        pair = a["src"] * self.hosts + a["dst"]
        seq = np.zeros(ns, dtype=np.int64)
        o2 = np.lexsort((a["s"], a["chunk"], a["q"], a["coll"], pair))
        firsts = np.r_[True, np.diff(pair[o2]) != 0]
        start = np.maximum.accumulate(np.where(firsts, np.arange(ns), 0))
        seq[o2] = np.arange(ns) - start
        zeros_c = np.zeros(nc, dtype=np.int64)
        sends = Sends(
            src=np.r_[a["src"], npu],
            dst=np.r_[a["dst"], npu],
            job=np.r_[a["job"], cjob].astype(np.int64),
            ring=np.r_[a["ring"], zeros_c],
            pass_=np.r_[a["coll"], zeros_c],
            chunk=np.r_[a["chunk"], zeros_c],
            phase=np.r_[a["phase"], zeros_c],
            step=np.r_[a["s"], zeros_c],
            msg_bytes=np.r_[a["bytes"], zeros_c],
            collective_step=np.r_[a["cstep"], zeros_c],
            pair_seq=np.r_[seq, zeros_c],
            root=root,
            edges=edges,
            phases=self.phases,
        )
        dur = np.concatenate([np.zeros(ns, dtype=np.int64), *self.dur_ps])
        return sends, dur.astype(np.int64)

    @property
    def comm_free_end_ps(self) -> int:
        """The iteration with an infinitely fast network: the longest compute chain."""
        return int(max((int(t.max()) for t in self.comm_free_ps.values()), default=0))


def iteration_graph(
    wl: TextWorkload | EtWorkload,
    cfg: FabricConfig,
    scales: Scales = Scales(),
    gate_steps: bool = True,
) -> IterationGraph:
    """The DAG of `cfg.passes` training passes of `wl` on `cfg`'s NPUs (a Chakra trace: the
    passes it holds)."""
    if isinstance(wl, EtWorkload):
        return et_iteration_graph(wl, cfg, scales, gate_steps)
    if wl.parallelism not in RUN_PARALLELISMS:
        raise WorkloadError(
            f"{wl.source}: parallelism {wl.parallelism} is read but not run by this simulator "
            f"(it runs {', '.join(RUN_PARALLELISMS)})"
        )
    for layer in wl.layers:
        for c in (layer.fwd, layer.ig, layer.wg):
            if c.kind == "ALLTOALL":
                raise WorkloadError(
                    f"{wl.source}:{layer.line}: ALLTOALL is not run by this simulator (rings only)"
                )
    model, data = logical_dims(cfg, wl.model_parallel_group)
    g = IterationGraph(cfg.hosts, cfg.active_chunks, cfg.splits, scales, gate_steps)
    mkeys = [100 + i for i in range(len(model))]
    dkeys = list(range(len(data)))
    every, every_keys = (model + data, mkeys + dkeys) if model else (data, dkeys)
    passes = cfg.passes
    if wl.parallelism == "MICRO":
        for _ in range(passes):
            for layer in wl.layers:
                if not layer.wg.none:
                    g.collective(layer.wg, every, every_keys, None)
        return g
    layers = wl.layers
    n = len(layers)
    upd: list[np.ndarray | None] = [None] * n
    prev: np.ndarray | None = None
    for p in range(passes):
        last_pass = p == passes - 1
        for i, layer in enumerate(layers):
            deps = [d for d in (prev, upd[i]) if d is not None]
            prev = g.compute(layer.fwd_cycles, deps)
            if wl.parallelism == "HYBRID_TRANSFORMER" and not layer.fwd.none:
                prev = g.collective(layer.fwd, model, mkeys, prev)
        for i in range(n - 1, -1, -1):
            layer = layers[i]
            if wl.parallelism == "HYBRID_TRANSFORMER":
                prev = g.compute(layer.ig_cycles, [prev])
                if not layer.ig.none:
                    prev = g.collective(layer.ig, model, mkeys, prev)
                wg = g.compute(layer.wg_cycles, [prev])
                wg_dims, wg_keys = data, dkeys
            else:
                wg = g.compute(layer.wg_cycles, [prev])
                wg_dims, wg_keys = every, every_keys
            upd[i] = None
            if not layer.wg.none and wg_dims:
                done = g.collective(layer.wg, wg_dims, wg_keys, wg)
                if not last_pass:
                    upd[i] = g.compute(layer.update_cycles, [done])
            prev = wg
            if wl.parallelism == "DATA" and i > 0:
                prev = g.compute(layer.ig_cycles, [wg])
    return g


# the collectives a Chakra trace may hold that the simulator runs (ring collectives; BROADCAST
# as Astra-Sim 2 runs it: its duration_micros on the NPU's collective resource)
ET_RUN_COLLECTIVES = ("ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "BROADCAST")


def et_iteration_graph(
    et: EtWorkload, cfg: FabricConfig, scales: Scales = Scales(), gate_steps: bool = True
) -> IterationGraph:
    """The DAG of a Chakra trace on `cfg`'s NPUs (rank r on host r), by Astra-Sim 2's workload
    layer: a node is issued when its dependencies are done and its NPU's resource is free (one
    GPU compute, one CPU op and one collective in flight per NPU, HardwareResource.cc), the
    lowest id first among those ready. The order is fixed here from the dependencies (lowest
    id first, as Astra-Sim issues nodes that are ready at once); Astra-Sim fixes it as nodes
    become ready, which differs only where two nodes of one resource are on separate branches
    (docs/training.md)."""
    where = et.source
    if et.ranks != cfg.hosts:
        raise WorkloadError(
            f"{where}: a trace of {et.ranks} NPUs runs on {et.ranks} hosts, not {cfg.hosts}"
        )
    if cfg.passes != 1:
        raise WorkloadError(f"{where}: a trace holds its own passes (passes must be 1)")
    _, dims = logical_dims(cfg)
    g = IterationGraph(cfg.hosts, cfg.active_chunks, cfg.splits, scales, gate_steps)
    nodes = et.nodes
    waiting = [len(n.deps) for n in nodes]
    succ: list[list[int]] = [[] for _ in nodes]
    for n in nodes:
        for d in n.deps:
            succ[d].append(n.index)
    ready = [(n.id, n.index) for n in nodes if not n.deps]
    heapq.heapify(ready)
    done: list[np.ndarray | None] = [None] * len(nodes)
    last: dict[str, np.ndarray] = {}  # per resource: the node that holds it before
    while ready:
        _, i = heapq.heappop(ready)
        n = nodes[i]
        here = f"{where}: node {n.id} ({n.name!r})"
        deps = [d for d in (done[k] for k in n.deps) if d is not None]
        if n.type == "METADATA_NODE":
            done[i] = g.compute(0, deps)
        elif n.type == "COMP_NODE":
            res = "cpu" if n.is_cpu_op else "gpu"
            us = et.duration_us[:, i].astype(np.float64)
            us[us == 0] = 1e-3  # Astra-Sim: a runtime of 0 is 1 ns
            held = [last[res]] if res in last else []
            done[i] = last[res] = g.compute(us, deps + held, 1000.0)
        elif n.type == "COMM_COLL_NODE":
            assert n.comm is not None
            if n.comm.kind not in ET_RUN_COLLECTIVES:
                raise WorkloadError(
                    f"{here}: {n.comm.kind} is not run by this simulator "
                    f"(it runs {', '.join(ET_RUN_COLLECTIVES)})"
                )
            if n.is_cpu_op:
                raise WorkloadError(f"{here}: a collective on the CPU (Astra-Sim refuses it)")
            if n.pg_name:
                raise WorkloadError(
                    f"{here}: process group {n.pg_name!r}: groups are not run by this "
                    f"simulator (collectives span the dimensions involved_dim selects)"
                )
            involved = n.involved_dim if n.involved_dim is not None else (True,) * len(dims)
            if len(involved) < len(dims) or any(involved[len(dims) :]):
                raise WorkloadError(
                    f"{here}: involved_dim {list(involved)} does not fit the fabric's "
                    f"{len(dims)} dimensions"
                )
            keys = [k for k in range(len(dims)) if involved[k]]
            deps += [last["comm"]] if "comm" in last else []
            issuer = g.compute(0, deps) if deps else None
            if n.comm.kind == "BROADCAST" or not keys:  # no dimension: done when issued
                us = et.duration_us[:, i] if n.comm.kind == "BROADCAST" else 0
                done[i] = g.compute(us, [] if issuer is None else [issuer], 1000.0)
            else:
                done[i] = g.collective(n.comm, [dims[k] for k in keys], keys, issuer)
            last["comm"] = done[i]
        else:
            raise WorkloadError(
                f"{here}: {n.type} is read but not run by this simulator (it runs COMP_NODE, "
                f"COMM_COLL_NODE, METADATA_NODE)"
            )
        for j in succ[i]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, (nodes[j].id, j))
    return g


def read_workload(path: str | Path) -> TextWorkload | EtWorkload:
    """A Chakra trace (a `.et` file or the prefix of its files) or an Astra-Sim text file."""
    return read_et(path) if is_et(path) else read_text(path)


def graph_builder(g: IterationGraph):  # type: ignore[no-untyped-def]
    """`simulate(cfg, seed, flows=graph_builder(g))`: the run's workload is the graph `g`."""
    sends, dur = g.sends()

    def build(cfg: FabricConfig, fab: Fabric, rng: np.random.Generator) -> Workload:
        return sends_workload(cfg, fab, rng, sends, delay_ps=dur)

    return build


def training_builder(  # type: ignore[no-untyped-def]
    wl: TextWorkload, scales: Scales = Scales(), gate_steps: bool = True
):
    """`simulate(cfg, seed, flows=training_builder(wl))`: the run's workload is `wl`'s passes."""

    def build(cfg: FabricConfig, fab: Fabric, rng: np.random.Generator) -> Workload:
        return graph_builder(iteration_graph(wl, cfg, scales, gate_steps))(cfg, fab, rng)

    return build


@dataclass(frozen=True)
class IterationResult:
    jct_ms: float  # the iterations, start to the last node
    comm_free_ms: float  # the same with an infinitely fast network (compute alone)
    exposed_comm_ms: float  # jct - comm_free: what the network adds
    sync_ms: float  # first collective send's start to the last one's delivery
    collectives: int
    sends: int
    compute_nodes: int
    stats: dict


def simulate_training(
    wl: TextWorkload | EtWorkload, cfg: FabricConfig, seed: int, scales: Scales = Scales()
) -> IterationResult:
    g = iteration_graph(wl, cfg, scales)
    res = simulate(cfg, seed, flows=graph_builder(g))
    sends = g.n_sends
    begin, done = res.flow_begin_us[:sends], res.flow_done_us[:sends]
    jct = res.cct_us[0] / 1000
    free = g.comm_free_end_ps / 1e9
    return IterationResult(
        jct_ms=jct,
        comm_free_ms=free,
        exposed_comm_ms=jct - free,
        sync_ms=float(done.max() - begin[begin >= 0].min()) / 1000 if sends else 0.0,
        collectives=len(g.collectives),
        sends=sends,
        compute_nodes=g.n_compute,
        stats=res.stats,
    )


def main(argv: Sequence[str] | None = None) -> int:
    from evaluation.fabric.scenarios import PRESETS

    ap = argparse.ArgumentParser(
        prog="python -m evaluation.fabric.training",
        description="Run an Astra-Sim text workload (a training iteration) on the fabric.",
    )
    ap.add_argument(
        "workload",
        type=Path,
        help="Astra-Sim text workload file, or a Chakra trace (a .et file or its files' prefix)",
    )
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--preset", default="table1", choices=sorted(PRESETS))
    ap.add_argument("--passes", type=int, default=1, help="training iterations (TOTAL_PASS)")
    ap.add_argument("--mode", default="baseline", choices=("baseline", "symphony", "pq"))
    ap.add_argument("--compute-scale", type=float, default=1.0)
    ap.add_argument("--comm-scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=100)
    args = ap.parse_args(argv)
    try:
        wl = read_workload(args.workload)
        cfg = replace(PRESETS[args.preset], hosts=args.hosts, passes=args.passes, mode=args.mode)
        r = simulate_training(wl, cfg, args.seed, Scales(args.compute_scale, args.comm_scale))
    except WorkloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    what = (
        f"Chakra trace (schema {wl.version or '?'}), {len(wl.nodes)} nodes a rank"
        if isinstance(wl, EtWorkload)
        else f"{wl.parallelism}, {len(wl.layers)} layers"
    )
    print(
        f"{wl.source}: {what}, {cfg.hosts} NPUs, "
        f"{args.mode}, seed {args.seed}: JCT {r.jct_ms:.3f} ms (compute alone "
        f"{r.comm_free_ms:.3f}, exposed communication {r.exposed_comm_ms:.3f}, collectives "
        f"{r.sync_ms:.3f} ms from first send to last); {r.collectives} collectives, "
        f"{r.sends} sends, {r.compute_nodes} compute nodes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
