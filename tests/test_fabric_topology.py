"""symphony_tools/fabric.py's Topology: names, ports, links, addresses and the controller config
it writes (loaded by the controller's own config loader; the routes and ECMP groups the
controller derives from it deliver every host's frames to every other host along
Topology.path, the spine picked by the data plane's hash). No switch runs here:
tests/integration/test_fabric_bmv2.py brings the fabric up."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from symphony.config import ConfigError, load
from symphony.config.schema import Config
from symphony.config.topology import routes_for
from symphony.model.ecmp import next_hop
from symphony_tools.fabric import FabricError, Host, Topology, ip_int


def config_of(topo: Topology, tmp_path: Path) -> Config:
    p4info, blob = tmp_path / "p.txtpb", tmp_path / "p.json"
    p4info.write_text("")
    blob.write_text("{}")
    cfg = tmp_path / "controller.toml"
    cfg.write_text(topo.controller_toml(database=tmp_path / "db", p4info=p4info, bmv2_json=blob))
    return load(cfg)


def walk(
    cfg: Config, topo: Topology, src: Host, dst: Host, proto: int, sport: int, dport: int
) -> tuple[list[str], int]:
    """Follow the routes the controller derives from the written topology (longest prefix, an
    ECMP group's member by the data plane's hash) from `src`'s leaf to `dst`: the switches
    crossed and the last egress port."""
    assert cfg.topology is not None
    fibs = routes_for(cfg.topology)
    peer = {(lk.a, lk.a_port): lk.b for lk in topo.links}
    peer |= {(lk.b, lk.b_port): lk.a for lk in topo.links}
    here, crossed = topo.leaf_name(src.leaf), []
    addr = ipaddress.IPv4Address(dst.ip)
    for _ in range(5):
        crossed.append(here)
        routes = [nh for nh in fibs[here] if addr in nh.prefix]
        assert routes, f"{here} has no route to {dst.ip}"
        hops = max(routes, key=lambda nh: nh.prefix.prefixlen).ports
        port = next_hop(hops, ip_int(src.ip), ip_int(dst.ip), proto, sport, dport)
        if (here, port) not in peer:
            return crossed, port
        here = peer[(here, port)]
    raise AssertionError(f"loop towards {dst.ip}: {crossed}")


@pytest.mark.parametrize("leaves,spines,hpl", [(2, 2, 2), (3, 2, 1), (4, 3, 5), (1, 1, 1)])
def test_every_host_reaches_every_other_along_its_path(
    tmp_path: Path, leaves: int, spines: int, hpl: int
) -> None:
    topo = Topology(leaves, spines, hpl)
    cfg = config_of(topo, tmp_path)
    assert [s.name for s in cfg.switches] == [s.name for s in topo.switches]
    spines_used = set()
    for src in topo.hosts:
        for dst in topo.hosts:
            if src == dst:
                continue
            # ICMP (no UDP: ports 0) and RoCEv2 frames of a few steps (the step is the sport).
            for proto, sport, dport in [(1, 0, 0)] + [(17, step, 4791) for step in range(4)]:
                crossed, port = walk(cfg, topo, src, dst, proto, sport, dport)
                assert crossed == topo.path(src, dst, proto, sport, dport)
                assert (crossed[-1], port) == (topo.leaf_name(dst.leaf), dst.port)
                spines_used.update(crossed[1:2] if len(crossed) == 3 else [])
    if leaves > 1 and spines > 1 and hpl > 1:
        assert len(spines_used) == spines  # ECMP spreads the frames over every spine


def test_default_fabric_names_and_ports() -> None:
    topo = Topology()
    assert topo.spec == "2x2x2"
    assert [(s.name, s.grpc_addr, s.thrift_port) for s in topo.switches] == [
        ("leaf0", "127.0.0.1:9859", 9390),
        ("leaf1", "127.0.0.1:9860", 9391),
        ("spine0", "127.0.0.1:9861", 9392),
        ("spine1", "127.0.0.1:9862", 9393),
    ]
    assert topo.switch("leaf1").interfaces == ("sf-l1p0", "sf-l1p1", "sf-l1p2", "sf-l1p3")
    assert topo.switch("spine0").interfaces == ("sf-s0p0", "sf-s0p1")
    h = topo.host("h2")
    assert (h.ip, h.mac, h.netns, h.ifname, h.leaf, h.port) == (
        "10.0.1.1",
        "02:00:0a:00:01:01",
        "sf-h2",
        "sf-h2",
        1,
        0,
    )
    assert {(lk.a_if, lk.b_if) for lk in topo.links} == {
        ("sf-l0p2", "sf-s0p0"),
        ("sf-l0p3", "sf-s1p0"),
        ("sf-l1p2", "sf-s0p1"),
        ("sf-l1p3", "sf-s1p1"),
    }
    # Interface names fit Linux's 15 characters even at the largest sizes.
    big = Topology(256, 255, 254)
    assert max(len(n) for s in big.switches for n in s.interfaces) <= 15


def test_every_interface_and_address_once() -> None:
    topo = Topology(3, 2, 3)
    ifs = [n for s in topo.switches for n in s.interfaces]
    assert len(ifs) == len(set(ifs))
    assert all(n.startswith("sf-") for n in ifs)
    assert len({h.ip for h in topo.hosts}) == len({h.mac for h in topo.hosts}) == 9
    linked = {lk.a_if for lk in topo.links} | {lk.b_if for lk in topo.links}
    host_ports = {topo.leaf_if(h.leaf, h.port) for h in topo.hosts}
    assert linked | host_ports == set(ifs) and not linked & host_ports


def test_parse_and_bad_sizes() -> None:
    assert Topology.parse("3x2x4") == Topology(3, 2, 4)
    with pytest.raises(FabricError, match="LEAVESxSPINESxHOSTS_PER_LEAF"):
        Topology.parse("2x2")
    with pytest.raises(FabricError, match="spines = 0"):
        Topology(2, 0, 2)
    with pytest.raises(FabricError, match="hosts_per_leaf = 255"):
        Topology(2, 2, 255)
    with pytest.raises(FabricError, match="hosts_per_leaf \\+ spines"):
        Topology(2, 300, 250)


def test_config_loader_checks_the_written_config(tmp_path: Path) -> None:
    """The written config is the controller's: its own loader accepts it (the topology's checks
    included), and a link the fabric would not write (to a port the switch lacks) is refused,
    naming the field."""
    topo = Topology()
    cfg = config_of(topo, tmp_path)
    assert cfg.switch("spine1").thrift_port == 9393
    assert cfg.topology is not None and len(cfg.topology.hosts) == 4
    text = (tmp_path / "controller.toml").read_text()
    (tmp_path / "controller.toml").write_text(text.replace('b = "spine0:0"', 'b = "spine0:7"'))
    with pytest.raises(ConfigError, match=r"links\[0\]\.b"):
        load(tmp_path / "controller.toml")


def test_the_ack_class_on_every_switch_or_none(tmp_path: Path) -> None:
    """`ack_priority` is written for every switch (the fabric experiment's ACK-class dimension);
    the loader takes it against a program that has the class's table."""
    from symphony import p4names

    topo = Topology(2, 2, 2)
    p4info, blob = tmp_path / "p.txtpb", tmp_path / "p.json"
    p4info.write_text(
        f'tables {{ preamble {{ id: 1 name: "{p4names.ACK_CLASS}" alias: "ack_class" }} }}\n'
    )
    blob.write_text("{}")
    for on in (False, True):
        cfg = tmp_path / f"controller-{on}.toml"
        cfg.write_text(
            topo.controller_toml(
                database=tmp_path / "db", p4info=p4info, bmv2_json=blob, ack_priority=on
            )
        )
        switches = load(cfg).switches
        assert len(switches) == len(topo.switches)
        assert all(s.ack_priority is on for s in switches)
