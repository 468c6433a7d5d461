"""API fuzzing: property-based tests (hypothesis) of every gRPC method against the real server,
manager and SQLite store, in-process (docs/robustness.md).

Every reply is a defined status - OK, or INVALID_ARGUMENT / NOT_FOUND / ALREADY_EXISTS /
RESOURCE_EXHAUSTED with a message naming the field - never INTERNAL or UNKNOWN; and after every
example the database, read through its own connection, keeps its invariants: no live Job_ID or
name held twice, no host in two live hosts-mode jobs, tag-mode IDs inside the 13-bit tag, and
nothing acknowledged lost (every job a reply confirmed is still there with its Job_ID, in the
state the replies left it).

Switch s1 has a session stand-in that clears released jobs at once (so IDs are freed and
reused); s2 has none, so its releases stay pending. SYMPHONY_API_FUZZ_EXAMPLES sets the examples
per property (`make fuzz`: 1000; the test command: 60).
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_api_service import Server, make_config

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.jobs.allocator import TAG_MAX
from symphony.switch.session import SessionStatus

EXAMPLES = int(os.environ.get("SYMPHONY_API_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # no timed tests
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
REFUSALS = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
NONCE = itertools.count()
RUN: Counter[str] = Counter()  # examples and calls run, printed at the end (make fuzz)

# Strings: valid UTF-8 only (protobuf refuses to send lone surrogates), some of them huge.
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
big = st.sampled_from(["x" * 200, "a" * 10_000, "7" * 300, "n" * 1_000_000])
names = st.one_of(st.from_regex(r"[a-z][a-z0-9._-]{0,8}", fullmatch=True), text, big)
keys = st.one_of(st.from_regex(r"[A-Za-z0-9._:/-]{1,12}", fullmatch=True), text, big)
ipv4 = st.builds(lambda *o: ".".join(map(str, o)), *[st.integers(0, 255)] * 4)
hosts = st.lists(st.one_of(ipv4, st.sampled_from(["10.0.0.1", "10.0.0.2"]), text), max_size=5)
switches = st.lists(st.sampled_from(["s1", "s2", "s3", "", "S1", "s1 "]) | text, max_size=3)
finite_or_not = st.floats(allow_nan=True, allow_infinity=True)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
params = st.builds(
    pb.Params,
    k=st.none() | finite_or_not | st.sampled_from([0.0, 0.01, 2.0**-16, 255.9, 256.0]),
    tau=st.none() | finite_or_not | st.sampled_from([0.0, 0.25, 1.0]),
    t_win_us=st.none() | finite_or_not | st.sampled_from([0.0, 100.0, 4.3e9]),
    n_warmup=st.none() | int64 | st.integers(0, 1 << 24),
    n_sample=st.none() | int64 | st.integers(0, 1 << 32),
    alpha_max=st.none() | int64 | st.integers(0, 256),
    psn_mode=st.none() | st.sampled_from(["relative", "absolute", "", "RELATIVE"]) | text,
)
refs = st.one_of(
    st.integers(-5, 20_000).map(str),
    st.sampled_from(["", "0", "-1", "²", "١٢", "٣", "1e3", " 1", "99999999999999999999999"]),
    names,
)


class ClearingSession:
    """Stands in for s1's switch session: always ready, clears releasing jobs on every sync."""

    def __init__(self, manager, name: str) -> None:
        self.manager = manager
        self.name = name
        self.is_ready = True
        self.status = SessionStatus(name, "stand-in", "bmv2", state="ready")

    async def sync(self, job_ids=None) -> int:
        _, releasing = self.manager.jobs_on(self.name)
        for job in releasing:
            self.manager.cleared(job, self.name)
        return len(releasing)

    async def read_state(self, job_ids):
        raise RuntimeError("no switch in this test")


