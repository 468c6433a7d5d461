"""Every switch of the bmv2 fabric against the golden model (issue 31, item 6): on the 2 x 2 x 2
fabric with the controller daemon, a tag-mode job allocated by its 4 hosts; hand-built RoCEv2
frames (evaluation/hosts/wire.frame, byte for byte conformance.packets.rocev2) of several flows,
steps and messages, between hosts on different leaves and on one leaf, sent one at a time from
the hosts' namespaces.

- Each frame crosses the spine the Python hash predicts (model/ecmp.py through Topology.path):
  the P4 per-port counters (p4names.PORT_COUNTERS, over Thrift as losses.LossMeter reads them)
  of every spine's and leaf's ports count exactly the predicted frames.
- Every switch's whole JobState (registers and counters, read over Thrift:
  switch/registers.ThriftJobRegisters) equals a SwitchModel fed with exactly the frames that
  crossed that switch, in their order.

The window clock: T_win is 2,000 s (ptf_tests' T_WIN_NEVER_US), more than the switches' uptime,
so no window closes on the switch (bmv2's timestamp counts from its start) and the model is fed
now = 0 (none closes there either): win_start stays 0 on both and every field, win_start
included, is compared. Marks: n_warmup is its maximum, so psn_rec never passes it and the mark
threshold is 0 (no coin decides anything: bmv2 draws its own); k keeps marking enabled.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import frames as cf
from conformance import packets as rp
from evaluation.hosts import netns, wire
from symphony import p4names
from symphony.api import symphony_pb2 as pb
from symphony.model.params import N_WARMUP_MAX, JobParams
from symphony.model.switch_model import SwitchModel
from symphony.switch.registers import ThriftJobRegisters
from symphony_tools.daemon_process import ControllerProcess
from symphony_tools.fabric import ROCE_DPORT, Bmv2Fabric, Host, Topology, fabric_missing
from symphony_tools.fabric import running as fabric_running

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(
        fabric_missing() is not None, reason=f"bmv2 fabric test skipped: {fabric_missing()}"
    ),
]

ETH_P_IP = 0x0800
T_WIN_US = 2_000_000_000.0  # ptf_tests/base_test.py T_WIN_NEVER_US: no window closes
SEED = 31


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Bmv2Fabric, ControllerProcess]]:
    # A fabric of `make fabric` holds the same ports: start() refuses, naming them.
    with fabric_running(Topology(2, 2, 2), tmp_path) as (fabric, controller):
        yield fabric, controller


def traffic(topo: Topology, tag: int) -> list[tuple[Host, Host, bytes]]:
    """Messages of 1-4 packets of several steps on 5 flows (4 across the leaves, 1 within
    leaf0), interleaved at random with each flow's order kept."""
    rng = random.Random(SEED)
    h = topo.host
    flows = [(h(0), h(2)), (h(1), h(3)), (h(2), h(0)), (h(3), h(1)), (h(0), h(1))]
    per_flow: list[list[tuple[Host, Host, bytes]]] = []
    for qp, (src, dst) in enumerate(flows, start=1):
        out = []
        psn = 0
        for step in rng.sample(range(1, 40), 5):
            count = rng.randint(1, 4)
            for i in range(count):
                f = wire.frame(
                    wire.Endpoint(src.ip, src.mac),
                    wire.Endpoint(dst.ip, dst.mac),
                    opcode=rp.write_opcode(i, count),
                    step=step,
                    psn=psn,
                    dqpn=qp,
                    tag=tag,
                    payload=b"\x00" * 32,
                )
                out.append((src, dst, f))
                psn += 1
        per_flow.append(out)
    order = [i for i, fl in enumerate(per_flow) for _ in fl]
    rng.shuffle(order)
    return [per_flow[i].pop(0) for i in order]


def port_counts(fabric: Bmv2Fabric) -> dict[tuple[str, str, int], int]:
    """(switch, counter, port) -> frames, for every port of every switch."""
    out = {}
    for sw in fabric.topo.switches:
        t = fabric.thrift(sw.name)
        for what, name in p4names.PORT_COUNTERS.items():
            for port in range(len(sw.interfaces)):
                out[(sw.name, what, port)] = t.counter_read(name, port)[1]
    return out


