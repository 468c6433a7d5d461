"""The leaf-spine fabric and the ring workload as flat arrays for the event kernel.

Ports: host NIC h = h; ToR downlink to host h = H + h; ToR t uplink to spine s = 2H + t*P + s;
spine s downlink to ToR t = 2H + T*P + s*T + t. Switches: ToR t = t, spine s = T + s.

Rings: with R rings of N = H/R members and T ToRs, ring r's member j sits on ToR j // (N/T)
(consecutive members share a ToR N/T at a time), at local index r*(N/T) + j % (N/T). So every
ring crosses the spine layer T times, and with static routing (ring r on spine r mod P) every
uplink and spine downlink carries one ring: the fabric is balanced, 1:1, as in the paper's
Fig. 1a. Each (member, step) is its own flow (own QP, UDP source port = step), so ECMP hashes it
onto a new path every step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from evaluation.fabric.config import FabricConfig
from symphony.model.pipeline import flow_slot

ROCE_DPORT = 4791
UDP = 17
# Egress ports on a path, NIC first: NIC, ToR up, agg up, core down, agg down, ToR down.
MAX_HOPS = 6


def mix64(x: int) -> int:
    """splitmix64's finaliser: the ECMP hash of our switches (seeded per run)."""
    x &= (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    return x ^ (x >> 31)


def ecmp_choice(src_ip: int, dst_ip: int, sport: int, salt: int, n: int) -> int:
    key = (src_ip << 32 | dst_ip) ^ (sport << 16 | ROCE_DPORT) << 8 ^ UDP
    return mix64(key ^ mix64(salt)) % n


def host_ip(h: int) -> int:
    return (10 << 24) | (1 << 16) | h  # 10.1.x.y


@dataclass
class Fabric:
    n_ports: int
    n_switches: int
    port_ser_ps: np.ndarray  # serialisation time of one MTU packet
    port_switch: np.ndarray  # switch that owns the port, -1 for NICs
    port_reverse: np.ndarray  # the egress port at the other end of the same link
    tor_of: np.ndarray  # host -> ToR

    def reverse_path(self, path: np.ndarray, plen: int) -> list[int]:
        """The egress ports of the way back over the same links (an ACK's path when the
        fabric routes it over the links its data took)."""
        return [int(self.port_reverse[path[i]]) for i in range(plen - 1, -1, -1)]


@dataclass
class Dag:
    """Start dependencies between flows in CSR form: flow f starts when all `npred[f]` flows
    that list it as a successor are fully delivered (root flows: npred 0, a start time)."""

    succ_ptr: np.ndarray  # [flow + 1] offsets into succ_idx
    succ_idx: np.ndarray  # successors, flow by flow
    npred: np.ndarray  # [flow]

    @staticmethod
    def of(n_flows: int, edges: Iterable[tuple[int, int]]) -> Dag:
        e = np.array(sorted(set(edges)), dtype=np.int64).reshape(-1, 2)
        counts = np.bincount(e[:, 0], minlength=n_flows)
        ptr = np.zeros(n_flows + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        npred = np.bincount(e[:, 1], minlength=n_flows).astype(np.int64)
        return Dag(ptr, e[:, 1].copy(), npred)


@dataclass
class Workload:
    ring_hosts: np.ndarray  # [ring, member] -> host
    f_src: np.ndarray
    f_dst: np.ndarray
    f_job: np.ndarray
    f_ring: np.ndarray
    f_step: np.ndarray
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


def build_fabric(cfg: FabricConfig) -> Fabric:
    h, t, p = cfg.hosts, cfg.tors, cfg.spines
    n_ports = 2 * h + 2 * t * p
    ser = round(cfg.mtu * 8 / cfg.link_gbps * 1000)
    port_ser = np.full(n_ports, ser, dtype=np.int64)
    port_switch = np.full(n_ports, -1, dtype=np.int64)
    port_reverse = np.full(n_ports, -1, dtype=np.int64)
    tor_of = np.arange(h) // (h // t)
    for host in range(h):
        port_switch[h + host] = tor_of[host]
        port_reverse[host], port_reverse[h + host] = h + host, host
    for tor in range(t):
        for sp in range(p):
            up, down = 2 * h + tor * p + sp, 2 * h + t * p + sp * t + tor
            port_switch[up] = tor
            port_switch[down] = t + sp
            port_reverse[up], port_reverse[down] = down, up
    if cfg.imbalance != 1.0:
        port_ser[2 * h + 0 * p + 0] = round(ser * cfg.imbalance)
    return Fabric(n_ports, t + p, port_ser, port_switch, port_reverse, tor_of)


def _reverse_paths(fab: Fabric, path: np.ndarray, plen: np.ndarray) -> np.ndarray:
    rpath = np.full_like(path, -1)
    for f in range(path.shape[0]):
        back = fab.reverse_path(path[f], int(plen[f]))
        rpath[f, : len(back)] = back
    return rpath


def ring_hosts(cfg: FabricConfig) -> np.ndarray:
    n, per = cfg.ring_size, cfg.ring_size // cfg.tors
    hpt = cfg.hosts // cfg.tors
    out = np.zeros((cfg.rings, n), dtype=np.int64)
    for r in range(cfg.rings):
        for j in range(n):
            out[r, j] = (j // per) * hpt + r * per + j % per
    assert len(set(out.ravel().tolist())) == cfg.hosts
    return out


def build_workload(cfg: FabricConfig, fab: Fabric, rng: np.random.Generator) -> Workload:
    cfg.validate()
    h, t, p = cfg.hosts, cfg.tors, cfg.spines
    rh = ring_hosts(cfg)
    n, steps = cfg.ring_size, cfg.steps
    nf = cfg.rings * n * steps
    salt = int(rng.integers(0, 1 << 62))
    arr = {
        k: np.full(nf, -1, dtype=np.int64)
        for k in ("src", "dst", "job", "ring", "step", "npk", "plen", "slot", "sig", "psn0")
    }
    edges: list[tuple[int, int]] = []
    start = np.full(nf, -1, dtype=np.int64)
    path = np.full((nf, MAX_HOPS), -1, dtype=np.int64)
    rings_per_job = cfg.rings // cfg.jobs
    fid = {}
    for r in range(cfg.rings):
        for j in range(n):
            for s in range(steps):
                fid[r, j, s] = len(fid)
    for (r, j, s), f in fid.items():
        a, b = int(rh[r, j]), int(rh[r, (j + 1) % n])
        job = r // rings_per_job + 1
        arr["src"][f], arr["dst"][f], arr["job"][f] = a, b, job
        arr["ring"][f], arr["step"][f], arr["npk"][f] = r, s, cfg.pkts_per_chunk
        ta, tb = int(fab.tor_of[a]), int(fab.tor_of[b])
        if ta == tb:
            hops = [a, h + b]
        else:
            if cfg.routing == "static":
                u = r % p
            else:
                u = ecmp_choice(host_ip(a), host_ip(b), s, salt, p)
            hops = [a, 2 * h + ta * p + u, 2 * h + t * p + u * t + tb, h + b]
        path[f, : len(hops)] = hops
        arr["plen"][f] = len(hops)
        # A new QP per step: dqpn unique per flow, as Astra-Sim's ns-3 backend opens one per send.
        slot, sig = flow_slot(host_ip(a), f + 1)
        arr["slot"][f], arr["sig"][f] = slot, sig
        arr["psn0"][f] = int(rng.integers(0, 1 << 24))
        if s + 1 < steps:
            edges.append((f, fid[r, (j + 1) % n, s + 1]))
        if s == 0:
            js = cfg.job_start_us[job - 1] if job - 1 < len(cfg.job_start_us) else 0.0
            start[f] = round(js * 1e6) + int(rng.integers(0, cfg.start_jitter_ns + 1)) * 1000
    return Workload(
        ring_hosts=rh,
        f_src=arr["src"],
        f_dst=arr["dst"],
        f_job=arr["job"],
        f_ring=arr["ring"],
        f_step=arr["step"],
        f_npk=arr["npk"],
        f_path=path,
        f_plen=arr["plen"],
        f_rpath=_reverse_paths(fab, path, arr["plen"]),
        f_rplen=arr["plen"].copy(),
        f_slot=arr["slot"],
        f_sig=arr["sig"],
        f_psn0=arr["psn0"],
        dag=Dag.of(nf, edges),
        f_start_ps=start,
        n_jobs=cfg.jobs,
        n_steps=steps,
    )


def background_sources(
    cfg: FabricConfig, fab: Fabric, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(port, first packet time, end time, gap) of each background burst, in ps."""
    bg = cfg.background
    h, t, p = cfg.hosts, cfg.tors, cfg.spines
    fabric_ports = np.arange(2 * h, 2 * h + 2 * t * p)
    k = bg.bursts
    ports = rng.choice(fabric_ports, size=k) if k else np.zeros(0, dtype=np.int64)
    horizon = 0.7 * cfg.lockstep_bound_us() * 1e6
    t0 = rng.uniform(0, horizon, size=k).astype(np.int64)
    t1 = t0 + round(bg.duration_us * 1e6)
    gap = np.full(k, round(cfg.mtu * 8 / bg.gbps * 1000), dtype=np.int64)
    return ports.astype(np.int64), t0, t1, gap


def custom_workload(
    cfg: FabricConfig, fab: Fabric, flows: list[tuple[int, int, int, int, int]]
) -> Workload:
    """Independent flows (src host, dst host, spine for a cross-ToR path, packets, start ps),
    one job, step 0 each: the sanity checks (line rate, fair share) use it."""
    h, t, p = cfg.hosts, cfg.tors, cfg.spines
    nf = len(flows)
    path = np.full((nf, MAX_HOPS), -1, dtype=np.int64)
    plen = np.zeros(nf, dtype=np.int64)
    slot = np.zeros(nf, dtype=np.int64)
    sig = np.zeros(nf, dtype=np.int64)
    for f, (a, b, u, _, _) in enumerate(flows):
        ta, tb = int(fab.tor_of[a]), int(fab.tor_of[b])
        hops = (
            [a, h + b] if ta == tb else [a, 2 * h + ta * p + u, 2 * h + t * p + u * t + tb, h + b]
        )
        path[f, : len(hops)] = hops
        plen[f] = len(hops)
        slot[f], sig[f] = flow_slot(host_ip(a), f + 1)
    col = np.array(flows, dtype=np.int64).reshape(nf, 5)
    return Workload(
        ring_hosts=np.zeros((0, 0), dtype=np.int64),
        f_src=col[:, 0].copy(),
        f_dst=col[:, 1].copy(),
        f_job=np.ones(nf, dtype=np.int64),
        f_ring=np.zeros(nf, dtype=np.int64),
        f_step=np.zeros(nf, dtype=np.int64),
        f_npk=col[:, 3].copy(),
        f_path=path,
        f_plen=plen,
        f_rpath=_reverse_paths(fab, path, plen),
        f_rplen=plen.copy(),
        f_slot=slot,
        f_sig=sig,
        f_psn0=np.zeros(nf, dtype=np.int64),
        dag=Dag.of(nf, []),
        f_start_ps=col[:, 4].copy(),
        n_jobs=1,
        n_steps=1,
    )
