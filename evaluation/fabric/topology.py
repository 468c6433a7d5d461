"""The fabric and the collective's flows as flat arrays for the event kernel.

Ports (egress, one per link direction), with H hosts, G ToRs (T per pod), Q pods of A spines
(aggs) each and C cores: host NIC h = h; ToR downlink to host h = H + h; ToR g uplink to agg a of
its pod = 2H + g*A + a; agg (q, a) downlink to ToR t of its pod = 2H + G*A + (q*A + a)*T + t;
agg (q, a) uplink to core c = B + (q*A + a)*C + c; core c downlink to agg (q, a) =
B + Q*A*C + c*Q*A + q*A + a, with B = 2H + 2G*A. Switches: ToR g = g, agg (q, a) = G + q*A + a,
core c = G + Q*A + c; the ns-3 node id of switch k is H + k (hosts first, as in Astra-Sim's
topology files). One pod without cores is the two-tier leaf-spine of the first version, port
for port.

Routing is ns-3's (common.h CalculateRoute): shortest paths, next hops of a switch towards a
host in the order of their node ids, one chosen per hop by ECMP (`ecmp.py`). Each send of the
collective (`collectives.py`) is its own flow: its own QP, its own source port, so ECMP hashes
it onto its own path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from evaluation.fabric.collectives import (
    Sends,
    build_sends,
    dim_rings,
    lockstep_bound_us,
    ring_hosts,
)
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.ecmp import (
    CONTROL_SPORT,
    NS3_DPORT,
    NS3_SPORT_BASE,
    ROCE_DPORT,
    UDP,
    ecmp_choice,
    host_ip,
    mix64,
    ns3_choice,
    ns3_hash_many,
    ns3_ip,
    ns3_ip_many,
)
from evaluation.fabric.flow_table import flow_slots
from symphony.model.ecmp import bucket_members, ecmp_bucket
from symphony.model.switch_model import flow_slot

# Egress ports on a path, NIC first: NIC, ToR up, agg up, core down, agg down, ToR down.
MAX_HOPS = 6


@dataclass
class Fabric:
    n_ports: int
    n_switches: int
    port_ser_ps: np.ndarray  # serialisation time of one MTU packet
    port_switch: np.ndarray  # switch that owns the port, -1 for NICs
    port_reverse: np.ndarray  # the egress port at the other end of the same link
    tor_of: np.ndarray  # host -> ToR
    port_to_switch: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    port_to_host: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    n_hosts: int = 0
    _dist: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _ports_of: list[list[int]] = field(default_factory=list, repr=False)
    _next: dict[tuple[int, int], list[int]] = field(default_factory=dict, repr=False)

    def reverse_path(self, path: np.ndarray, plen: int) -> list[int]:
        """The egress ports of the way back over the same links (an ACK's path when the
        fabric routes it over the links its data took)."""
        return [int(self.port_reverse[path[i]]) for i in range(plen - 1, -1, -1)]

    def node_id(self, switch: int) -> int:
        """The switch's ns-3 node id: its ECMP seed (SwitchNode: m_ecmpSeed = m_id)."""
        return self.n_hosts + switch

    def _hops_to_tor(self, tor: int) -> np.ndarray:
        """Switch-to-switch hop counts to `tor` (BFS over switches only: hosts do not
        forward, as in CalculateRoute)."""
        if tor not in self._dist:
            if not self._ports_of:
                self._ports_of = [[] for _ in range(self.n_switches)]
                for port in range(self.n_ports):
                    if self.port_switch[port] >= 0:
                        self._ports_of[int(self.port_switch[port])].append(port)
            dist = np.full(self.n_switches, -1, dtype=np.int64)
            dist[tor], frontier = 0, [tor]
            while frontier:
                nxt = []
                for sw in frontier:
                    for port in self._ports_of[sw]:
                        peer = int(self.port_to_switch[port])
                        if peer >= 0 and dist[peer] < 0:
                            dist[peer] = dist[sw] + 1
                            nxt.append(peer)
                frontier = nxt
            self._dist[tor] = dist
        return self._dist[tor]

    def next_hops(self, switch: int, dst: int) -> list[int]:
        """Egress ports of `switch` on a shortest path to host `dst`, ordered by the next
        node's id (ns-3 lists them in BFS order, i.e. by node). Memoised: a training
        workload routes millions of flows over the same few (switch, host) pairs."""
        hit = self._next.get((switch, dst))
        if hit is None:
            hit = self._next[switch, dst] = self._next_hops(switch, dst)
        return hit

    def _next_hops(self, switch: int, dst: int) -> list[int]:
        tor = int(self.tor_of[dst])
        if switch == tor:
            return [self.n_hosts + dst]
        dist = self._hops_to_tor(tor)
        ports = [
            p
            for p in self._ports_of[switch]
            if self.port_to_switch[p] >= 0 and dist[self.port_to_switch[p]] == dist[switch] - 1
        ]
        return sorted(ports, key=lambda p: int(self.port_to_switch[p]))

    def route(self, src: int, dst: int, choose: Callable[[int, int], int]) -> list[int]:
        """Egress ports from host `src` to host `dst`; `choose(switch, n)` picks one of a
        switch's n next hops."""
        path, sw = [src], int(self.tor_of[src])
        while True:
            hops = self.next_hops(sw, dst)
            port = hops[choose(sw, len(hops)) if len(hops) > 1 else 0]
            path.append(port)
            if self.port_to_host[port] == dst:
                return path
            sw = int(self.port_to_switch[port])


