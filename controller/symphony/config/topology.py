"""The fabric the config declares (switches, links port to port, hosts) and what follows from it.

Pure functions, no I/O:

- `routes_for(topology, down)`: every switch's routes, one /32 per host: on the host's own switch
  its port; elsewhere every equal-cost shortest next-hop port (breadth-first search on the switch
  graph without the ``down`` switches and their links). One port is a plain route, several an
  ECMP group (switch/desired.py turns them into entries).
- `path_switches(topology, switches)`: the switches on any shortest path between two of these
  (the hosts' switches of a job): the switches a job must be programmed on.
- `check(topology, ports)`: the refusals, each a ConfigError naming the field (docs/controller.md
  "Topology"): links to unknown switches or ports, a port used twice, a host listed twice, a
  switch no host can reach, and equal-cost paths the hash cannot serve.

Why "the hash cannot serve": every switch hashes a frame's 5-tuple with the same CRC-32 and takes
the same low bits as the bucket (model/ecmp.py), so a frame's bucket is the same at every hop.
Where a path makes two equal-cost choices in a row, the second switch only sees the buckets the
first one sent to it, and with bucket b -> members[b % n] some of its members may get no bucket
at all: those paths would never carry a frame (ECMP polarisation; e.g. a three-tier fabric with
two-way choices at two tiers, or a group of more members than ECMP_BUCKETS). `check` follows the
bucket sets from every switch that has hosts towards every host and refuses a member port that
no bucket reaches.
"""

from __future__ import annotations

import ipaddress
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

from symphony.config.errors import ConfigError
from symphony.model.ecmp import bucket_members
from symphony.sizes import ECMP_BUCKETS, ECMP_GROUPS_MAX

# Every switch is up.
NONE_DOWN: frozenset[str] = frozenset()


@dataclass(frozen=True, order=True)
class Port:
    """One end of a link: a switch's port."""

    switch: str
    port: int

    def __str__(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True)
class Link:
    a: Port
    b: Port


@dataclass(frozen=True)
class Host:
    name: str
    address: ipaddress.IPv4Address
    switch: str
    port: int


@dataclass(frozen=True, order=True)
class NextHops:
    """Packets to ``prefix`` leave on one of ``ports`` (ascending; several: an ECMP group)."""

    prefix: ipaddress.IPv4Network
    ports: tuple[int, ...]

    @property
    def ecmp(self) -> bool:
        return len(self.ports) > 1


# A switch's routes derived from the topology, by prefix.
Fib = tuple[NextHops, ...]


@dataclass(frozen=True)
class Topology:
    """``switches`` in the config's order; ``links`` and ``hosts`` in the file's order (their
    index is the one error messages name)."""

    switches: tuple[str, ...]
    links: tuple[Link, ...]
    hosts: tuple[Host, ...]

    @cached_property
    def _by_ref(self) -> dict[str, Host]:
        out = {h.name: h for h in self.hosts}
        out.update((str(h.address), h) for h in self.hosts)
        return out

    def host(self, ref: str) -> Host | None:
        """The host named ``ref``, or whose address is ``ref`` (dotted quad)."""
        return self._by_ref.get(ref)

    def neighbours(self, switch: str) -> tuple[tuple[int, Port], ...]:
        """(this switch's port, the port at the other end) of each of its links, by port."""
        out = [(lk.a.port, lk.b) for lk in self.links if lk.a.switch == switch]
        out += [(lk.b.port, lk.a) for lk in self.links if lk.b.switch == switch]
        return tuple(sorted(out))

    @cached_property
    def _by_switch(self) -> dict[str, tuple[Host, ...]]:
        out: dict[str, list[Host]] = {}
        for h in self.hosts:
            out.setdefault(h.switch, []).append(h)
        return {sw: tuple(hs) for sw, hs in out.items()}

    def hosts_on(self, switch: str) -> tuple[Host, ...]:
        return self._by_switch.get(switch, ())

    @cached_property
    def host_routes(self) -> dict[str, ipaddress.IPv4Network]:
        """Host name -> its /32."""
        return {h.name: ipaddress.IPv4Network(h.address) for h in self.hosts}

    def neighbour_labels(self, switch: str) -> tuple[str, ...]:
        """What is plugged into each port, by port: ``2=spine1:0`` (a link), ``0=h1`` (a host)."""
        items = [(port, f"{port}={peer}") for port, peer in self.neighbours(switch)]
        items += [(h.port, f"{h.port}={h.name}") for h in self.hosts_on(switch)]
        return tuple(label for _, label in sorted(items))