@dataclass
class World:
    stub: pb_grpc.JobServiceStub
    srv: Server
    # What the replies confirmed: request_key -> (job_id, uid-independent state we expect).
    acked: dict[str, tuple[int, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def call(self, method: str, request, **kw):
        """One RPC: its reply, or None for a defined refusal; anything else fails the test."""
        RUN[method] += 1
        try:
            return getattr(self.stub, method)(request, timeout=30, **kw)
        except grpc.RpcError as err:
            assert err.code() in REFUSALS, f"{method}: {err.code()} {err.details()!r}"
            assert err.details(), f"{method}: {err.code()} without a message"
            if err.code() == grpc.StatusCode.INVALID_ARGUMENT:
                assert ": " in err.details(), f"no field named: {err.details()!r}"
            return None

    def note(self, reply: pb.JobReply | None) -> None:
        if reply is not None:
            with self.lock:
                self.acked[reply.job.request_key] = (reply.job.job_id, reply.job.state)

    def check(self) -> None:
        """The store's invariants, through a connection of our own."""
        db = sqlite3.connect(self.srv.cfg.database)
        try:
            live = db.execute(
                "SELECT job_id, name, mode, hosts, state, request_key FROM jobs"
                " WHERE state != 'released'"
            ).fetchall()
            ids = Counter(r[0] for r in live)
            assert not [i for i, n in ids.items() if n > 1], "a Job_ID is held twice"
            assert not [n for n, c in Counter(r[1] for r in live).items() if c > 1], "name twice"
            seen: set[str] = set()
            for job_id, _, mode, hosts_json, _, _ in live:
                assert 1 <= job_id < 16384
                if mode == "tag":
                    assert job_id <= TAG_MAX, f"tag-mode job {job_id} cannot be tagged"
                else:
                    hs = set(json.loads(hosts_json))
                    assert not hs & seen, f"hosts {hs & seen} in two live jobs"
                    seen |= hs
            rows = {
                r[0]: (r[1], r[2])
                for r in db.execute("SELECT request_key, job_id, state FROM jobs").fetchall()
            }
            with self.lock:
                acked = dict(self.acked)
            for key, (job_id, state) in acked.items():
                assert key in rows, f"acknowledged job {key!r} lost"
                assert rows[key][0] == job_id, f"{key!r} changed its Job_ID"
                order = ["active", "releasing", "released"]
                assert order.index(rows[key][1]) >= order.index(state), f"{key!r} went back"
        finally:
            db.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    cfg = make_config(tmp_path_factory.mktemp("api-fuzz"))
    srv = Server(cfg)
    srv.manager.sessions["s1"] = ClearingSession(srv.manager, "s1")
    channel = grpc.insecure_channel(
        cfg.api.listen, options=[("grpc.max_send_message_length", 16 << 20)]
    )
    yield World(pb_grpc.JobServiceStub(channel), srv)
    channel.close()
    srv.close()
    print(f"\nAPI fuzz: {sum(RUN.values())} calls {dict(sorted(RUN.items()))}")


@FUZZ
@given(
    key=keys,
    name=names,
    mode=st.sampled_from(["tag", "hosts", "", "TAG", "vlan"]) | text,
    hosts=hosts,
    switches=switches,
    params=params,
)
def test_allocate_any_fields(world, key, name, mode, hosts, switches, params):
    RUN["example:allocate"] += 1
    req = pb.AllocateRequest(
        request_key=key, name=name, mode=mode, hosts=hosts, switches=switches, params=params
    )
    reply = world.call("Allocate", req)
    if reply is not None:
        assert reply.job.name == name and reply.job.request_key == key
        assert reply.job.job_id >= 1
    world.note(reply)
    world.check()


@FUZZ
@given(ref=refs, include=st.booleans())
def test_lookups_and_release_any_ref(world, ref, include):
    RUN["example:ref"] += 1
    world.call("Get", pb.JobRef(job=ref))
    listing = world.call("List", pb.ListRequest(include_released=include))
    assert listing is not None
    status = world.call("SwitchStatus", pb.SwitchStatusRequest())
    assert status is not None
    world.note(world.call("Release", pb.JobRef(job=ref)))
    world.check()


@FUZZ
@given(ref=st.none() | refs, params=params)
def test_set_params_any_values(world, ref, params):
    RUN["example:set_params"] += 1
    before = world.srv.store.global_params()
    reply = world.call("SetParams", pb.SetParamsRequest(job=ref or "", params=params))
    if reply is None and not ref:
        assert world.srv.store.global_params() == before, "a refused change was stored"
    world.check()


@FUZZ
@given(
    key=st.from_regex(r"dup-[a-z0-9]{1,6}", fullmatch=True),
    first=st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([["s1"], ["s2"], ["s1", "s2"]])),
    second=st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([["s1"], ["s2"], ["s1", "s2"]])),
)
def test_duplicate_request_keys(world, key, first, second):
    """A key reused with another body is refused and changes nothing; the same body is the same
    job (created once)."""
    RUN["example:duplicate"] += 1

    def request(body):
        suffix, sws = body
        return pb.AllocateRequest(request_key=key, name=f"{key}-{suffix}", mode="tag", switches=sws)

    one = world.call("Allocate", request(first))
    world.note(one)
    two = world.call("Allocate", request(second))
    if one is not None and first == second:
        assert two is not None and not two.created and two.job.job_id == one.job.job_id
    elif one is not None and one.job.state == "active":
        assert two is None or (two.job.job_id == one.job.job_id and not two.created)
    world.note(two)
    world.check()