@dataclass
class Dag:
    """Start dependencies between flows in CSR form: flow f starts when all `npred[f]` flows
    that list it as a successor are fully delivered (root flows: npred 0, a start time)."""

    succ_ptr: np.ndarray  # [flow + 1] offsets into succ_idx
    succ_idx: np.ndarray  # successors, flow by flow
    npred: np.ndarray  # [flow]

    @staticmethod
    def of(n_flows: int, edges: Iterable[tuple[int, int]] | np.ndarray) -> Dag:
        if isinstance(edges, np.ndarray):  # [edge, (pred, succ)], as large workloads build them
            # one int64 per edge sorts as (pred, succ) pairs do, and far faster (n < 2^31)
            e2 = edges.astype(np.int64).reshape(-1, 2)
            code = np.sort(e2[:, 0] * n_flows + e2[:, 1])  # np.unique, 10x faster here
            code = code[np.r_[True, code[1:] != code[:-1]]] if code.size else code
            e = np.stack([code // n_flows, code % n_flows], axis=1)
        else:
            e = np.array(sorted(set(edges)), dtype=np.int64).reshape(-1, 2)
        counts = np.bincount(e[:, 0], minlength=n_flows)
        ptr = np.zeros(n_flows + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        npred = np.bincount(e[:, 1], minlength=n_flows).astype(np.int64)
        return Dag(ptr, e[:, 1].copy(), npred)


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


@dataclass
class Workload:
    ring_hosts: np.ndarray  # [ring, member] -> host ("2d": the dim-0 rings)
    f_src: np.ndarray
    f_dst: np.ndarray
    f_job: np.ndarray
    f_ring: np.ndarray
    f_step: np.ndarray  # Symphony's step index (the UDP source port it reads)
    f_npk: np.ndarray
    f_path: np.ndarray  # [flow, MAX_HOPS] egress ports, NIC first
    f_plen: np.ndarray
    f_rpath: np.ndarray  # [flow, MAX_HOPS] egress ports of its ACKs, receiver's NIC first
    f_rplen: np.ndarray
    f_slot: np.ndarray
    f_sig: np.ndarray
    f_psn0: np.ndarray
    dag: Dag
    f_start_ps: np.ndarray  # start time of root flows, -1 for the others
    n_jobs: int
    n_steps: int
    f_pass: np.ndarray = field(default_factory=_empty)
    f_chunk: np.ndarray = field(default_factory=_empty)
    f_phase: np.ndarray = field(default_factory=_empty)  # index into `phases`
    f_sport: np.ndarray = field(default_factory=_empty)  # the UDP source port ECMP hashed
    phases: list = field(default_factory=list)  # collectives.RingPhase per phase index
    # compute nodes (flows of no packets, `f_npk` 0): their duration, ps (empty: no compute)
    f_delay_ps: np.ndarray = field(default_factory=_empty)


def _gbps_ser(cfg: FabricConfig, gbps: float) -> int:
    return round(cfg.mtu * 8 / gbps * 1000)


def build_fabric(cfg: FabricConfig) -> Fabric:
    h, g, t, a, q = cfg.hosts, cfg.n_tors, cfg.tors, cfg.spines, cfg.n_pods
    c = cfg.n_cores
    base = 2 * h + 2 * g * a
    n_ports = base + 2 * q * a * c
    n_sw = g + q * a + c
    port_ser = np.full(n_ports, _gbps_ser(cfg, cfg.link_gbps), dtype=np.int64)
    port_switch = np.full(n_ports, -1, dtype=np.int64)
    port_reverse = np.full(n_ports, -1, dtype=np.int64)
    to_sw = np.full(n_ports, -1, dtype=np.int64)
    to_host = np.full(n_ports, -1, dtype=np.int64)
    tor_of = np.arange(h) // cfg.hosts_per_tor

    def link(up: int, down: int, up_sw: int, down_sw: int, ser: int) -> None:
        """`up` is owned by `up_sw` and reaches `down_sw`; `down` the other way."""
        port_switch[up], port_switch[down] = up_sw, down_sw
        to_sw[up], to_sw[down] = down_sw, up_sw
        port_reverse[up], port_reverse[down] = down, up
        port_ser[up] = port_ser[down] = ser

    for host in range(h):
        port_switch[host + h] = tor_of[host]
        to_sw[host] = tor_of[host]
        to_host[host + h] = host
        port_reverse[host], port_reverse[h + host] = h + host, host
    up_ser = _gbps_ser(cfg, cfg.uplink_gbps)
    for tor in range(g):
        pod, local = divmod(tor, t)
        for s in range(a):
            agg = pod * a + s
            link(2 * h + tor * a + s, 2 * h + g * a + agg * t + local, tor, g + agg, up_ser)
    if c:
        core_ser = _gbps_ser(cfg, cfg.core_gbps)
        for agg in range(q * a):
            for k in range(c):
                up, down = base + agg * c + k, base + q * a * c + k * q * a + agg
                link(up, down, g + agg, g + q * a + k, core_ser)
    if cfg.imbalance != 1.0:
        port_ser[2 * h] = round(port_ser[2 * h] * cfg.imbalance)  # ToR 0 -> spine 0
    return Fabric(n_ports, n_sw, port_ser, port_switch, port_reverse, tor_of, to_sw, to_host, h)


def ns3_paths(fab: Fabric, src: int, dst: int, sport: int) -> tuple[list[int], list[int]]:
    """(data path, ACK path) of a flow as ns-3's switches hash them (SwitchNode::GetOutDev,
    seeded by the switch's node id). The ACK goes receiver -> sender with sport = the data's
    dport and dport = the data's sport (rdma-hw.cc ReceiveUdp; GetOutDev hashes
    ch.ack.sport | ch.ack.dport << 16), so it need not take the data's links back."""
    sip, dip = ns3_ip(src), ns3_ip(dst)
    data = fab.route(
        src, dst, lambda sw, n: ns3_choice(sip, dip, sport, NS3_DPORT, fab.node_id(sw), n)
    )
    ack = fab.route(
        dst, src, lambda sw, n: ns3_choice(dip, sip, NS3_DPORT, sport, fab.node_id(sw), n)
    )
    return data, ack


def _hop_table(fab: Fabric) -> tuple[np.ndarray, np.ndarray]:
    """(ports [switch, ToR, k], count [switch, ToR]): a switch's next hops towards any host of
    a ToR other than itself (`Fabric.next_hops`, which depends on the host only through its
    ToR there), padded with -1."""
    tors = np.unique(fab.tor_of)
    first = {int(t): int(np.flatnonzero(fab.tor_of == t)[0]) for t in tors}
    n_tor = int(tors.max()) + 1
    hops = {
        (sw, t): fab.next_hops(sw, h)
        for sw in range(fab.n_switches)
        for t, h in first.items()
        if sw != t
    }
    width = max((len(v) for v in hops.values()), default=1)
    ports = np.full((fab.n_switches, n_tor, width), -1, dtype=np.int64)
    count = np.zeros((fab.n_switches, n_tor), dtype=np.int64)
    for (sw, t), v in hops.items():
        ports[sw, t, : len(v)] = v
        count[sw, t] = len(v)
    return ports, count


def _route_many(
    fab: Fabric,
    table: tuple[np.ndarray, np.ndarray],
    src: np.ndarray,
    dst: np.ndarray,
    words: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """`Fabric.route` of many flows at once with ns-3's choice (`ns3_choice` of `words` and the
    switch's node id): (path [flow, MAX_HOPS] padded with -1, length)."""
    ports, count = table
    nf = src.shape[0]
    path = np.full((nf, MAX_HOPS), -1, dtype=np.int64)
    plen = np.ones(nf, dtype=np.int64)
    path[:, 0] = src
    sw = fab.tor_of[src].astype(np.int64)
    live = np.arange(nf)
    for k in range(1, MAX_HOPS):
        if not live.size:
            break
        s, d = sw[live], dst[live]
        t = fab.tor_of[d]
        port = fab.n_hosts + d  # a host's ToR: its downlink
        up = s != t
        su, tu = s[up], t[up]
        n = count[su, tu]
        pick = np.zeros(su.shape[0], dtype=np.int64)
        many = n > 1
        if many.any():
            rows = live[up][many]
            h = ns3_hash_many(tuple(w[rows] for w in words), fab.n_hosts + su[many])
            pick[many] = h.astype(np.int64) % n[many]
        port[up] = ports[su, tu, pick]
        path[live, k] = port
        plen[live] = k + 1
        there = fab.port_to_host[port] == d
        nxt = live[~there]
        sw[nxt] = fab.port_to_switch[port[~there]]
        live = nxt
    if live.size:
        raise ValueError(f"{live.size} flows need more than {MAX_HOPS} hops")
    return path, plen


def ns3_paths_many(
    fab: Fabric, src: np.ndarray, dst: np.ndarray, sport: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`ns3_paths` of many flows at once: (data path, its length, ACK path, its length), the
    paths padded with -1 to MAX_HOPS (tested equal to the scalar one)."""
    table = _hop_table(fab)
    sip, dip = ns3_ip_many(src), ns3_ip_many(dst)
    sp = np.asarray(sport, dtype=np.int64) & 0xFFFF
    data = _route_many(fab, table, src, dst, (sip, dip, sp | NS3_DPORT << 16))
    ack = _route_many(fab, table, dst, src, (dip, sip, NS3_DPORT | sp << 16))
    return (*data, *ack)


def _choosers(
    cfg: FabricConfig, fab: Fabric, salt: int
) -> tuple[Callable[..., list[int]], Callable[..., list[int]]]:
    """(data path, ACK path) of a flow (src, dst, ring, sport) under the configured routing."""

    def static(src: int, dst: int, ring: int, sport: int) -> list[int]:
        return fab.route(src, dst, lambda sw, n: ring % n)  # ring r on spine r mod n

    def salted(src: int, dst: int, ring: int, sport: int) -> list[int]:
        # the ToRs keep the run's salt (the first version's paths); higher tiers mix in their
        # switch so that tiers do not pick alike
        def pick(sw: int, n: int) -> int:
            key = salt if sw < cfg.n_tors else salt ^ mix64(sw)
            return ecmp_choice(host_ip(src), host_ip(dst), sport, key, n)

        return fab.route(src, dst, pick)

    def addr(h: int) -> int:
        return cfg.host_addrs[h] if cfg.host_addrs else host_ip(h)

    def switch_hash(src: int, dst: int, ring: int, sport: int) -> list[int]:
        # every switch hashes alike (no per-switch seed): next hops in node order, as the
        # controller sorts a group's member ports (symphony_tools.fabric numbers uplinks so)
        def pick(sw: int, n: int) -> int:
            bucket = ecmp_bucket(addr(src), addr(dst), UDP, sport & 0xFFFF, ROCE_DPORT)
            return bucket_members(range(n))[bucket]

        return fab.route(src, dst, pick)

    def switch_ack(src: int, dst: int, ring: int, sport: int) -> list[int]:
        # an ACK or CNP is a frame of its own to the switches: hashed on its 5-tuple (receiver
        # to sender, CONTROL_SPORT), so it may cross the other spine than the data it answers
        return switch_hash(dst, src, ring, CONTROL_SPORT)

    @functools.lru_cache(maxsize=4)  # a flow asks for its data path, then its ACK path
    def both(src: int, dst: int, sport: int) -> tuple[list[int], list[int]]:
        return ns3_paths(fab, src, dst, sport)

    def ns3(src: int, dst: int, ring: int, sport: int) -> list[int]:
        return both(src, dst, sport)[0]

    def ns3_ack(src: int, dst: int, ring: int, sport: int) -> list[int]:
        return both(src, dst, sport)[1]

    def same_links_back(src: int, dst: int, ring: int, sport: int) -> list[int]:
        fwd = data(src, dst, ring, sport)
        return fab.reverse_path(np.array(fwd), len(fwd))

    ecmp = {"ns3": ns3, "switch": switch_hash, "salted": salted}[cfg.ecmp]
    data = static if cfg.routing == "static" else ecmp
    own_header = {"ns3": ns3_ack, "switch": switch_ack}
    ack = own_header.get(cfg.ecmp, same_links_back) if cfg.routing == "ecmp" else same_links_back
    return data, ack


def _route_arrays(nf: int) -> tuple[np.ndarray, ...]:
    """Per flow, empty: data path, ACK path (MAX_HOPS egress ports each), their lengths, and
    the flow's (slot, signature) in the switches' flow table."""
    paths = [np.full((nf, MAX_HOPS), -1, dtype=np.int64) for _ in range(2)]
    return (*paths, *(np.zeros(nf, dtype=np.int64) for _ in range(4)))


def build_workload(cfg: FabricConfig, fab: Fabric, rng: np.random.Generator) -> Workload:
    """The collective's sends (`collectives.build_sends`) as flows: paths, QPs, start times.
    Random draws per run: the salt (drawn in every ECMP mode, so that the other draws match),
    then per flow its initial PSN and, for root flows, its start jitter."""
    cfg.validate()
    return sends_workload(cfg, fab, rng, build_sends(cfg))


def sends_workload(
    cfg: FabricConfig,
    fab: Fabric,
    rng: np.random.Generator,
    sends: Sends,
    delay_ps: np.ndarray | None = None,
) -> Workload:
    """`build_workload` for any sends (`training.py` builds them from a workload file), in the
    same draws. A send of 0 bytes is a compute node of `delay_ps` (no packets, no path; it
    draws only its start jitter when it is a root)."""
    nf = sends.src.shape[0]
    compute = sends.msg_bytes == 0
    salt = int(rng.integers(0, 1 << 62))
    # What the flow's packets carry in the UDP source port: ns-3's per-pair counter when ECMP
    # is ns-3's; else the step (the first version's choice, the paper's prototype's).
    step = sends.collective_step if cfg.step_index == "collective" else sends.pair_seq
    ns3_sport = (NS3_SPORT_BASE + sends.pair_seq) & 0xFFFF
    sport = ns3_sport if cfg.ecmp == "ns3" else step.copy()
    path, rpath, plen, rplen, slot, sig = _route_arrays(nf)
    net = np.flatnonzero(~compute)
    if cfg.routing == "ecmp" and cfg.ecmp == "ns3":  # every flow at once (millions in training)
        a, b = sends.src[net], sends.dst[net]
        path[net], plen[net], rpath[net], rplen[net] = ns3_paths_many(fab, a, b, sport[net])
    else:
        data_path, ack_path = _choosers(cfg, fab, salt)
        for f in net.tolist():
            a, b, r = int(sends.src[f]), int(sends.dst[f]), int(sends.ring[f])
            hops = data_path(a, b, r, int(sport[f]))
            back = ack_path(a, b, r, int(sport[f]))
            path[f, : len(hops)], plen[f] = hops, len(hops)
            rpath[f, : len(back)], rplen[f] = back, len(back)
    # A new QP per send: dqpn unique per flow, as Astra-Sim's ns-3 backend opens one per send.
    slot[net], sig[net] = flow_slots(host_ip(sends.src[net]), net + 1)
    # The run's draws, flow by flow in this order: a flow's PSN, then a root's start jitter
    # (a compute root: its jitter alone). One call with each draw's bound gives what one call
    # per draw gave (numpy draws an array of bounds element by element; tested), so a seed
    # gives the run it always gave.
    root = sends.root.astype(bool)
    jitter = cfg.start_jitter_ns + 1
    n_draws = np.where(compute, root, 1 + root).astype(np.int64)
    first = np.cumsum(n_draws) - n_draws
    bounds = np.full(int(n_draws.sum()), jitter, dtype=np.int64)
    bounds[first[net]] = 1 << 24
    drawn = rng.integers(0, bounds)
    psn0 = np.zeros(nf, dtype=np.int64)
    psn0[net] = drawn[first[net]]
    start = np.full(nf, -1, dtype=np.int64)
    roots = np.flatnonzero(root)
    jit = drawn[first[roots] + ~compute[roots]] * 1000
    # a flow root starts at its job's start (cfg.job_start_us, 0 for a job not listed)
    job_ps = np.array([round(js * 1e6) for js in cfg.job_start_us] + [0], dtype=np.int64)
    job = sends.job[roots].astype(np.int64) - 1
    job[job >= len(cfg.job_start_us)] = len(cfg.job_start_us)
    start[roots] = np.where(compute[roots], 0, job_ps[job]) + jit
    return Workload(
        ring_hosts=ring_hosts(cfg) if cfg.topology == "rings" else dim_rings(cfg, 0),
        f_src=sends.src,
        f_dst=sends.dst,
        f_job=sends.job,
        f_ring=sends.ring,
        f_step=step,
        f_npk=-(-sends.msg_bytes // cfg.payload_bytes),
        f_path=path,
        f_plen=plen,
        f_rpath=rpath,
        f_rplen=rplen,
        f_slot=slot,
        f_sig=sig,
        f_psn0=psn0,
        dag=Dag.of(nf, sends.edges),
        f_start_ps=start,
        n_jobs=max(cfg.jobs, int(sends.job.max(initial=1))),
        n_steps=int(step.max()) + 1,
        f_pass=sends.pass_,
        f_chunk=sends.chunk,
        f_phase=sends.phase,
        f_sport=sport,
        phases=sends.phases,
        f_delay_ps=np.zeros(nf, dtype=np.int64) if delay_ps is None else delay_ps,
    )


def background_sources(
    cfg: FabricConfig, fab: Fabric, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(port, first packet time, end time, gap) of each background burst, in ps."""
    bg = cfg.background
    fabric_ports = np.arange(2 * cfg.hosts, fab.n_ports)  # every switch-to-switch link
    k = bg.bursts
    ports = rng.choice(fabric_ports, size=k) if k else np.zeros(0, dtype=np.int64)
    horizon = 0.7 * lockstep_bound_us(cfg) * 1e6
    t0 = rng.uniform(0, horizon, size=k).astype(np.int64)
    t1 = t0 + round(bg.duration_us * 1e6)
    gap = np.full(k, round(cfg.mtu * 8 / bg.gbps * 1000), dtype=np.int64)
    return ports.astype(np.int64), t0, t1, gap


@dataclass(frozen=True)
class CustomFlows:
    """Flows given one by one instead of a collective: `flows` are (src host, dst host,
    next-hop choice at every switch with several (the spine in a two-tier fabric), packets,
    start ps or -1 for a flow that waits for its predecessors). `edges` (pred, succ) are start
    dependencies; `sports`, when given, route every flow and its ACKs by ns-3's ECMP hash with
    that UDP source port (the choice field is then unused); `steps` are the flows' step index
    (all 0 when not given)."""

    flows: list[tuple[int, int, int, int, int]]
    edges: list[tuple[int, int]] = field(default_factory=list)
    sports: list[int] | None = None
    steps: list[int] | None = None


def custom_workload(
    cfg: FabricConfig, fab: Fabric, flows: list[tuple[int, int, int, int, int]] | CustomFlows
) -> Workload:
    """Flows given one by one (`CustomFlows`, or its `flows` list alone: independent flows
    whose ACKs take the same links back), one job: the sanity checks (line rate, fair share)
    and the ns-3 cross-validation (`crossval.py`) use it."""
    spec = flows if isinstance(flows, CustomFlows) else CustomFlows(flows)
    nf = len(spec.flows)
    path, rpath, plen, rplen, slot, sig = _route_arrays(nf)
    for f, (a, b, u, _, _) in enumerate(spec.flows):
        if spec.sports is None:
            hops = fab.route(a, b, lambda sw, n, u=u: u % n)
            back = fab.reverse_path(np.array(hops), len(hops))
        else:
            hops, back = ns3_paths(fab, a, b, spec.sports[f])
        path[f, : len(hops)], plen[f] = hops, len(hops)
        rpath[f, : len(back)], rplen[f] = back, len(back)
        slot[f], sig[f] = flow_slot(host_ip(a), f + 1)
    col = np.array(spec.flows, dtype=np.int64).reshape(nf, 5)
    step = np.array(spec.steps if spec.steps is not None else [0] * nf, dtype=np.int64)
    return Workload(
        ring_hosts=np.zeros((0, 0), dtype=np.int64),
        f_src=col[:, 0].copy(),
        f_dst=col[:, 1].copy(),
        f_job=np.ones(nf, dtype=np.int64),
        f_ring=np.zeros(nf, dtype=np.int64),
        f_step=step,
        f_npk=col[:, 3].copy(),
        f_path=path,
        f_plen=plen,
        f_rpath=rpath,
        f_rplen=rplen,
        f_slot=slot,
        f_sig=sig,
        f_psn0=np.zeros(nf, dtype=np.int64),
        dag=Dag.of(nf, spec.edges),
        f_start_ps=col[:, 4].copy(),
        n_jobs=1,
        n_steps=int(step.max(initial=0)) + 1,
        f_sport=_empty() if spec.sports is None else np.array(spec.sports, dtype=np.int64),
    )
