"""A switch lost and back, without bmv2: the pure route recomputation, the write order, the
Fabric's bookkeeping, and the daemon's wiring (Leading: sessions, Fabric, reconnect) against
stand-in switches at the P4Runtime boundary (finsy's Switch, the raw reads, the P4Info, the
register interface), which keep their tables across connections and can be killed and
restarted like a simple_switch_grpc process. The same behaviour on real bmv2 switches is the
fabric integration test's (issue 31, item 6)."""

from __future__ import annotations

import asyncio
import ipaddress
from types import SimpleNamespace

import pytest
from finsy.proto import p4r
from test_topology import leaf_spine
from test_topology import parse as parse_topology

from symphony import daemon, p4names, telemetry
from symphony.config.topology import NextHops, routes_for
from symphony.jobs.manager import JobManager
from symphony.jobs.store import JobStore
from symphony.model.switch_model import JobState
from symphony.sizes import ECMP_BUCKETS
from symphony.switch import entries, fabric
from symphony.switch import session as session_mod
from symphony.switch.session import write_plan

# ---- pure: the routes, the write order --------------------------------------------------------


def test_a_down_switch_gets_the_routes_it_needs_on_return(tmp_path):
    topo = parse_topology(tmp_path, leaf_spine()).topology
    got = fabric.fibs(topo, frozenset({"spine1"}))
    # The others route around it; its own routes are those it must hold when it is back.
    assert got["leaf1"] == routes_for(topo, frozenset({"spine1"}))["leaf1"]
    assert got["spine1"] == routes_for(topo)["spine1"]
    two = fabric.fibs(topo, frozenset({"spine1", "leaf2"}))
    # spine1 back while leaf2 is still down: no route to leaf2's hosts.
    assert [str(nh.prefix) for nh in two["spine1"]] == ["10.0.1.1/32", "10.0.1.2/32"]


def _entry(table_id: int, n: int) -> p4r.TableEntry:
    e = p4r.TableEntry(table_id=table_id)
    e.match.add(field_id=1, exact=p4r.FieldMatch.Exact(value=bytes([n])))
    return e


def test_write_plan_makes_before_it_breaks():
    names = {1: p4names.IPV4_LPM, 2: p4names.ECMP_MEMBER, 3: p4names.JOB_PARAMS,
             4: p4names.JOB_BY_TAG, 5: p4names.LOG_P}  # fmt: skip
    d = entries.Diff(
        delete=[_entry(2, 1), _entry(3, 1), _entry(1, 1), _entry(4, 1)],
        modify=[_entry(1, 2)],
        insert=[_entry(4, 2), _entry(2, 2), _entry(5, 1), _entry(3, 2)],
    )
    plan = write_plan(d, lambda e: names[e.table_id])
    tables = [[names[e.table_id] for e in step] for step in plan]
    assert tables == [
        # deletes: classifiers, then parameters, then the rest; not the members yet
        [p4names.JOB_BY_TAG, p4names.JOB_PARAMS, p4names.IPV4_LPM],
        [p4names.ECMP_MEMBER],  # new groups' members before the routes that use them
        [p4names.IPV4_LPM],  # modifies
        [p4names.LOG_P, p4names.JOB_PARAMS, p4names.JOB_BY_TAG],  # classifiers last
        [p4names.ECMP_MEMBER],  # members of groups no route uses any more
    ]


# ---- Fabric bookkeeping with stand-in sessions --------------------------------------------------


class RoutedSession:
    def __init__(self, name: str, ready: bool = True, fail: bool = False) -> None:
        self.name = name
        self.is_ready = ready
        self.fail = fail
        self.fib: tuple[NextHops, ...] = ()
        self.syncs: list[object] = []

    def set_fib(self, fib):
        if fib == self.fib:
            return False
        self.fib = fib
        return True

    async def sync(self, job_ids=None):
        self.syncs.append(job_ids)
        if self.fail:
            raise RuntimeError("write failed")
        return 1


def _ports(session: RoutedSession, dst: str) -> tuple[int, ...]:
    return {str(nh.prefix): nh.ports for nh in session.fib}[dst]


