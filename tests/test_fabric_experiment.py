"""The fabric experiment's bookkeeping without switches: the simulator's configuration of the
bmv2 fabric, and ECMP collisions from the data plane's hash."""

from __future__ import annotations

from evaluation.fabric.collectives import build_sends
from evaluation.hosts import experiments as ex
from evaluation.hosts import fabric_experiment as fx
from evaluation.hosts.collective import CollectiveRun, Message
from symphony.model.ecmp import next_hop
from symphony_tools.fabric import ip_int

SETUP = fx.FabricSetup(
    leaves=2,
    spines=2,
    hosts_per_leaf=2,
    line_pps=2000.0,
    rings=1,
    chunk_packets=100,
    queue_depth=1000,
    jitter_real_us=2.0,
    sample_ms=50.0,
)


def test_the_simulator_runs_the_fabrics_hosts_addresses_and_hash() -> None:
    cfg = SETUP.sim_config(ex.Variant("gate8", 0.001, 8))
    assert (cfg.hosts, cfg.tors, cfg.spines, cfg.ecmp) == (4, 2, 2, "switch")
    assert cfg.host_addrs == tuple(ip_int(h.ip) for h in SETUP.topo.hosts)
    assert cfg.mode == "symphony" and cfg.symphony.gate_depth == 8
    assert SETUP.sim_config(ex.BASELINE).mode == "baseline"
    assert cfg.packets(cfg.chunk_bytes) == 100  # one packet per 1024 B of payload, as the hosts
    sends = build_sends(cfg)
    assert len(sends.src) == 4 * 6  # 4 members, 2(n-1) steps each


def _msg(f: int, src: int, dst: int, step: int, a: float, b: float) -> Message:
    return Message(f, src, dst, step, a, b, 10, 10)


def test_collisions_count_different_steps_on_one_uplink_at_once() -> None:
    topo = SETUP.topo
    h = topo.hosts  # h0, h1 on leaf0; h2, h3 on leaf1

    def spine(src: int, step: int) -> int:
        up = next_hop(topo.uplinks, ip_int(h[src].ip), ip_int(h[2].ip), 17, step, 4791)
        return up - topo.hosts_per_leaf

    # two steps from leaf0 to h2 that hash to the same spine, overlapping in time
    same = next(s for s in range(1, 64) if spine(1, s) == spine(1, 0))
    other = next(s for s in range(1, 64) if spine(1, s) != spine(1, 0))
    run = CollectiveRun(
        True,
        3.0,
        3.0,
        [
            _msg(0, 1, 2, 0, 0.0, 2.0),
            _msg(1, 1, 2, same, 1.0, 3.0),  # collides with message 0
            _msg(2, 1, 2, other, 1.0, 3.0),  # the other spine
            _msg(3, 0, 1, same, 1.0, 3.0),  # inside leaf0: no uplink
            _msg(4, 1, 2, same, 2.5, 3.0),  # after message 0; same step as message 1
        ],
        [],
    )
    assert fx.ecmp_collisions(topo, run) == (1, 4)


def test_a_deferred_rounds_attempts_get_names_of_their_own() -> None:
    """The controller returns the job a request key already named; a deferred round counts its
    attempts from 0 again, so its names must differ from the first round's (the first round
    keeps the names it always had)."""
    v = fx.VARIANTS[1]
    first = {fx.attempt_name(v, 104, 0, n) for n in range(13)}
    deferred = {fx.attempt_name(v, 104, 1, n) for n in range(13)}
    assert len(first) == len(deferred) == 13 and not first & deferred
    assert fx.attempt_name(v, 104, 0, 0) == "fab-k0.01-104-0"


def test_the_ack_classs_runs_add_the_simulators_shared_port() -> None:
    """With the class on, the simulator also runs it as a real switch would (ACKs take their
    port's time). Under a profile with an ACK per data frame (each a frame's time on bmv2) bmv2's
    class, with a rate of its own, is the fastest; the shared port's is slower, and ACKs behind
    data slower still (seed 100: 0.140, 0.156 and 0.160 s)."""
    from dataclasses import replace

    data = replace(SETUP, chunk_packets=20, profile="hpcc-config")
    prio = replace(data, ack_class="priority")
    row = fx.simulate_row(prio, ex.BASELINE, 100)
    behind = fx.simulate_row(data, ex.BASELINE, 100)
    assert row["sim_cct_s"] < row["sim_shared_port_cct_s"] < behind["sim_cct_s"]
    assert "sim_shared_port_cct_s" not in behind
