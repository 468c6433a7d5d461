"""The topology in the config: routes and ECMP groups derived from it, a job's switches from its
hosts, the routes without a down switch, and every refused topology naming its field."""

from __future__ import annotations

import importlib
import ipaddress
import itertools
from pathlib import Path

import pytest

from symphony import config, p4names
from symphony.config import ConfigError, topology
from symphony.config.topology import NextHops, path_switches, routes_for
from symphony.model.ecmp import bucket_members
from symphony.sizes import ECMP_BUCKETS
from symphony.switch import desired

ROOT = Path(__file__).resolve().parents[1]
_ADDRESSES = itertools.count(19000)  # each switch its own P4Runtime address


def switch(name: str, ports: int | list[int], **kw):
    numbers = range(ports) if isinstance(ports, int) else ports
    out = {
        "name": name,
        "address": f"127.0.0.1:{next(_ADDRESSES)}",
        "device_id": 0,
        "target": "bmv2",
        "ports": [{"port": p} for p in numbers],
    }
    out.update(kw)
    return out


def host(name: str, address: str, sw: str, port: int):
    return {"name": name, "address": address, "switch": sw, "port": port}


def leaf_spine(leaves: int = 2, spines: int = 2, hosts_per_leaf: int = 2) -> dict:
    """Leaf i: hosts on ports 0.., spine j on port hosts_per_leaf + j; spine j: leaf i on port i."""
    raw: dict = {"switches": [], "links": [], "hosts": []}
    for i in range(1, leaves + 1):
        raw["switches"].append(switch(f"leaf{i}", hosts_per_leaf + spines))
        for k in range(hosts_per_leaf):
            raw["hosts"].append(host(f"h{i}{k}", f"10.0.{i}.{k + 1}", f"leaf{i}", k))
    for j in range(1, spines + 1):
        raw["switches"].append(switch(f"spine{j}", leaves))
        for i in range(1, leaves + 1):
            raw["links"].append(
                {"a": f"leaf{i}:{hosts_per_leaf + j - 1}", "b": f"spine{j}:{i - 1}"}
            )
    return raw


def parse(tmp_path: Path, raw: dict):
    (tmp_path / "p4info.txtpb").write_text("")
    (tmp_path / "bmv2.json").write_text("{}")
    full = {
        "database": "jobs.db",
        "pipelines": {"bmv2": {"p4info": "p4info.txtpb", "device_config": "bmv2.json"}},
        **raw,
    }
    return config.parse(full, base_dir=tmp_path)


