"""The fabric simulator's workload and fabric builders (evaluation/fabric/collectives.py,
ecmp.py, topology.py, bound.py): Astra-Sim's collectives as a start DAG, ns-3's ECMP, the
fabric options and the link-load bound."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric.bound import link_load_bound_us
from evaluation.fabric.collectives import build_sends, chunk_phases, lockstep_bound_us
from evaluation.fabric.config import FabricConfig, MiB
from evaluation.fabric.ecmp import CONTROL_SPORT, NS3_SPORT_BASE, ns3_hash, ns3_hash_many, ns3_ip
from evaluation.fabric.flow_table import flow_slots
from evaluation.fabric.sim import pfc_free_buffer, simulate
from evaluation.fabric.topology import (
    Dag,
    Fabric,
    Workload,
    build_fabric,
    build_workload,
    ns3_paths,
    ns3_paths_many,
)
from symphony.model.ecmp import next_hop
from symphony.model.switch_model import flow_slot

TWO_D = FabricConfig(topology="2d")  # Table 1: 32 nodes, 8 x 4
SMALL_2D = FabricConfig(hosts=16, topology="2d", chunk_bytes=16 << 10)  # 4 x 4


def workload(cfg: FabricConfig, seed: int = 0) -> tuple[Fabric, Workload]:
    fab = build_fabric(cfg)
    return fab, build_workload(cfg, fab, np.random.default_rng(seed))


def topological_order(wl: Workload) -> list[int]:
    """Kahn's algorithm from the root flows; every flow must come out exactly once."""
    wait = wl.dag.npred.copy()
    ready = [int(f) for f in np.nonzero(wait == 0)[0]]
    order = []
    while ready:
        f = ready.pop()
        order.append(f)
        for e in range(wl.dag.succ_ptr[f], wl.dag.succ_ptr[f + 1]):
            nxt = int(wl.dag.succ_idx[e])
            wait[nxt] -= 1
            if wait[nxt] == 0:
                ready.append(nxt)
    return order