def test_fabric_routes_around_a_down_switch_and_back(tmp_path):
    topo = parse_topology(tmp_path, leaf_spine()).topology
    full = routes_for(topo)

    async def main():
        s = {n: RoutedSession(n) for n in topo.switches}
        s["leaf2"].is_ready = False  # reconnecting, say: gets its routes, writes them later
        for n, x in s.items():
            x.fib = full[n]
        f = fabric.Fabric(topo, s)
        f.switch_down("spine1")
        await f.settle()
        assert f.down == {"spine1"} and f.reroutes == 1
        assert _ports(s["leaf1"], "10.0.2.1/32") == (3,)
        assert _ports(s["leaf2"], "10.0.1.1/32") == (3,)
        # Only ready sessions whose routes changed write, and only their base entries.
        assert s["leaf1"].syncs == [()] and s["leaf2"].syncs == []
        assert s["spine2"].syncs == [] and s["spine1"].syncs == []
        f.switch_down("spine1")  # its session retrying: nothing new
        assert f.reroutes == 1
        f.switch_up("spine2")  # never down: nothing
        assert f.reroutes == 1
        f.switch_up("spine1")
        await f.settle()
        assert f.down == set() and _ports(s["leaf1"], "10.0.2.1/32") == (2, 3)
        assert s["leaf1"].syncs == [(), ()]
        s["leaf1"].fail = True  # a failed write is logged; the session's next sync covers it
        f.switch_down("spine2")
        await f.settle()
        f.close()  # the controller stops its sessions: their channels closing is no switch lost
        f.switch_down("leaf1")
        assert f.down == {"spine2"} and f.reroutes == 3

    asyncio.run(main())


# ---- the daemon's wiring against stand-in switches ----------------------------------------------


class Table:
    def __init__(self, tid: int, name: str) -> None:
        self.id, self.name, self.is_const = tid, name, False


class Tables:
    def __init__(self) -> None:
        self._all = [Table(i + 1, n) for i, n in enumerate(p4names.TABLES)]
        self._by = {t.name: t for t in self._all} | {t.id: t for t in self._all}

    def __getitem__(self, key):
        return self._by[key]

    def __iter__(self):
        return iter(self._all)


SCHEMA = SimpleNamespace(tables=Tables())
ACTIONS = {name: i + 1 for i, name in enumerate((*p4names.ACTIONS, "drop"))}
ACTION_NAMES = {i: name for name, i in ACTIONS.items()}


def fake_encode(spec, schema) -> p4r.TableEntry:
    """A TableEntry that keeps the spec's names and values readable (instead of a P4Info's)."""
    e = p4r.TableEntry(table_id=schema.tables[spec.table].id, priority=spec.priority)
    e.is_default_action = spec.is_default
    for i, (k, v) in enumerate(sorted(spec.match.items())):
        e.match.add(field_id=i + 1, exact=p4r.FieldMatch.Exact(value=f"{k}={v!r}".encode()))
    e.action.action.action_id = ACTIONS.get(spec.action, 99)
    for i, (k, v) in enumerate(sorted(spec.params.items())):
        e.action.action.params.add(param_id=i + 1, value=f"{k}={v!r}".encode())
    return e


def decoded(e: p4r.TableEntry):
    """(table, {match}, action, {params}) of a fake-encoded entry."""

    def kv(raw: bytes):
        k, _, v = raw.decode().partition("=")
        return k, eval(v)  # our own repr() (fake_encode)

    return (
        SCHEMA.tables[e.table_id].name,
        dict(kv(m.exact.value) for m in e.match),
        ACTION_NAMES.get(e.action.action.action_id),
        dict(kv(p.value) for p in e.action.action.params),
    )


class SwitchProcess:
    """A simple_switch_grpc stand-in: its tables outlive connections; kill() empties them and
    breaks the channel, as SIGKILL and a restart do."""

    def __init__(self, name: str, log: list) -> None:
        self.name = name
        self.log = log  # (switch, update kind, table) of every write, all switches in order
        self.alive = True
        self.tables: dict = {}
        self.channel: Connection | None = None
        # Instants at which a route pointed to a group without all its members (after a write).
        self.violations: list[str] = []

    def kill(self) -> None:
        self.alive = False
        self.tables.clear()
        if self.channel is not None and not self.channel.down.done():
            self.channel.down.set_result(None)

    def routes(self) -> dict[str, tuple]:
        """dst -> ("port", p) or ("group", member ports)."""
        ids = {SCHEMA.tables[p4names.IPV4_LPM].id, SCHEMA.tables[p4names.ECMP_MEMBER].id}
        got = [decoded(e) for e in self.tables.values() if e.table_id in ids]
        members: dict[int, dict[int, int]] = {}
        for table, match, _, params in got:
            if table == p4names.ECMP_MEMBER:
                members.setdefault(match["group"], {})[match["bucket"]] = params["port"]
        out = {}
        for table, match, action, params in got:
            if table != p4names.IPV4_LPM:
                continue
            prefix, plen = match["dst_addr"]
            dst = f"{ipaddress.IPv4Address(prefix)}/{plen}"
            if action == p4names.SET_ECMP_GROUP:
                out[dst] = ("group", tuple(sorted(set(members[params["group"]].values()))))
            else:
                out[dst] = ("port", params["port"])
        return out

    def job_tables(self) -> set[str]:
        names = {p4names.JOB_PARAMS, p4names.JOB_BY_TAG, p4names.JOB_BY_SRC}
        return {SCHEMA.tables[e.table_id].name for e in self.tables.values()} & names

    def check_groups(self) -> None:
        """What a packet may meet at any instant: every group a route uses has all its buckets."""
        ids = {SCHEMA.tables[p4names.IPV4_LPM].id, SCHEMA.tables[p4names.ECMP_MEMBER].id}
        got = [decoded(e) for e in self.tables.values() if e.table_id in ids]
        have = {(m["group"], m["bucket"]) for t, m, _, _ in got if t == p4names.ECMP_MEMBER}
        for _, _, action, params in got:
            if action == p4names.SET_ECMP_GROUP:
                missing = [b for b in range(ECMP_BUCKETS) if (params["group"], b) not in have]
                if missing:
                    self.violations.append(f"{self.name}: group {params['group']} lacks {missing}")