@FUZZ
@given(
    tag=st.from_regex(r"[a-z]{1,5}", fullmatch=True),
    n=st.integers(2, 8),
    same_key=st.booleans(),
    host=st.integers(1, 250),
)
def test_concurrent_conflicting_requests(world, tag, n, same_key, host):
    """n clients at once ask for one name (or one host), with one key or n keys, while others
    release and change it: exactly one job results, everyone else gets a defined refusal."""
    RUN["example:concurrent"] += 1
    name = f"c-{tag}-{host}-{next(NONCE)}"  # a fresh name and keys in every example
    addr = f"10.9.{host}.1"
    barrier = threading.Barrier(n + 2)
    replies: list = []

    def allocate(i: int) -> None:
        key = f"k-{name}" if same_key else f"k-{name}-{i}"
        req = pb.AllocateRequest(
            request_key=key,
            name=name,
            mode="hosts",
            hosts=[addr],
            switches=["s1", "s2"][: i % 2 + 1],
        )
        barrier.wait()
        replies.append(world.call("Allocate", req))

    def meddle(method: str) -> None:
        barrier.wait()
        if method == "Release":
            world.note(world.call("Release", pb.JobRef(job=name)))
        else:
            world.call("SetParams", pb.SetParamsRequest(job=name, params=pb.Params(tau=0.5)))

    threads = [threading.Thread(target=allocate, args=(i,)) for i in range(n)]
    threads += [threading.Thread(target=meddle, args=(m,)) for m in ("Release", "SetParams")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    won = [r for r in replies if r is not None]
    for r in won:
        world.note(r)
    # Each key made at most one job; at most one job of them is live (a concurrent Release may
    # have let a later request make a new one); the store's invariants hold.
    by_key: dict[str, set[int]] = {}
    for r in won:
        by_key.setdefault(r.job.request_key, set()).add(r.job.job_id)
    assert all(len(ids) == 1 for ids in by_key.values()), by_key
    assert sum(r.created for r in won) == len(by_key)
    live = [world.srv.store.get_by_key(k) for k in by_key]
    assert sum(j is not None and j.state == "active" for j in live) <= 1
    world.check()
    # Leave no live job behind holding the host for the next example.
    for r in won:
        world.note(world.call("Release", pb.JobRef(job=str(r.job.job_id))))


def test_a_clash_of_thousands_of_hosts_still_gets_its_status(world):
    """The message names a few of the clashing hosts: all 4,096 (55 KB) overflowed gRPC's
    header limit and the caller got RESOURCE_EXHAUSTED instead of ALREADY_EXISTS."""
    hosts = [f"10.77.{i // 256}.{i % 256}" for i in range(1, 4097)]
    first = pb.AllocateRequest(
        request_key="many-1", name="many-1", mode="hosts", hosts=hosts, switches=["s2"]
    )
    world.note(world.call("Allocate", first))
    second = pb.AllocateRequest(
        request_key="many-2", name="many-2", mode="hosts", hosts=hosts, switches=["s2"]
    )
    with pytest.raises(grpc.RpcError) as err:
        world.stub.Allocate(second, timeout=30)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert (
        err.value.details().startswith("hosts: 10.77.0.1, ")
        and "and 4088 more" in err.value.details()
    )
    world.check()
    world.note(world.call("Release", pb.JobRef(job="many-1")))