def _adjacency(topo: Topology, down: frozenset[str]) -> dict[str, list[tuple[int, str]]]:
    """Switch -> (its port, the neighbour there), up switches and links between them only."""
    adj: dict[str, list[tuple[int, str]]] = {s: [] for s in topo.switches if s not in down}
    for link in topo.links:
        if link.a.switch in adj and link.b.switch in adj:
            adj[link.a.switch].append((link.a.port, link.b.switch))
            adj[link.b.switch].append((link.b.port, link.a.switch))
    for ports in adj.values():
        ports.sort()
    return adj


def _distances(adj: Mapping[str, list[tuple[int, str]]], origin: str) -> dict[str, int]:
    """Hops from every switch that reaches ``origin`` to it (breadth-first)."""
    dist = {origin: 0}
    queue = deque([origin])
    while queue:
        here = queue.popleft()
        for _, there in adj[here]:
            if there not in dist:
                dist[there] = dist[here] + 1
                queue.append(there)
    return dist


def _toward(
    adj: Mapping[str, list[tuple[int, str]]], dist: Mapping[str, int], switch: str
) -> tuple[int, ...]:
    """The ports of ``switch`` on a shortest path to the origin of ``dist`` (ascending)."""
    return tuple(p for p, n in adj[switch] if dist.get(n, -1) == dist[switch] - 1)


def routes_for(topo: Topology, down: frozenset[str] = NONE_DOWN) -> dict[str, Fib]:
    """Every up switch's routes on the topology without the ``down`` switches and their links.

    A host on a down switch, or on a switch an up switch no longer reaches, has no route there:
    its packets are dropped at the first switch instead of being sent towards a dead end.
    """
    adj = _adjacency(topo, down)
    prefix = topo.host_routes
    out: dict[str, list[NextHops]] = {s: [] for s in adj}
    for dest in adj:
        hosts = topo.hosts_on(dest)
        if not hosts:
            continue
        dist = _distances(adj, dest)
        for sw, fib in out.items():
            if sw == dest:
                fib += [NextHops(prefix[h.name], (h.port,)) for h in hosts]
            elif sw in dist:
                ports = _toward(adj, dist, sw)
                fib += [NextHops(prefix[h.name], ports) for h in hosts]
    # By address (host routes are all /32): a deterministic order, cheaper than comparing networks.
    return {
        sw: tuple(sorted(fib, key=lambda nh: int(nh.prefix.network_address)))
        for sw, fib in out.items()
    }


def path_switches(topo: Topology, ends: Iterable[str]) -> tuple[str, ...]:
    """The switches on any shortest path between two of ``ends`` (the switches of a job's
    hosts), ``ends`` included, in the config's order; the whole topology counts (a switch that
    is down now is still on the job's path when it returns)."""
    ends = sorted(set(ends))
    adj = _adjacency(topo, NONE_DOWN)
    dist = {e: _distances(adj, e) for e in ends}
    on = set(ends)
    for u, v in combinations(ends, 2):
        du, dv = dist[u], dist[v]
        if v not in du:
            continue  # not connected: check() refuses such a topology
        on.update(w for w in du if w in dv and du[w] + dv[w] == du[v])
    return tuple(s for s in topo.switches if s in on)


# ---- checks ----------------------------------------------------------------------------------


def check(topo: Topology, ports: Mapping[str, frozenset[int]]) -> None:
    """Refuse a topology the controller cannot route or the data plane cannot serve.

    ``ports``: each switch's declared ports (``switches[].ports``). Raises ConfigError naming
    the field."""
    index = {s: i for i, s in enumerate(topo.switches)}
    used: dict[Port, str] = {}

    def end(where: str, p: Port, where_switch: str | None = None) -> None:
        if p.switch not in index:
            raise ConfigError(
                where_switch or where,
                f"unknown switch {p.switch!r} (known: {', '.join(topo.switches)})",
            )
        have = ports[p.switch]
        if not have:
            raise ConfigError(
                f"switches[{index[p.switch]}].ports",
                f"is required in a topology: {p.switch} must declare the ports that links and"
                " hosts use",
            )
        if p.port not in have:
            raise ConfigError(
                where,
                f"{p.switch} has no port {p.port} (its ports: "
                f"{', '.join(str(x) for x in sorted(have))})",
            )
        if p in used:
            raise ConfigError(where, f"port {p} is already used by {used[p]}")
        used[p] = where

    for i, link in enumerate(topo.links):
        end(f"links[{i}].a", link.a)
        end(f"links[{i}].b", link.b)
        if link.a.switch == link.b.switch:
            raise ConfigError(
                f"links[{i}].b", f"a link joins two switches; both ends are on {link.a.switch}"
            )
    names: dict[str, int] = {}
    addresses: dict[ipaddress.IPv4Address, int] = {}
    for i, host in enumerate(topo.hosts):
        if host.name in names:
            raise ConfigError(
                f"hosts[{i}].name",
                f"host {host.name!r} is already hosts[{names[host.name]}] (a host is on one"
                " switch port)",
            )
        names[host.name] = i
        if host.address in addresses:
            raise ConfigError(
                f"hosts[{i}].address",
                f"{host.address} is already the address of hosts[{addresses[host.address]}]"
                f" ({topo.hosts[addresses[host.address]].name})",
            )
        addresses[host.address] = i
        end(f"hosts[{i}].port", Port(host.switch, host.port), f"hosts[{i}].switch")
    _check_connected(topo, index)
    _check_groups(routes_for(topo), index)
    _check_buckets(topo)


