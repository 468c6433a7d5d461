"""The collective as Astra-Sim's system layer runs it: which NPU sends how many bytes to whom,
and what each send waits for (docs/evaluation.md cites the source lines).

A *send* is one `front_end_sim_send` of a ring algorithm: (NPU, pass, chunk, phase, step). Its
start dependencies, all "fully delivered" conditions, form a DAG:

- step s > 0 of a phase waits for step s - 1 of the same chunk and phase from the NPU's ring
  predecessor (Ring::run: a received message inserts the next packet; Ring::ready sends it);
- step 0 of a phase waits until the NPU has *finished* the previous phase of that chunk:
  received every message of it from its predecessor (Ring::iteratable exits when stream_count
  is 0 and the last packet came back; sends are fire-and-forget);
- a phase takes one of `active_chunks` slots of its dimension's queue (one queue per dimension,
  the ns-3 frontend's default): the k-th entry of a queue starts when entry k - active_chunks
  finished (SchedulerUnit::notify_stream_removed inits the next waiting stream). Entries are in
  the static order (phase, chunk): all chunks enter their first phase at once
  (Sys::generate_collective, then Sys::schedule) and a later phase joins the tail of its queue
  (Sys::insert_stream, FIFO among equal priorities). Exact for active_chunks = 1; with more,
  Astra-Sim gives a slot to whichever running chunk finishes first, we to the one `active_chunks`
  places earlier;
- pass p + 1 starts on an NPU when that NPU finished pass p (every chunk's last phase), as
  Astra-Sim 1.0's data-parallel workload waits for a layer's weight-gradient collective
  (Workload::iterate_data_parallel, is_weight_grad_comm_finished_blocking).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evaluation.fabric.config import FabricConfig

Kind = Literal["RS", "AR", "AG"]
CLOCKWISE, ANTICLOCKWISE = 1, -1


@dataclass(frozen=True)
class RingPhase:
    """One phase of one chunk: Ring.cc on one dimension (its constructor's numbers)."""

    kind: Kind
    dim: int
    direction: int  # CLOCKWISE: send to the next ring member; ANTICLOCKWISE: to the previous
    steps: int  # stream_count: the sends of one NPU
    msg_bytes: int  # msg_size of each send
    final_bytes: int  # final_data_size: the next phase's data_size


def ring_phase(kind: Kind, dim: int, direction: int, n: int, data_size: int) -> RingPhase:
    """Ring::Ring for `n` members: All_Reduce 2(n-1) sends of data/n; Reduce_Scatter n-1 of
    data/n, leaving data/n; All_Gather n-1 of data (the gathered piece), leaving data x n."""
    if kind == "AR":
        return RingPhase(kind, dim, direction, 2 * (n - 1), data_size // n, data_size)
    if kind == "RS":
        return RingPhase(kind, dim, direction, n - 1, data_size // n, data_size // n)
    return RingPhase(kind, dim, direction, n - 1, data_size, data_size * n)


def chunk_phases(cfg: FabricConfig) -> list[RingPhase]:
    """The phases of one chunk (Sys::generate_collective with Ascending inter-dimension
    scheduling). localBWAware (every Astra-Sim example config): reduce-scatter on dims 0..D-2,
    all-reduce on the last, all-gather back down; the first and last phases take their queue's
    first half (get_next_queue_id_first: Clockwise), the all-gathers the second half
    (get_next_queue_id_last: Anticlockwise). baseline: an all-reduce of the whole chunk per
    dimension (get_next_queue_id: Clockwise with one queue per dimension)."""
    if cfg.topology == "rings":
        n = cfg.ring_size
        return [ring_phase("AR", 0, CLOCKWISE, n, cfg.chunk_bytes * n // cfg.splits)]
    n0, n1 = cfg.dim_sizes
    size = cfg.collective_bytes // cfg.splits  # Sys::determine_chunk_size
    if cfg.phases == "baseline":
        first = ring_phase("AR", 0, CLOCKWISE, n0, size)
        return [first, ring_phase("AR", 1, CLOCKWISE, n1, first.final_bytes)]
    return [ph for ph, _ in collective_phases("ALLREDUCE", size, [n0, n1])]


def collective_phases(kind: str, size: int, ns: Sequence[int]) -> list[tuple[RingPhase, int]]:
    """Ring phases of one chunk of `size` bytes over dims of `ns` members, with the index of
    each phase's dim, localBWAware (Sys::generate_collective, Ascending): an all-reduce is
    reduce-scatters on dims 0..D-2, an all-reduce on the last, all-gathers back down, the
    all-gathers anticlockwise; a reduce-scatter or all-gather of S bytes (S the gathered
    output) runs one such phase per dim. `chunk_phases` (the scenarios' collective) and
    `training` (any collective of a workload) both build their phases here."""
    out: list[tuple[RingPhase, int]] = []
    last = len(ns) - 1
    if kind == "ALLREDUCE":
        data = size
        for d in range(last):
            ph = ring_phase("RS", d, CLOCKWISE, ns[d], data)
            out.append((ph, d))
            data = ph.final_bytes
        ph = ring_phase("AR", last, CLOCKWISE, ns[last], data)
        out.append((ph, last))
        data = ph.final_bytes
        for d in range(last - 1, -1, -1):
            ph = ring_phase("AG", d, ANTICLOCKWISE, ns[d], data)
            out.append((ph, d))
            data = ph.final_bytes
    elif kind == "REDUCESCATTER":
        data = size
        for d in range(len(ns)):
            ph = ring_phase("RS", d, CLOCKWISE, ns[d], data)
            out.append((ph, d))
            data = ph.final_bytes
    elif kind == "ALLGATHER":
        data = max(1, size // int(np.prod(ns)))
        for d in range(len(ns)):
            ph = ring_phase("AG", d, CLOCKWISE, ns[d], data)
            out.append((ph, d))
            data = ph.final_bytes
    else:
        raise ValueError(f"{kind} collectives are not run by this simulator (ring only)")
    return out


def ring_hosts(cfg: FabricConfig) -> np.ndarray:
    """ "rings": R rings of N = H/R members; ring r's member j sits on ToR j // (N/T), local
    index r*(N/T) + j % (N/T): consecutive members share a ToR N/T at a time, every ring
    crosses the spine layer T times, and with static routing (ring r on spine r) every uplink
    carries one ring (the paper's Fig. 1a)."""
    t = cfg.n_tors
    n, per = cfg.ring_size, cfg.ring_size // t
    hpt = cfg.hosts_per_tor
    out = np.zeros((cfg.rings, n), dtype=np.int64)
    for r in range(cfg.rings):
        for j in range(n):
            out[r, j] = (j // per) * hpt + r * per + j % per
    assert len(set(out.ravel().tolist())) == cfg.hosts
    return out


def dim_rings(cfg: FabricConfig, dim: int) -> np.ndarray:
    """ "2d": [ring, member] -> host for one dimension. Astra-Sim's NPU i is ns-3 node i (our
    host i); GeneralComplexTopology gives dim 0 rings of N0 consecutive NPUs and dim 1 rings of
    stride N0 (RingTopology offset), so with N0 = hosts per ToR dim-0 rings stay in a ToR and
    dim-1 rings cross the spine."""
    n0, n1 = cfg.dim_sizes
    ids = np.arange(cfg.hosts, dtype=np.int64).reshape(n1, n0)
    return ids if dim == 0 else ids.T.copy()


@dataclass
class Sends:
    """One entry per send, in flow-id order, and the start DAG's edges."""

    src: np.ndarray
    dst: np.ndarray
    job: np.ndarray
    ring: np.ndarray  # logical ring id ("2d": dim-0 rings first, then dim-1 rings)
    pass_: np.ndarray
    chunk: np.ndarray
    phase: np.ndarray
    step: np.ndarray  # within its phase
    msg_bytes: np.ndarray
    collective_step: np.ndarray  # pass x steps per chunk + the phase's offset + step
    pair_seq: np.ndarray  # how many sends its (src, dst) pair issued before it
    root: np.ndarray  # bool: starts at the job's start (no predecessor)
    edges: list[tuple[int, int]] | np.ndarray  # (pred, succ) pairs, or [edge, 2] (training)
    phases: list[RingPhase]


def packets_per_npu(cfg: FabricConfig) -> int:
    """MTU packets every NPU sends over all passes (all NPUs send the same)."""
    per_chunk = sum(ph.steps * cfg.packets(ph.msg_bytes) for ph in chunk_phases(cfg))
    return per_chunk * cfg.splits * cfg.passes


def lockstep_bound_us(cfg: FabricConfig) -> float:
    """Every NPU's sends back to back at its NIC's line rate, all passes: for a 1D ring
    2(N-1) chunks, i.e. 2(N-1)/N x S/B with S = N x chunk."""
    return packets_per_npu(cfg) * cfg.mtu * 8 / (cfg.link_gbps * 1000)


def build_sends(cfg: FabricConfig) -> Sends:
    phases = chunk_phases(cfg)
    k_chunks, slots, passes = cfg.splits, cfg.active_chunks, cfg.passes
    if cfg.topology == "rings":
        groups = [ring_hosts(cfg)] * len(phases)
        nodes = groups[0].ravel().tolist()  # flow ids ring by ring, member by member
        rings_per_job = cfg.rings // cfg.jobs
        job_of = {int(h): r // rings_per_job + 1 for r, row in enumerate(groups[0]) for h in row}
        ring_base = [0] * len(phases)
    else:
        by_dim = [dim_rings(cfg, 0), dim_rings(cfg, 1)]
        groups = [by_dim[ph.dim] for ph in phases]
        nodes = list(range(cfg.hosts))
        job_of = dict.fromkeys(nodes, 1)
        ring_base = [0 if ph.dim == 0 else by_dim[0].shape[0] for ph in phases]
    # per phase: host -> (ring, position)
    where = []
    for g in groups:
        w = {}
        for r, row in enumerate(g):
            for j, h in enumerate(row):
                w[int(h)] = (r, j)
        where.append(w)

    def peer(q: int, host: int, sign: int) -> int:
        r, j = where[q][host]
        row = groups[q][r]
        return int(row[(j + sign * phases[q].direction) % len(row)])

    # each queue (dimension) in the static order (phase, chunk)
    queue = {
        d: [(q, c) for q, ph in enumerate(phases) if ph.dim == d for c in range(k_chunks)]
        for d in {ph.dim for ph in phases}
    }
    place = {(q, c): (phases[q].dim, i) for d, es in queue.items() for i, (q, c) in enumerate(es)}
    offset = np.cumsum([0] + [ph.steps for ph in phases]).tolist()
    per_pass = offset[-1]

    fid: dict[tuple[int, int, int, int, int], int] = {}
    for h in nodes:
        for p in range(passes):
            for c in range(k_chunks):
                for q, ph in enumerate(phases):
                    for s in range(ph.steps):
                        fid[h, p, c, q, s] = len(fid)
    nf = len(fid)
    col = {k: np.zeros(nf, dtype=np.int64) for k in ("src", "dst", "job", "ring", "p", "c", "q")}
    col.update({k: np.zeros(nf, dtype=np.int64) for k in ("s", "bytes", "cstep", "seq")})
    root = np.zeros(nf, dtype=bool)
    edges: list[tuple[int, int]] = []

    def finished(h: int, p: int, c: int, q: int) -> list[int]:
        """The sends whose delivery completes phase q of chunk c at host h."""
        pred = peer(q, h, -1)
        return [fid[pred, p, c, q, s] for s in range(phases[q].steps)]

    for (h, p, c, q, s), f in fid.items():
        ph = phases[q]
        col["src"][f], col["dst"][f], col["job"][f] = h, peer(q, h, +1), job_of[h]
        col["ring"][f] = ring_base[q] + where[q][h][0]
        col["p"][f], col["c"][f], col["q"][f], col["s"][f] = p, c, q, s
        col["bytes"][f], col["cstep"][f] = ph.msg_bytes, p * per_pass + offset[q] + s
        if s > 0:
            edges.append((fid[peer(q, h, -1), p, c, q, s - 1], f))
            continue
        if q > 0:
            edges += [(e, f) for e in finished(h, p, c, q - 1)]
        elif p > 0:
            last = len(phases) - 1
            edges += [(e, f) for c2 in range(k_chunks) for e in finished(h, p - 1, c2, last)]
        d, i = place[q, c]
        if i >= slots:
            q2, c2 = queue[d][i - slots]
            edges += [(e, f) for e in finished(h, p, c2, q2)]
        root[f] = p == 0 and q == 0 and i < slots

    # Astra-Sim's ns-3 send_flow: port = portNumber[src][dst]++, in the order the NPU issues
    # its sends to that peer: pass, phase (a queue serves all first phases before a later one),
    # chunk, step.
    pair = col["src"] * cfg.hosts + col["dst"]
    order = np.lexsort((col["s"], col["c"], col["q"], col["p"], pair))
    first = np.r_[True, np.diff(pair[order]) != 0]
    group_start = np.maximum.accumulate(np.where(first, np.arange(nf), 0))
    col["seq"][order] = np.arange(nf) - group_start
    return Sends(
        src=col["src"],
        dst=col["dst"],
        job=col["job"],
        ring=col["ring"],
        pass_=col["p"],
        chunk=col["c"],
        phase=col["q"],
        step=col["s"],
        msg_bytes=col["bytes"],
        collective_step=col["cstep"],
        pair_seq=col["seq"],
        root=root,
        edges=edges,
        phases=phases,
    )