class Connection:
    """What ``async with finsy.Switch(...)`` gives the session."""

    def __init__(self, proc: SwitchProcess) -> None:
        self.proc = proc
        self.p4info = SCHEMA
        self.is_primary = True
        self.election_id = None
        self.down: asyncio.Future = asyncio.get_running_loop().create_future()
        self.ee = SimpleNamespace(event_future=lambda event: self.down, on=lambda *a: None)

    async def __aenter__(self):
        await asyncio.sleep(0)
        if not self.proc.alive:
            raise ConnectionRefusedError(f"{self.proc.name}: connection refused")
        self.proc.channel = self
        return self

    async def __aexit__(self, *exc):
        self.proc.channel = None

    async def write(self, updates) -> None:
        await asyncio.sleep(0)
        if not self.proc.alive or self.down.done():
            raise ConnectionError("channel down")
        for u in updates:
            e = u.entity.table_entry
            k = entries.key_of(e)
            if u.type == p4r.Update.INSERT:
                assert k not in self.proc.tables, ("insert of an existing entry", decoded(e))
                self.proc.tables[k] = e
            elif u.type == p4r.Update.MODIFY:
                assert e.is_default_action or k in self.proc.tables, ("modify", decoded(e))
                self.proc.tables[k] = e
            else:
                assert k in self.proc.tables, ("delete of a missing entry", decoded(e))
                del self.proc.tables[k]
            self.proc.log.append((self.proc.name, u.type, SCHEMA.tables[e.table_id].name))
        self.proc.check_groups()


class Registers:
    async def reset(self, job_ids) -> None:
        pass

    async def clear_all(self) -> None:
        pass

    async def read(self, job_ids, pause=None):
        return {j: JobState() for j in job_ids}


@pytest.fixture
def fake_switches(monkeypatch):
    log: list = []
    procs: dict[str, SwitchProcess] = {}

    def switch(name, address, options):
        procs.setdefault(name, SwitchProcess(name, log))
        return Connection(procs[name])

    async def table_entries(sw, query):
        got = [e for e in sw.proc.tables.values() if not e.is_default_action]
        return [] if query.is_default_action else got

    target = SimpleNamespace(
        name="bmv2",
        tick_ns=1000,
        device_config=lambda pipeline: b"",
        registers=lambda cfg, sw: Registers(),
    )
    monkeypatch.setattr(session_mod, "finsy", SimpleNamespace(Switch=switch))
    monkeypatch.setattr(session_mod, "raw_read", SimpleNamespace(table_entries=table_entries))
    monkeypatch.setattr(session_mod, "target", lambda name: target)
    monkeypatch.setattr(session_mod.SwitchSession, "options", lambda self: None)
    monkeypatch.setattr(entries, "encode", fake_encode)
    return procs, log