def _check_connected(topo: Topology, index: Mapping[str, int]) -> None:
    if not topo.hosts:
        raise ConfigError("hosts", "a topology needs hosts: the routes are derived from them")
    adj = _adjacency(topo, NONE_DOWN)
    first = topo.hosts[0]
    reached = _distances(adj, first.switch)
    for sw in topo.switches:
        if sw not in reached:
            raise ConfigError(
                f"switches[{index[sw]}].name",
                f"no host can reach {sw}: no chain of links joins it to {first.switch}"
                f" (where {first.name} is)",
            )


def _check_groups(fibs: Mapping[str, Fib], index: Mapping[str, int]) -> None:
    for sw, fib in fibs.items():
        groups = {nh.ports for nh in fib if nh.ecmp}
        if len(groups) > ECMP_GROUPS_MAX:
            raise ConfigError(
                f"switches[{index[sw]}].name",
                f"{sw} needs {len(groups)} ECMP groups, more than the member table holds"
                f" ({ECMP_GROUPS_MAX} groups of {ECMP_BUCKETS} buckets)",
            )


def _check_buckets(topo: Topology) -> None:
    """Follow the bucket sets from every switch with hosts towards every host's switch: every
    member port of every group on the way must get at least one bucket."""
    adj = _adjacency(topo, NONE_DOWN)
    link_of: dict[Port, int] = {}
    for i, link in enumerate(topo.links):
        link_of[link.a] = link_of[link.b] = i
    peer = {(sw, p): n for sw in adj for p, n in adj[sw]}
    sources = sorted({h.switch for h in topo.hosts})
    for dest in sources:
        dist = _distances(adj, dest)
        toward = {sw: _toward(adj, dist, sw) for sw in dist if sw != dest}
        for src in sources:
            if src == dest:
                continue
            level: dict[str, set[int]] = {src: set(range(ECMP_BUCKETS))}
            while level:
                nxt: dict[str, set[int]] = {}
                for sw, buckets in sorted(level.items()):
                    if sw == dest:
                        continue
                    members = toward[sw]
                    if len(members) > ECMP_BUCKETS:  # members past the buckets get none
                        raise ConfigError(
                            f"links[{link_of[Port(sw, members[ECMP_BUCKETS])]}]",
                            _unserved(sw, members[ECMP_BUCKETS], members, src, dest, buckets),
                        )
                    by_bucket = bucket_members(members)
                    for port in members:
                        got = {b for b in buckets if by_bucket[b] == port}
                        if not got:
                            raise ConfigError(
                                f"links[{link_of[Port(sw, port)]}]",
                                _unserved(sw, port, members, src, dest, buckets),
                            )
                        nxt.setdefault(peer[(sw, port)], set()).update(got)
                level = nxt


def _unserved(
    sw: str, port: int, members: tuple[int, ...], src: str, dest: str, buckets: set[int]
) -> str:
    why = (
        f"more equal-cost ports ({len(members)}) than the {ECMP_BUCKETS} hash buckets of a group"
        if len(members) > ECMP_BUCKETS
        else f"frames from {src} reach {sw} only in hash buckets {sorted(buckets)}, and with"
        f" bucket b -> members[b % {len(members)}] none of them picks port {port}"
    )
    return (
        f"{sw}:{port} is an equal-cost next hop from {src} towards {dest} that no frame would"
        f" take: {why} (every switch hashes a frame into the same bucket; docs/controller.md"
        " 'Topology')"
    )