def test_2d_phases_follow_ring_cc() -> None:
    # S = chunk x nodes = 256 MiB per NPU; RS over 8 sends S/8 seven times, AR over 4 sends
    # (S/8)/4 six times, AG over 8 sends the gathered S/8 seven times, anticlockwise.
    rs, ar, ag = chunk_phases(TWO_D)
    s = 8 * MiB * 32
    assert (rs.kind, rs.dim, rs.direction, rs.steps, rs.msg_bytes) == ("RS", 0, 1, 7, s // 8)
    assert (ar.kind, ar.dim, ar.direction, ar.steps, ar.msg_bytes) == ("AR", 1, 1, 6, s // 32)
    assert (ag.kind, ag.dim, ag.direction, ag.steps, ag.msg_bytes) == ("AG", 0, -1, 7, s // 8)
    assert ag.final_bytes == s
    # chunks divide the collective; 32 x 4 at 128 nodes
    split = chunk_phases(replace(TWO_D, splits=4))
    assert [p.msg_bytes for p in split] == [s // 32, s // 128, s // 32]
    big = chunk_phases(replace(TWO_D, hosts=128))
    assert [(p.kind, p.steps) for p in big] == [("RS", 31), ("AR", 6), ("AG", 31)]
    base = chunk_phases(replace(TWO_D, phases="baseline"))
    assert [(p.kind, p.dim, p.steps, p.msg_bytes) for p in base] == [
        ("AR", 0, 14, s // 8),
        ("AR", 1, 6, s // 4),
    ]


def test_2d_flows_per_phase_and_packets() -> None:
    cfg = replace(TWO_D, splits=2, passes=3)
    _, wl = workload(cfg)
    per_phase = Counter(wl.f_phase.tolist())
    assert per_phase == {0: 32 * 7 * 2 * 3, 1: 32 * 6 * 2 * 3, 2: 32 * 7 * 2 * 3}
    for q, ph in enumerate(wl.phases):
        assert set(wl.f_npk[wl.f_phase == q].tolist()) == {-(-ph.msg_bytes // cfg.mtu)}
    # every NPU sends the same, and the lockstep bound is its NIC's time for it
    sent = np.bincount(wl.f_src, weights=wl.f_npk)
    assert set(sent.tolist()) == {sent[0]}
    ser_us = cfg.mtu * 8 / (cfg.link_gbps * 1000)
    assert lockstep_bound_us(cfg) == pytest.approx(sent[0] * ser_us)


@pytest.mark.parametrize(
    "cfg",
    [
        FabricConfig(passes=3),
        replace(TWO_D, splits=4, active_chunks=1, passes=2),
        replace(TWO_D, splits=4, active_chunks=2),
        replace(TWO_D, splits=3, active_chunks=8, phases="baseline"),
        replace(SMALL_2D, dims=(2, 8), splits=2),
    ],
    ids=["rings-passes", "2d-a1", "2d-a2", "2d-baseline", "2d-2x8"],
)
def test_dag_is_acyclic_and_reaches_every_flow(cfg: FabricConfig) -> None:
    _, wl = workload(cfg)
    assert sorted(topological_order(wl)) == list(range(wl.f_src.shape[0]))
    roots = wl.f_start_ps >= 0
    assert np.array_equal(roots, wl.dag.npred == 0)
    # the roots are each NPU's first min(splits, active chunks) chunks' first step
    assert roots.sum() == cfg.hosts * min(cfg.splits, cfg.active_chunks)
    assert set(wl.f_phase[roots].tolist()) == {0} and set(wl.f_pass[roots].tolist()) == {0}


def test_rings_without_passes_are_the_first_versions_chain() -> None:
    cfg = FabricConfig()
    _, wl = workload(cfg)
    n = cfg.ring_size
    assert wl.dag.succ_idx.shape[0] == cfg.rings * n * (cfg.steps - 1)
    assert np.array_equal(wl.f_step, np.tile(np.arange(cfg.steps), cfg.rings * n))


def test_active_chunks_bound_each_queue() -> None:
    # with one slot per dimension, chunk c's reduce-scatter waits for chunk c-1's to finish
    # at that NPU: it has chunk c-1's last RS message from its predecessor among predecessors
    cfg = replace(TWO_D, splits=3, active_chunks=1)
    _, wl = workload(cfg)
    for h in (0, 13):
        first = np.nonzero((wl.f_src == h) & (wl.f_phase == 0) & (wl.f_chunk == 1))[0].min()
        preds = [
            f
            for f in range(wl.f_src.shape[0])
            for e in range(wl.dag.succ_ptr[f], wl.dag.succ_ptr[f + 1])
            if wl.dag.succ_idx[e] == first
        ]
        assert {(int(wl.f_chunk[f]), int(wl.f_phase[f])) for f in preds} == {(0, 0)}
        assert {int(wl.f_dst[f]) for f in preds} == {h}
        assert len(preds) == 7  # all seven RS messages of chunk 0


def test_dim0_flows_stay_in_their_tor_and_dim1_flows_cross_the_spine() -> None:
    fab, wl = workload(TWO_D)
    dim = np.array([ph.dim for ph in wl.phases])[wl.f_phase]
    tor = fab.tor_of
    assert (tor[wl.f_src[dim == 0]] == tor[wl.f_dst[dim == 0]]).all()
    assert (wl.f_plen[dim == 0] == 2).all()  # NIC, ToR downlink
    assert (tor[wl.f_src[dim == 1]] != tor[wl.f_dst[dim == 1]]).all()
    assert (wl.f_plen[dim == 1] == 4).all()  # NIC, ToR up, spine down, ToR down
    # all-gather runs the dim-0 ring the other way round
    rs, ag = wl.f_phase == 0, wl.f_phase == 2
    assert ((wl.f_dst[rs] - wl.f_src[rs]) % 8 == 1).all()
    assert ((wl.f_dst[ag] - wl.f_src[ag]) % 8 == 7).all()


@pytest.mark.parametrize("cfg", [FabricConfig(passes=3), replace(TWO_D, passes=3, splits=2)])
def test_passes_continue_the_step_index(cfg: FabricConfig) -> None:
    _, wl = workload(cfg)
    per_pass = wl.n_steps // cfg.passes
    first = wl.f_pass == 0
    for p in range(cfg.passes):
        sel = wl.f_pass == p
        assert np.array_equal(wl.f_step[sel] - p * per_pass, wl.f_step[first])
    assert set(wl.f_step.tolist()) == set(range(wl.n_steps))


def test_ns3_hash_is_murmur3_as_switch_node_cc() -> None:
    # values of SwitchNode::EcmpHash compiled from astra-network-ns3's switch-node.cc
    assert (ns3_ip(0), ns3_ip(1), ns3_ip(256)) == (0x0B000001, 0x0B000101, 0x0B010001)
    assert ns3_hash((0x0B000001, 0x0B000101, 10000 | 100 << 16), 32) == 3107777773
    assert ns3_hash((0x0B000701, 0x0B000F01, 10005 | 100 << 16), 36) == 2459077827
    assert ns3_hash((0x0B001F01, 0x0B000001, 100 | 10003 << 16), 40) == 95357633
    assert ns3_hash((0x0B010001, 0x0B01FF01, 65535 | 100 << 16), 600) == 869945479


@pytest.mark.parametrize("cfg", [FabricConfig(), replace(TWO_D, splits=2), FabricConfig(passes=2)])
def test_ns3_ecmp_gives_the_same_paths_on_every_seed(cfg: FabricConfig) -> None:
    ns3 = replace(cfg, ecmp="ns3")
    paths = [workload(ns3, s)[1] for s in range(3)]
    for wl in paths[1:]:
        assert np.array_equal(wl.f_path, paths[0].f_path)
        assert np.array_equal(wl.f_rpath, paths[0].f_rpath)
    # source ports count up from 10000 per host pair, one per send
    wl = paths[0]
    for pair in {(int(a), int(b)) for a, b in zip(wl.f_src[:50], wl.f_dst[:50], strict=True)}:
        sel = (wl.f_src == pair[0]) & (wl.f_dst == pair[1])
        assert sorted(wl.f_sport[sel].tolist()) == list(
            range(NS3_SPORT_BASE, NS3_SPORT_BASE + sel.sum())
        )
    salted = [workload(cfg, s)[1].f_path for s in range(3)]
    assert not all(np.array_equal(p, salted[0]) for p in salted[1:])


def test_switch_ecmp_takes_the_uplink_the_data_planes_hash_picks() -> None:
    """ecmp "switch": each flow leaves its ToR on the uplink model/ecmp.py's next_hop picks
    among the ToR's uplinks (sorted as the controller sorts a group's ports), the step in the
    source port, RoCE's destination port: the bmv2 fabric's paths."""
    addrs = tuple(0x0A000000 | (h // 4) << 8 | (h % 4 + 1) for h in range(8))
    cfg = FabricConfig(hosts=8, tors=2, spines=2, rings=2, ecmp="switch", host_addrs=addrs)
    fab, wl = workload(cfg)
    uplinks: set[int] = set()
    for f in range(wl.f_src.shape[0]):
        src, dst = int(wl.f_src[f]), int(wl.f_dst[f])
        if int(fab.tor_of[src]) == int(fab.tor_of[dst]):
            continue
        ups = fab.next_hops(int(fab.tor_of[src]), dst)
        want = next_hop(ups, addrs[src], addrs[dst], 17, int(wl.f_sport[f]), 4791)
        assert int(wl.f_path[f, 1]) == want
        uplinks.add(want)
    assert len(uplinks) == 4  # both uplinks of both ToRs carry some step
    assert np.array_equal(workload(cfg, 1)[1].f_path, wl.f_path)  # the same on every seed


def test_switch_acks_hash_their_own_header() -> None:
    """ecmp "switch": an ACK or CNP is a frame of its own to the bmv2 switches, hashed on its own
    5-tuple (receiver -> sender, the hosts' CONTROL_SPORT), so it leaves the receiver's ToR on the
    uplink next_hop picks for that header, which need not be the spine its data crossed."""
    addrs = tuple(0x0A000000 | (h // 4) << 8 | (h % 4 + 1) for h in range(8))
    cfg = FabricConfig(hosts=8, tors=2, spines=2, rings=2, ecmp="switch", host_addrs=addrs)
    fab, wl = workload(cfg)
    other_spine = 0
    for f in np.nonzero(wl.f_plen == 4)[0]:
        src, dst = int(wl.f_src[f]), int(wl.f_dst[f])
        ups = fab.next_hops(int(fab.tor_of[dst]), src)
        assert int(wl.f_rpath[f, 1]) == next_hop(
            ups, addrs[dst], addrs[src], 17, CONTROL_SPORT, 4791
        )
        data_back = fab.reverse_path(wl.f_path[f], 4)
        other_spine += int(wl.f_rpath[f, 1]) != int(data_back[1])
    assert other_spine > 0  # the data's links back would be the wrong model of the fabric
    assert (wl.f_rpath[:, 0] == wl.f_dst).all()  # the receiver's NIC first


def test_ns3_acks_hash_their_own_header() -> None:
    fab, wl = workload(replace(FabricConfig(), ecmp="ns3"))
    cross = wl.f_plen == 4
    assert (wl.f_rplen == wl.f_plen).all()
    back = np.array([fab.reverse_path(wl.f_path[f], 4) for f in np.nonzero(cross)[0]])
    same = (back == wl.f_rpath[cross, :4]).all(axis=1)
    assert 0 < same.sum() < cross.sum()  # ACKs pick their own spine, not the data's
    assert (wl.f_rpath[:, 0] == wl.f_dst).all()  # the receiver's NIC first


def valid_updown(fab: Fabric, path: list[int], src: int, dst: int, tier: np.ndarray) -> None:
    assert path[0] == src and fab.port_to_host[path[-1]] == dst
    for a, b in pairwise(path):
        assert fab.port_to_switch[a] == fab.port_switch[b]  # b leaves where a arrives
    tiers = [int(tier[fab.port_switch[p]]) for p in path[1:]]
    top = tiers.index(max(tiers))
    assert tiers[: top + 1] == sorted(tiers[: top + 1])  # up...
    assert tiers[top:] == sorted(tiers[top:], reverse=True)  # ...then down


def tiers(cfg: FabricConfig, fab: Fabric) -> np.ndarray:
    t = np.zeros(fab.n_switches, dtype=np.int64)
    t[cfg.n_tors :] = 1
    t[cfg.n_tors + cfg.n_pods * cfg.spines :] = 2
    return t


@pytest.mark.parametrize("hosts", [256, 512])
def test_multipod_paths_are_up_down(hosts: int) -> None:
    cfg = replace(FabricConfig(hosts=hosts, fabric="multipod", ecmp="ns3"), chunk_bytes=1 << 20)
    fab, wl = workload(cfg)
    assert cfg.n_pods == hosts // 128 and cfg.n_cores == cfg.n_pods  # Table 1: 2 / 4 cores
    tier = tiers(cfg, fab)
    for f in range(0, wl.f_src.shape[0], 7):
        a, b = int(wl.f_src[f]), int(wl.f_dst[f])
        valid_updown(fab, wl.f_path[f, : wl.f_plen[f]].tolist(), a, b, tier)
        valid_updown(fab, wl.f_rpath[f, : wl.f_rplen[f]].tolist(), b, a, tier)
    pod = fab.tor_of // cfg.tors
    inter = pod[wl.f_src] != pod[wl.f_dst]
    assert inter.any() and (wl.f_plen[inter] == 6).all()
    # rates: hosts at 10 G, non-blocking pods, the core layer oversubscribed 2:1
    pod_gbps = cfg.link_gbps * hosts / cfg.n_pods
    core_gbps = cfg.spines * cfg.n_cores * cfg.core_gbps
    assert core_gbps == pytest.approx(pod_gbps / cfg.oversub)
    assert cfg.uplink_gbps * cfg.spines == cfg.link_gbps * cfg.hosts_per_tor


def test_pfc_headroom_counts_every_switchs_ingress_ports() -> None:
    cfg = FabricConfig()
    free = pfc_free_buffer(cfg, build_fabric(cfg))
    hdrm = cfg.headroom_pkts
    assert (free[:4] == cfg.switch_buffer_pkts - (8 + 4) * hdrm).all()  # hosts and spines
    assert (free[4:] == cfg.switch_buffer_pkts - 4 * hdrm).all()  # the ToRs
    mp = FabricConfig(hosts=256, fabric="multipod")
    free = pfc_free_buffer(mp, build_fabric(mp))
    assert free[8] == mp.switch_buffer_pkts - (4 + 2) * hdrm  # an agg: its ToRs and the cores
    assert free[-1] == mp.switch_buffer_pkts - 8 * hdrm  # a core: every agg


SMALL_MULTIPOD = FabricConfig(
    hosts=16, fabric="multipod", pods=2, tors=2, spines=2, chunk_bytes=16 << 10
)


@pytest.mark.parametrize(
    "cfg",
    [
        replace(SMALL_MULTIPOD, ecmp="ns3"),
        replace(SMALL_MULTIPOD, topology="2d", splits=2, active_chunks=2),
        replace(SMALL_2D, ecmp="ns3", passes=2, splits=2, mode="symphony"),
        replace(SMALL_2D, fabric="nonblocking", mode="pq"),
    ],
    ids=["multipod-rings", "multipod-2d", "2d-passes-symphony", "2d-nonblocking-pq"],
)
def test_small_runs_deliver_every_flow_within_the_bound(cfg: FabricConfig) -> None:
    res = simulate(cfg, 1)
    fab, wl = workload(cfg, 1)
    st = res.stats
    assert st["error"] == 0 and st["dropped"] == 0
    assert st["delivered"] == int(wl.f_npk.sum())
    assert (res.flow_done_us >= 0).all()
    assert res.bound_us == pytest.approx(link_load_bound_us(fab, wl))
    assert lockstep_bound_us(cfg) <= res.bound_us <= res.cct_max_us


def test_bound_is_lockstep_for_static_balanced_routing() -> None:
    for cfg in (FabricConfig(routing="static"), FabricConfig(routing="static", hosts=128)):
        fab, wl = workload(cfg)
        assert link_load_bound_us(fab, wl) == pytest.approx(lockstep_bound_us(cfg))


def test_default_bound_matches_the_issue() -> None:
    # issue 20: seeds 0-3 of the first version's default (salted ECMP) need 121-134 ms
    cfg = FabricConfig()
    bounds = [link_load_bound_us(*workload(cfg, s)) / 1000 for s in range(4)]
    assert all(120 < b < 135 for b in bounds)
    assert all(b > lockstep_bound_us(cfg) / 1000 for b in bounds)


def test_sport_step_index_is_the_per_pair_counter() -> None:
    sends = build_sends(replace(TWO_D, splits=2))
    _, wl = workload(replace(TWO_D, splits=2, step_index="sport"))
    assert np.array_equal(wl.f_step, sends.pair_seq)
    # the all-gather starts its own pair's count at 0, as ns-3's ports would
    assert wl.f_step[(wl.f_phase == 2) & (wl.f_chunk == 0)].min() == 0


# -- the workload's per-flow work done on arrays: equal to the per-flow definitions ---------------


@pytest.mark.parametrize(
    "cfg",
    [
        replace(FabricConfig(hosts=128, tors=32, spines=4), ecmp="ns3"),
        replace(FabricConfig(hosts=512, fabric="multipod", ecmp="ns3"), chunk_bytes=1 << 20),
    ],
    ids=["two-tier-128", "multipod-512"],
)
def test_ns3_paths_of_many_flows_are_each_flows_ns3_paths(cfg: FabricConfig) -> None:
    fab = build_fabric(cfg)
    rng = np.random.default_rng(11)
    src = rng.integers(0, cfg.hosts, 3000)
    dst = (src + rng.integers(1, cfg.hosts, 3000)) % cfg.hosts
    sport = rng.integers(0, 1 << 17, 3000)  # ns-3 keeps the low 16 bits
    path, plen, rpath, rplen = ns3_paths_many(fab, src, dst, sport)
    for f in range(3000):
        data, ack = ns3_paths(fab, int(src[f]), int(dst[f]), int(sport[f]))
        assert path[f, : plen[f]].tolist() == data and (path[f, plen[f] :] == -1).all()
        assert rpath[f, : rplen[f]].tolist() == ack


def test_ns3_hash_of_many_keys_is_each_keys_hash() -> None:
    rng = np.random.default_rng(12)
    words = tuple(rng.integers(0, 1 << 32, 2000) for _ in range(3))
    seed = rng.integers(0, 1 << 32, 2000)
    many = ns3_hash_many(words, seed)
    for k in range(2000):
        assert int(many[k]) == ns3_hash(tuple(int(w[k]) for w in words), int(seed[k]))


def test_flow_slots_of_many_flows_are_the_switch_models() -> None:
    rng = np.random.default_rng(13)
    src = rng.integers(0, 1 << 32, 3000)
    dqpn = rng.integers(0, 1 << 24, 3000)
    slot, sig = flow_slots(src, dqpn)
    for k in range(3000):
        assert (int(slot[k]), int(sig[k])) == flow_slot(int(src[k]), int(dqpn[k]))


@pytest.mark.parametrize("jitter", [1, 1001])
def test_one_draw_of_many_bounds_is_the_draws_one_by_one(jitter: int) -> None:
    """sends_workload draws every flow's PSN and start jitter in one call with an array of
    bounds; a seed gives the run it gave when it drew them one by one only because numpy draws
    such an array element by element: held here, so that a numpy that changes it fails."""
    kinds = np.random.default_rng(14).integers(0, 3, 20000)
    bounds = np.concatenate([[[1 << 24], [jitter], [1 << 24, jitter]][k] for k in kinds])
    a, b = np.random.default_rng(100), np.random.default_rng(100)
    one_by_one = [int(a.integers(0, int(x))) for x in bounds]
    assert b.integers(0, bounds).tolist() == one_by_one
    assert a.integers(0, 1 << 40) == b.integers(0, 1 << 40)  # and the state after them


def test_dag_edges_given_twice_count_once() -> None:
    edges = np.array([[0, 2], [1, 2], [0, 2], [2, 3], [1, 2], [0, 1]])
    dag = Dag.of(4, edges)
    assert dag.npred.tolist() == [0, 1, 2, 1]
    assert dag.succ_ptr.tolist() == [0, 2, 3, 4, 4] and dag.succ_idx.tolist() == [1, 2, 2, 3]
    assert Dag.of(4, np.zeros((0, 2), dtype=np.int64)).npred.tolist() == [0, 0, 0, 0]
