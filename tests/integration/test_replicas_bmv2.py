"""Replicated controllers against a real bmv2 and a real PostgreSQL: fencing, the Thrift port
closed to the network, and the chaos test (docs/operations.md "Failure modes").

- A leader paused with SIGSTOP is replaced; when it resumes, nothing on the switch changes
  (entries and registers read back before and after), and a deposed epoch's session cannot
  write the switch even with its own lease check bypassed: the switch refuses its P4Runtime
  writes and its Thrift register resets are never sent (the P4Runtime probe fails first).
- bmv2_env/start.sh's bmv2 refuses a Thrift connection from a non-loopback address (a network
  namespace behind a veth pair) and takes one from loopback.
- Chaos: 3 replicas, 8 concurrent clients, allocations and releases while the leader is
  SIGKILLed 3 times at random points; 0 acknowledged allocations lost, 0 duplicate Job_IDs,
  every request key one job, and after each failover the switch's job entries equal the store
  (bench/failover_bench.py runs the long version and measures the failover time).

Needs bmv2 (simple_switch_grpc), `make build`, root; PostgreSQL from Debian
(scripts/install_test_deps.sh). Run under the machine-wide bmv2 lock; the switch is the
bmv2_env instance named by the SYMPHONY_* variables (symphony_tools.testbed.Bmv2Env).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import finsy
import pytest

from symphony import p4names
from symphony.client import Client
from symphony.config import load
from symphony.jobs.pg_store import PgJobStore
from symphony.jobs.store import Job
from symphony.replica import election_id
from symphony.switch.session import SwitchSession
from symphony.switch.thrift_registers import Bmv2Thrift
from symphony_tools import postgres
from symphony_tools.chaos import PATIENT, Chaos, switch_job_entries, switch_settled
from symphony_tools.replicas import ReplicaSet
from symphony_tools.testbed import BMV2_JSON, P4INFO, Bmv2Env, bmv2_missing

ROOT = Path(__file__).resolve().parents[2]
ENV = Bmv2Env.from_env()
CHAOS_ALLOCATIONS = int(os.environ.get("SYMPHONY_CHAOS_ALLOCATIONS", "200"))


def _missing() -> str | None:
    return bmv2_missing() or postgres.missing()


pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(_missing() is not None, reason=f"bmv2 test skipped: {_missing()}"),
]


@pytest.fixture(scope="module")
def switch():
    pid_file = ENV.run_dir / "switch.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), 0)
            pytest.fail(f"a bmv2 is already running in {ENV.run_dir}; these tests start their own")
        except (OSError, ValueError):
            pass
    ENV.script("start")
    try:
        yield ENV
    finally:
        ENV.script("stop")


def config_body(api: str, metrics: str) -> str:
    return ENV.controller_toml(
        api=api,
        metrics=metrics,
        p4info=P4INFO,
        bmv2_json=BMV2_JSON,
        controller="reconcile_interval_s = 60\nbackoff_initial_s = 0.05\nbackoff_max_s = 0.5\n"
        "install_timeout_s = 10",
    )


@pytest.fixture
def replicas(tmp_path, pg, switch):
    url = pg.new_database()
    rs = ReplicaSet(tmp_path, url, 3, config_body, ttl_s=1.5)
    rs.url = url  # type: ignore[attr-defined]
    rs.start()
    try:
        yield rs
    finally:
        rs.stop()


def registers() -> dict[str, list[int]]:
    with Bmv2Thrift("127.0.0.1", ENV.thrift_port) as t:
        return {name: t.register_read_all(name) for name in p4names.JOB_REGISTERS.values()}


def wait_settled(check, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    diff = check()
    while diff and time.monotonic() < deadline:
        time.sleep(0.2)
        diff = check()
    assert not diff, diff[:5]


def test_a_paused_leader_resumed_after_failover_changes_nothing(replicas):
    cfg = load(replicas.replicas[0].config)
    settled = switch_settled(replicas.url, cfg, ENV.grpc_addr, ENV.device_id)
    old = replicas.leader()
    with Client(replicas.addresses, retry=PATIENT, timeout_s=20) as c:
        a = c.allocate("k-a", "a", switches=["s1"], params={"t_win_us": 0}).job
    wait_settled(settled)
    old.signal(signal.SIGSTOP)
    new = replicas.leader(exclude=old)
    # (A paused replica answers nothing: a client that tried it first would wait its timeout.)
    others = [r.api for r in replicas.replicas if r is not old]
    with Client([new.api, *others, old.api], retry=PATIENT, timeout_s=20) as c:
        # The new leader changes the switch: a released, b allocated (in a's Job_ID's stead).
        c.release("a")
        b = c.allocate("k-b", "b", switches=["s1"], mode="hosts", hosts=["10.0.0.7"]).job
        wait_settled(settled)
        before = switch_job_entries(ENV.grpc_addr, ENV.device_id)[0]
        regs = registers()
        assert b.job_id != a.job_id and len(before) == 2  # b's parameters and its source
        old.signal(signal.SIGCONT)
        # It resumes past its lease's deadline: it follows, and wrote nothing.
        deadline = time.monotonic() + 30
        while old.role() != "follower" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert old.role() == "follower"
        time.sleep(1.0)  # its sessions' timers and the arbitration news all ran
        assert switch_job_entries(ENV.grpc_addr, ENV.device_id)[0] == before
        assert registers() == regs
        assert replicas.leader() is new


def test_a_deposed_epoch_cannot_write_entries_or_registers(replicas):
    """The switch-side fence alone: a session with the first leader's election id, its own lease
    check bypassed, connected while the current leader is primary."""
    cfg = load(replicas.replicas[0].config)
    first = replicas.leader()
    first.signal(signal.SIGKILL)
    current = replicas.leader(exclude=first)
    assert current.metric("symphony_replica_epoch") == 2.0
    with Client(replicas.addresses, retry=PATIENT, timeout_s=20) as c:
        c.allocate("k-live", "live", switches=["s1"])
    wait_settled(switch_settled(replicas.url, cfg, ENV.grpc_addr, ENV.device_id))
    store = PgJobStore(replicas.url)
    live = store.get_by_key("k-live")
    store.close()
    assert live is not None
    stale = Job(
        uid=999, job_id=4242, request_key="stale", name="stale", mode="tag", hosts=(),
        switches=("s1",), params={}, state="active", pending=(), created_at=0.0,
        released_at=None,
    )  # fmt: skip
    # A value in the stale job's register slot, so that a reset would show.
    step_min = p4names.JOB_REGISTERS["step_min"]
    with Bmv2Thrift("127.0.0.1", ENV.thrift_port) as t:
        t.register_write(step_min, stale.job_id, 5)
    before = switch_job_entries(ENV.grpc_addr, ENV.device_id)[0]
    regs = registers()
    jobs = {j.job_id: j for j in (live, stale)}

    class Source:
        """The deposed leader's view: the live job and one of its own (new on the switch, so
        the sync zeroes its registers over Thrift before inserting its entries)."""

        def jobs_on(self, switch):
            return list(jobs.values()), []

        def job(self, job_id):
            return jobs.get(job_id)

        def action_params(self, job, tick_ns):
            from symphony.model.params import JobParams

            return JobParams().to_action_params(tick_ns)

        def cleared(self, job, switch):
            raise AssertionError("nothing is released here")

    async def attempt() -> list[str]:
        session = SwitchSession(
            cfg.switch("s1"), cfg, Source(), election_id=election_id(1), fence=lambda: None
        )
        outcomes = []
        async with finsy.Switch("stale", cfg.switch("s1").address, session.options()) as sw:
            assert not sw.is_primary  # epoch 2 is
            session._sw = sw
            session._registers = session.target.registers(cfg.switch("s1"), sw)
            session._ready.set()
            for _ in range(2):
                try:
                    await session.sync([stale.job_id])
                    outcomes.append("written")
                except Exception as exc:
                    outcomes.append(f"{type(exc).__name__}: {exc}")
        return outcomes

    outcomes = asyncio.run(attempt())
    assert all("written" not in o for o in outcomes), outcomes
    assert any("primary" in o.lower() or "permission" in o.lower() for o in outcomes), outcomes
    assert switch_job_entries(ENV.grpc_addr, ENV.device_id)[0] == before
    assert registers() == regs  # the Thrift reset was never sent
    assert regs[step_min][stale.job_id] == 5


def test_bmv2_thrift_port_refuses_a_non_loopback_connection(switch):
    """From a network namespace behind a veth pair: the Thrift port is refused, another port on
    the same address is reachable (so the refusal is the rule's), and loopback still works."""
    tag = f"{os.getpid() % 100000}"
    ns, host_if, ns_if = f"symthr{tag}", f"sthr{tag}a", f"sthr{tag}b"
    control = socket.socket()
    control.bind(("0.0.0.0", 0))
    control.listen()
    port = control.getsockname()[1]

    def run(*argv: str) -> None:
        subprocess.run(argv, check=True, capture_output=True)

    run("ip", "netns", "add", ns)
    try:
        run("ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        run("ip", "link", "set", ns_if, "netns", ns)
        run("ip", "addr", "add", "10.231.77.1/30", "dev", host_if)
        run("ip", "link", "set", host_if, "up")
        run("ip", "netns", "exec", ns, "ip", "addr", "add", "10.231.77.2/30", "dev", ns_if)
        run("ip", "netns", "exec", ns, "ip", "link", "set", ns_if, "up")
        probe = (
            "import socket,sys\n"
            "try:\n"
            "    socket.create_connection(('10.231.77.1', int(sys.argv[1])), timeout=5).close()\n"
            "    print('connected')\n"
            "except OSError as e:\n"
            "    print(type(e).__name__)\n"
        )

        def from_ns(p: int) -> str:
            out = subprocess.run(
                ["ip", "netns", "exec", ns, "python3", "-c", probe, str(p)],
                capture_output=True, text=True, timeout=30, check=True,
            )  # fmt: skip
            return out.stdout.strip()

        assert from_ns(port) == "connected"
        assert from_ns(ENV.thrift_port) == "ConnectionRefusedError"
        with socket.create_connection(("127.0.0.1", ENV.thrift_port), timeout=5):
            pass
        with Bmv2Thrift("127.0.0.1", ENV.thrift_port) as t:  # and it is bmv2's Thrift
            t.register_read_all(p4names.JOB_REGISTERS["step_min"])
    finally:
        control.close()
        subprocess.run(["ip", "link", "del", host_if], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def test_chaos_leader_sigkilled_under_concurrent_clients(replicas):
    cfg = load(replicas.replicas[0].config)
    chaos = Chaos(
        replicas,
        replicas.url,
        clients=8,
        allocations=CHAOS_ALLOCATIONS,
        kills=3,
        seed=int(os.environ.get("SYMPHONY_CHAOS_SEED", "1")),
        settled=switch_settled(replicas.url, cfg, ENV.grpc_addr, ENV.device_id),
    )
    result = chaos.run()
    assert result.kills == 3
    assert not result.errors, result.errors[:5]
    assert not result.problems, result.problems[:10]
    assert len(result.allocated) == CHAOS_ALLOCATIONS
    assert len(result.failover_s) == 3