def net(text: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(text)


def fib_of(cfg, down=frozenset()):
    return {
        sw: {str(nh.prefix): nh.ports for nh in fib}
        for sw, fib in routes_for(cfg.topology, down).items()
    }


# ---- derivation ------------------------------------------------------------------------------


def test_leaf_spine_routes_and_ecmp_groups(tmp_path):
    cfg = parse(tmp_path, leaf_spine())
    fib = fib_of(cfg)
    # Own hosts on their ports; the other leaf's hosts over both spines (ports 2 and 3).
    assert fib["leaf1"] == {
        "10.0.1.1/32": (0,),
        "10.0.1.2/32": (1,),
        "10.0.2.1/32": (2, 3),
        "10.0.2.2/32": (2, 3),
    }
    # A spine has one way down to each leaf.
    assert fib["spine2"] == {
        "10.0.1.1/32": (0,),
        "10.0.1.2/32": (0,),
        "10.0.2.1/32": (1,),
        "10.0.2.2/32": (1,),
    }


def test_routes_without_a_down_spine_leave_the_other(tmp_path):
    cfg = parse(tmp_path, leaf_spine())
    fib = fib_of(cfg, frozenset({"spine1"}))
    assert set(fib) == {"leaf1", "leaf2", "spine2"}
    assert fib["leaf1"]["10.0.2.1/32"] == (3,) and fib["leaf2"]["10.0.1.2/32"] == (3,)
    assert fib["spine2"] == fib_of(cfg)["spine2"]
    # Back: the groups again.
    assert fib_of(cfg, frozenset())["leaf1"]["10.0.2.1/32"] == (2, 3)


def test_hosts_of_a_down_leaf_have_no_route_anywhere(tmp_path):
    cfg = parse(tmp_path, leaf_spine())
    fib = fib_of(cfg, frozenset({"leaf2"}))
    assert set(fib["leaf1"]) == {"10.0.1.1/32", "10.0.1.2/32"}
    assert set(fib["spine1"]) == {"10.0.1.1/32", "10.0.1.2/32"}


def test_only_shortest_paths_and_parallel_links_are_members(tmp_path):
    # a - b - c, plus a longer way a - x - y - c; a and b joined by two links.
    raw = {
        "switches": [
            switch("a", 4),
            switch("b", 3),
            switch("c", 3),
            switch("x", 2),
            switch("y", 2),
        ],
        "links": [
            {"a": "a:1", "b": "b:0"},
            {"a": "a:2", "b": "b:1"},
            {"a": "b:2", "b": "c:0"},
            {"a": "a:3", "b": "x:0"},
            {"a": "x:1", "b": "y:0"},
            {"a": "y:1", "b": "c:1"},
        ],
        "hosts": [host("ha", "10.1.0.1", "a", 0), host("hc", "10.1.0.3", "c", 2)],
    }
    cfg = parse(tmp_path, raw)
    fib = fib_of(cfg)
    assert fib["a"]["10.1.0.3/32"] == (1, 2)  # both parallel links, not the long way (3)
    assert fib["x"]["10.1.0.3/32"] == (1,) and fib["x"]["10.1.0.1/32"] == (0,)
    assert fib["y"]["10.1.0.3/32"] == (1,)
    # b is down: the long way is now the shortest.
    assert fib_of(cfg, frozenset({"b"}))["a"]["10.1.0.3/32"] == (3,)
    # A job on ha and hc crosses a, b, c only; one host: its switch alone.
    assert path_switches(cfg.topology, ["a", "c"]) == ("a", "b", "c")
    assert path_switches(cfg.topology, ["c"]) == ("c",)


def test_path_switches_of_a_leaf_spine_job(tmp_path):
    cfg = parse(tmp_path, leaf_spine(leaves=3))
    t = cfg.topology
    assert path_switches(t, ["leaf1"]) == ("leaf1",)
    assert path_switches(t, ["leaf1", "leaf3"]) == ("leaf1", "leaf3", "spine1", "spine2")
    assert path_switches(t, ["leaf2", "leaf2"]) == ("leaf2",)


def test_host_lookup_by_name_or_address(tmp_path):
    t = parse(tmp_path, leaf_spine()).topology
    assert t.host("h21").address == ipaddress.IPv4Address("10.0.2.2")
    assert t.host("10.0.2.2").name == "h21"
    assert t.host("h99") is None and t.host("10.9.9.9") is None
    assert t.neighbours("spine1") == (
        (0, topology.Port("leaf1", 2)),
        (1, topology.Port("leaf2", 2)),
    )


def test_the_leaf_spine_example_loads(tmp_path):
    (tmp_path / "build/bmv2").mkdir(parents=True)
    (tmp_path / "build/bmv2/symphony.p4info.txtpb").write_text("")
    (tmp_path / "build/bmv2/symphony.json").write_text("{}")
    (tmp_path / "examples").mkdir()
    path = tmp_path / "examples/leaf-spine.toml"
    path.write_text((ROOT / "examples/leaf-spine.toml").read_text())
    cfg = config.load(path)
    assert cfg.switch_names == ("leaf1", "leaf2", "spine1", "spine2")
    assert [h.name for h in cfg.topology.hosts] == ["h1", "h2", "h3", "h4"]
    assert fib_of(cfg)["leaf1"]["10.0.2.1/32"] == (2, 3)


def test_a_config_without_topology_has_none(tmp_path):
    cfg = parse(
        tmp_path, {"switches": [switch("s1", 2, routes=[{"prefix": "10.0.0.0/24", "port": 1}])]}
    )
    assert cfg.topology is None
    assert [r.port for r in cfg.switch("s1").routes] == [1]


def test_explicit_routes_stay_beside_the_derived_ones(tmp_path):
    raw = leaf_spine()
    raw["switches"][0]["routes"] = [{"prefix": "192.168.0.0/16", "port": 2}]
    cfg = parse(tmp_path, raw)
    specs = desired.base_entries(cfg.switch("leaf1"), routes_for(cfg.topology)["leaf1"])
    lpm = [s for s in specs if s.table == p4names.IPV4_LPM]
    assert (lpm[0].match["dst_addr"], lpm[0].params) == ((0xC0A80000, 16), {"port": 2})
    assert len(lpm) == 5


# ---- entries ---------------------------------------------------------------------------------


def test_ecmp_entries_follow_the_spec(tmp_path):
    """ECMP_SPEC: one next hop -> set_egress_port; several -> set_ecmp_group + ECMP_BUCKETS
    members, bucket b -> members[b % n] (ascending), groups 1.. per distinct member set."""
    fib = (
        NextHops(net("10.0.0.1/32"), (0,)),
        NextHops(net("10.0.0.2/32"), (5, 7, 9)),
        NextHops(net("10.0.0.3/32"), (2, 3)),
        NextHops(net("10.0.0.4/32"), (5, 7, 9)),
    )
    specs = desired.fib_entries(fib)
    lpm = {s.match["dst_addr"][0] & 0xFF: (s.action, s.params) for s in specs
           if s.table == p4names.IPV4_LPM}  # fmt: skip
    assert lpm == {
        1: (p4names.SET_EGRESS_PORT, {"port": 0}),
        2: (p4names.SET_ECMP_GROUP, {"group": 2}),  # (2, 3) < (5, 7, 9): group 1 is (2, 3)
        3: (p4names.SET_ECMP_GROUP, {"group": 1}),
        4: (p4names.SET_ECMP_GROUP, {"group": 2}),
    }
    members = [s for s in specs if s.table == p4names.ECMP_MEMBER]
    assert len(members) == 2 * ECMP_BUCKETS
    g2 = {s.match["bucket"]: s.params["port"] for s in members if s.match["group"] == 2}
    assert g2 == {b: (5, 7, 9)[b % 3] for b in range(ECMP_BUCKETS)}
    assert tuple(g2[b] for b in range(ECMP_BUCKETS)) == bucket_members((9, 5, 7))
    assert all(s.action == p4names.SET_EGRESS_PORT for s in members)


def test_base_entries_without_fib_are_as_before(tmp_path):
    cfg = parse(
        tmp_path, {"switches": [switch("s1", 2, routes=[{"prefix": "10.0.0.0/24", "port": 1}])]}
    )
    specs = desired.base_entries(cfg.switch("s1"))
    assert not [s for s in specs if s.table == p4names.ECMP_MEMBER]
    assert [s.params for s in specs if s.table == p4names.IPV4_LPM] == [{"port": 1}]


# ---- refusals --------------------------------------------------------------------------------


def _edit(f):
    def run():
        raw = leaf_spine()
        f(raw)
        return raw

    return run


def _three_tier() -> dict:
    """Two pods (edge e, aggregation a) under two cores: two-way choices at the edge and at the
    aggregation switches, so the aggregation's second choice sees half the buckets only."""
    raw: dict = {"switches": [], "links": [], "hosts": []}
    raw["switches"] += [switch("e1", 3), switch("e2", 3)]
    raw["switches"] += [switch(f"a{i}", 3) for i in range(1, 5)]
    raw["switches"] += [switch("c1", 4), switch("c2", 4)]
    raw["links"] += [{"a": "e1:1", "b": "a1:0"}, {"a": "e1:2", "b": "a2:0"}]
    raw["links"] += [{"a": "e2:1", "b": "a3:0"}, {"a": "e2:2", "b": "a4:0"}]
    for i in range(1, 5):
        raw["links"] += [{"a": f"a{i}:1", "b": f"c1:{i - 1}"}, {"a": f"a{i}:2", "b": f"c2:{i - 1}"}]
    raw["hosts"] = [host("x", "10.2.0.1", "e1", 0), host("y", "10.2.0.2", "e2", 0)]
    return raw


def _too_wide() -> dict:
    """17 parallel links: a group of 17 members, one more than the buckets."""
    n = ECMP_BUCKETS + 1
    raw = {
        "switches": [switch("a", n + 1), switch("b", n + 1)],
        "links": [{"a": f"a:{i + 1}", "b": f"b:{i + 1}"} for i in range(n)],
        "hosts": [host("x", "10.3.0.1", "a", 0), host("y", "10.3.0.2", "b", 0)],
    }
    return raw


def _setter(path, value):
    def f(raw):
        *head, last = path
        obj = raw
        for k in head:
            obj = obj[k]
        obj[last] = value

    return _edit(f)


REFUSED = [
    ("links[0].a", _setter(("links", 0, "a"), "leaf9:2"), "unknown switch 'leaf9'"),
    ("links[1].b", _setter(("links", 1, "b"), "spine1:7"), "spine1 has no port 7"),
    ("links[0].a", _setter(("links", 0, "a"), "leaf1"), "is not switch:port"),
    ("links[0].a", _setter(("links", 0, "a"), "leaf1:x"), "is not switch:port"),
    ("links[0].a", _setter(("links", 0, "a"), "leaf1:999"), "not in 0.."),
    ("links[0].bogus", _setter(("links", 0, "bogus"), 1), "unknown key"),
    # two links on one port
    (
        "links[1].a",
        _setter(("links", 1, "a"), "leaf1:2"),
        "port leaf1:2 is already used by links[0].a",
    ),
    # a link and a host on one port
    (
        "hosts[0].port",
        _setter(("hosts", 0, "port"), 2),
        "port leaf1:2 is already used by links[0].a",
    ),
    ("links[0].b", _setter(("links", 0, "b"), "leaf1:3"), "both ends are on leaf1"),
    # a host on two switches
    (
        "hosts[4].name",
        _edit(lambda r: r["hosts"].append(host("h10", "10.0.9.9", "leaf2", 2))),
        "host 'h10' is already hosts[0]",
    ),
    (
        "hosts[1].address",
        _setter(("hosts", 1, "address"), "10.0.1.1"),
        "already the address of hosts[0]",
    ),
    ("hosts[0].address", _setter(("hosts", 0, "address"), "10.0.1.256"), "not an IPv4 address"),
    ("hosts[0].address", _setter(("hosts", 0, "address"), "224.0.0.1"), "not a unicast"),
    ("hosts[0].name", _setter(("hosts", 0, "name"), "10.0.0.9"), "is an IPv4 address"),
    ("hosts[0].switch", _setter(("hosts", 0, "switch"), "leaf9"), "unknown switch 'leaf9'"),
    ("hosts[0].port", _setter(("hosts", 0, "port"), 9), "leaf1 has no port 9"),
    ("switches[2].ports", _setter(("switches", 2, "ports"), []), "is required in a topology"),
    (
        "switches[4].name",
        _edit(lambda r: r["switches"].append(switch("spine3", 2))),
        "no host can reach spine3",
    ),
    ("hosts", _setter(("hosts",), []), "a topology needs hosts"),
    (
        "switches[0].routes[0].prefix",
        _setter(("switches", 0, "routes"), [{"prefix": "10.0.2.1/32", "port": 2}]),
        "host h20's route",
    ),
    (
        "switches[0].links",
        _edit(lambda r: r["switches"][0].__setitem__("links", [])),
        "top-level key",
    ),
    ("links[9]", _three_tier, "no frame would take"),  # a3:2 - c2
    ("links[16]", _too_wide, "more equal-cost ports (17) than the 16 hash buckets"),
]


@pytest.mark.parametrize(
    ("field", "make", "words"), REFUSED, ids=[f"{r[0]}:{r[2]}" for r in REFUSED]
)
def test_bad_topology_names_the_field(tmp_path, field, make, words):
    with pytest.raises(ConfigError) as err:
        parse(tmp_path, make())
    assert err.value.field == field, str(err.value)
    assert words in str(err.value)


def test_the_three_tier_polarisation_is_explained(tmp_path):
    with pytest.raises(ConfigError) as err:
        parse(tmp_path, _three_tier())
    # a3 gets the even buckets from e2 and sends every one of them to its first core.
    assert "a3:2 is an equal-cost next hop from e2 towards e1" in str(err.value)
    assert "[0, 2, 4, 6, 8, 10, 12, 14]" in str(err.value)


def test_two_links_per_spine_are_served(tmp_path):
    """Leaves with 2 links to each of 2 spines (4 members), spines with 2 links down: the spine's
    2-way choice sees buckets b % 4 in {0, 1} or {2, 3}, both parities: every path is used."""
    raw = {
        "switches": [switch("l1", 5), switch("l2", 5), switch("s1", 4), switch("s2", 4)],
        "links": [],
        "hosts": [host("x", "10.4.0.1", "l1", 0), host("y", "10.4.0.2", "l2", 0)],
    }
    for li, leaf in enumerate(("l1", "l2")):
        for si, spine in enumerate(("s1", "s2")):
            for k in range(2):
                raw["links"].append({"a": f"{leaf}:{1 + 2 * si + k}", "b": f"{spine}:{2 * li + k}"})
    fib = fib_of(parse(tmp_path, raw))
    assert fib["l1"]["10.4.0.2/32"] == (1, 2, 3, 4) and fib["s1"]["10.4.0.2/32"] == (2, 3)


def test_too_many_ecmp_groups_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(topology, "ECMP_GROUPS_MAX", 1)
    raw = {  # a reaches b over (1, 2) and c over (3, 4): two groups
        "switches": [switch("a", 5), switch("b", 3), switch("c", 3)],
        "links": [
            {"a": "a:1", "b": "b:0"},
            {"a": "a:2", "b": "b:1"},
            {"a": "a:3", "b": "c:0"},
            {"a": "a:4", "b": "c:1"},
        ],
        "hosts": [
            host("x", "10.5.0.1", "a", 0),
            host("y", "10.5.0.2", "b", 2),
            host("z", "10.5.0.3", "c", 2),
        ],
    }
    with pytest.raises(ConfigError) as err:
        parse(tmp_path, raw)
    assert err.value.field == "switches[0].name" and "needs 2 ECMP groups" in str(err.value)


def test_too_many_routes_refused(tmp_path, monkeypatch):
    load = importlib.import_module("symphony.config.load")  # the module, not the function
    monkeypatch.setattr(load, "ROUTE_TABLE_SIZE", 5)
    raw = leaf_spine()
    raw["switches"][0]["routes"] = [
        {"prefix": "192.168.0.0/24", "port": 2},
        {"prefix": "192.168.1.0/24", "port": 2},
    ]
    with pytest.raises(ConfigError) as err:
        parse(tmp_path, raw)
    assert err.value.field == "switches[0].routes"
    assert "needs 6 routes (2 explicit + 4 host routes)" in str(err.value)