def test_every_switch_matches_the_model_fed_with_its_frames(
    running: tuple[Bmv2Fabric, ControllerProcess],
) -> None:
    fabric, controller = running
    topo = fabric.topo
    assert controller.stub is not None
    reply = controller.stub.Allocate(
        pb.AllocateRequest(
            request_key="golden",
            name="golden",
            mode="tag",
            hosts=[h.name for h in topo.hosts],
            params=pb.Params(t_win_us=T_WIN_US, n_warmup=N_WARMUP_MAX),
        ),
        timeout=30,
    )
    assert reply.job.state == "active", reply
    job = reply.job.job_id
    eff = reply.job.effective
    params = JobParams(
        k=eff.k,
        tau=eff.tau,
        t_win_us=eff.t_win_us,
        n_warmup=eff.n_warmup,
        n_sample=eff.n_sample,
        alpha_max=eff.alpha_max,
        psn_mode=eff.psn_mode,
        gate_depth=eff.gate_depth,
    ).to_action_params()
    assert params["mark_enable"] == 1
    models = {sw.name: SwitchModel() for sw in topo.switches}
    for m in models.values():
        m.install_job(job, params, tag=True)

    sent = traffic(topo, tag=job)
    rx = {h.index: netns.packet_socket(h.ifname, h.netns, proto=ETH_P_IP) for h in topo.hosts}
    tx = {h.index: netns.packet_socket(h.ifname, h.netns, proto=0) for h in topo.hosts}
    expect: dict[tuple[str, str, int], int] = {}
    before = port_counts(fabric)
    try:
        for s in rx.values():
            s.settimeout(3.0)
        for src, dst, frame in sent:
            parsed = cf.parse(frame)
            assert parsed.roce is not None
            path = topo.path(src, dst, 17, parsed.roce.step, ROCE_DPORT)
            tx[src.index].send(frame)
            # Wait for it at its destination: the next frame leaves after this one arrived,
            # so every switch sees the frames in the order the models do.
            while True:
                data = rx[dst.index].recv(65535)
                if data[wire.UDP_OFF + 2 : wire.UDP_OFF + 4] == ROCE_DPORT.to_bytes(2, "big"):
                    break
            assert data[wire.IP_OFF + 12 :] != b"", "empty frame"
            assert (
                data[wire.BTH_OFF + 9 : wire.BTH_OFF + 12]
                == frame[wire.BTH_OFF + 9 : wire.BTH_OFF + 12]
            ), "frames out of order"
            for name in path:
                models[name].process(parsed.roce, now=0)
            # The ports it enters and leaves on every switch of its path.
            hops = _hops(topo, src, dst, path)
            for sw_name, in_port, out_port in hops:
                for key in ((sw_name, "received", in_port), (sw_name, "enqueued", out_port)):
                    expect[key] = expect.get(key, 0) + 1
                key = (sw_name, "dequeued", out_port)
                expect[key] = expect.get(key, 0) + 1
    finally:
        for s in (*rx.values(), *tx.values()):
            s.close()
    after = port_counts(fabric)
    got = {k: after[k] - before[k] for k in after if after[k] != before[k]}
    assert got == expect, "per-port counters differ from the hash's paths"

    for sw in topo.switches:
        regs = ThriftJobRegisters("127.0.0.1", sw.thrift_port)
        try:
            state = asyncio.run(regs.read([job]))[job]
        finally:
            regs.drop()
        want = models[sw.name].state(job)
        assert want.packets > 0, sw.name
        assert state == want, f"{sw.name}: switch {state} != model {want}"


def _hops(topo: Topology, src: Host, dst: Host, path: list[str]) -> list[tuple[str, int, int]]:
    """(switch, ingress port, egress port) of each switch on the path."""
    if len(path) == 1:
        return [(path[0], src.port, dst.port)]
    j = int(path[1].removeprefix("spine"))
    return [
        (path[0], src.port, topo.uplink(j)),
        (path[1], src.leaf, dst.leaf),
        (path[2], topo.uplink(j), dst.port),
    ]