async def until(what, timeout: float = 10.0) -> None:
    """Wait for a condition (a bound on a hang, not a measurement)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not what():
        assert loop.time() < end, "condition not reached"
        await asyncio.sleep(0.005)


def test_the_controller_routes_around_a_killed_spine_and_back(tmp_path, fake_switches):
    procs, log = fake_switches
    raw = leaf_spine()
    raw["controller"] = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05}
    cfg = parse_topology(tmp_path, raw)
    store = JobStore(tmp_path / "jobs.db")
    manager = JobManager(cfg, store)

    async def main():
        job = (await manager.allocate("k", "ring", "tag", ["h10", "h20"], [], {})).job
        assert job.switches == ("leaf1", "leaf2", "spine1", "spine2")
        leading = daemon.Leading(cfg, manager, telemetry.SymphonyCollector(manager))
        await leading.start(None)
        sessions = manager.sessions
        await until(lambda: all(s.is_ready for s in sessions.values()))
        assert procs["leaf1"].routes()["10.0.2.1/32"] == ("group", (2, 3))
        assert procs["leaf1"].routes()["10.0.1.1/32"] == ("port", 0)
        assert all(p.job_tables() == {p4names.JOB_PARAMS, p4names.JOB_BY_TAG}
                   for p in procs.values())  # fmt: skip
        assert sessions["leaf1"].status.ecmp_groups == 1

        # spine1 dies: the leaves route over spine2 alone.
        mark = len(log)
        procs["spine1"].kill()
        await until(lambda: procs["leaf1"].routes()["10.0.2.1/32"] == ("port", 3))
        await until(lambda: procs["leaf2"].routes()["10.0.1.2/32"] == ("port", 3))
        await leading.fabric.settle()
        assert leading.fabric.down == {"spine1"}
        after = log[mark:]
        # Only base entries moved (routes, the group's members); no job entry, nothing on spine2.
        assert {t for sw, _, t in after} == {p4names.IPV4_LPM, p4names.ECMP_MEMBER}
        assert {sw for sw, _, _ in after} == {"leaf1", "leaf2"}
        assert sessions["leaf1"].status.ecmp_groups == 0
        assert sessions["spine1"].status.state in ("down", "connecting")  # retrying
        # A job allocated meanwhile waits for spine1 ("pending"), installed elsewhere.
        late = await manager.allocate("k2", "late", "tag", ["h11", "h21"], [], {})
        assert late.switches["spine1"].startswith("pending")
        assert late.switches["leaf1"] == "installed"

        # spine1 restarts empty: its session pushes its routes and every job's entries, then the
        # leaves take it back into their groups.
        mark = len(log)
        procs["spine1"].alive = True
        await until(lambda: procs["leaf1"].routes()["10.0.2.1/32"] == ("group", (2, 3)))
        await until(lambda: procs["leaf2"].routes()["10.0.1.2/32"] == ("group", (2, 3)))
        await leading.fabric.settle()
        assert leading.fabric.down == set()
        spine1 = procs["spine1"]
        assert spine1.routes() == {
            "10.0.1.1/32": ("port", 0),
            "10.0.1.2/32": ("port", 0),
            "10.0.2.1/32": ("port", 1),
            "10.0.2.2/32": ("port", 1),
        }
        params = [decoded(e)[1]["job_id"] for e in spine1.tables.values()
                  if decoded(e)[0] == p4names.JOB_PARAMS]  # fmt: skip
        assert sorted(params) == sorted([job.job_id, late.job.job_id])
        after = log[mark:]
        last_spine1 = max(i for i, (sw, _, _) in enumerate(after) if sw == "spine1")
        first_leaf = min(i for i, (sw, _, _) in enumerate(after) if sw.startswith("leaf"))
        assert last_spine1 < first_leaf  # never a group member towards an unprogrammed spine

        assert [v for p in procs.values() for v in p.violations] == []

        # Stopping the controller is no switch lost: nothing is rerouted.
        mark = len(log)
        await leading.stop()
        assert log[mark:] == [] and leading.fabric is None

    try:
        asyncio.run(main())
    finally:
        store.close()


def test_without_a_topology_there_is_no_fabric(tmp_path, fake_switches):
    procs, _ = fake_switches
    raw = {
        "switches": [
            {
                "name": "s1",
                "address": "127.0.0.1:19559",
                "device_id": 0,
                "target": "bmv2",
                "routes": [{"prefix": "10.0.0.0/24", "port": 1}],
            }
        ]
    }
    cfg = parse_topology(tmp_path, raw)
    store = JobStore(tmp_path / "jobs.db")
    manager = JobManager(cfg, store)

    async def main():
        leading = daemon.Leading(cfg, manager, telemetry.SymphonyCollector(manager))
        await leading.start(None)
        await until(lambda: manager.sessions["s1"].is_ready)
        assert leading.fabric is None
        assert procs["s1"].routes() == {"10.0.0.0/24": ("port", 1)}
        procs["s1"].kill()
        await until(lambda: manager.sessions["s1"].status.state == "down")
        await leading.stop()

    try:
        asyncio.run(main())
    finally:
        store.close()
