"""The controller against a real bmv2 (simple_switch_grpc): allocate -> entries and tracked
packets, release -> gone, bmv2 restart -> reconciled, controller restart -> nothing changes.

Needs simple_switch_grpc on PATH (or /opt/p4/bin), `make build` output in build/bmv2/, and root
(bmv2_env/start.sh creates veth ports). Skips loudly otherwise.

The switch is the bmv2_env instance named by the same variables as bmv2_env/env.sh, with the
same defaults, so the tests can run beside the PTF suite on a second switch:

    SYMPHONY_VETH_BASE=20 SYMPHONY_GRPC_ADDR=127.0.0.1:9659 SYMPHONY_THRIFT_PORT=9190 \\
    SYMPHONY_RUN_DIR=$PWD/run/bmv2-ctl .venv/bin/python -m pytest -v -m bmv2 tests/integration

The module starts that switch itself and stops it at the end; it refuses to touch a switch that
is already running in SYMPHONY_RUN_DIR (someone else's), rather than restarting it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from symphony import p4names
from symphony.sizes import BMV2_TICK_NS
from symphony_tools.ports import free_port
from symphony_tools.testbed import BMV2_JSON, P4INFO, Bmv2Env, bmv2_missing

ROOT = Path(__file__).resolve().parents[2]
ENV = Bmv2Env.from_env()

T_JOB_PARAMS = p4names.JOB_PARAMS
T_JOB_BY_TAG = p4names.JOB_BY_TAG
T_JOB_BY_SRC = p4names.JOB_BY_SRC
T_OPCODE_CLASS = p4names.OPCODE_CLASS
ENV_TICK_NS = BMV2_TICK_NS


pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(bmv2_missing() is not None, reason=f"bmv2 test skipped: {bmv2_missing()}"),
]


def bmv2(action: str, *args: str) -> None:
    ENV.script(action, *args)


def bmv2_running() -> int | None:
    """PID of the switch bmv2_env/start.sh runs in ENV.run_dir, if it is alive."""
    try:
        pid = int((ENV.run_dir / "switch.pid").read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


class Controller:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.api = f"127.0.0.1:{free_port()}"
        self.metrics = f"127.0.0.1:{free_port()}"
        self.cfg = tmp / "controller.toml"
        self.cfg.write_text(
            ENV.controller_toml(
                api=self.api,
                metrics=self.metrics,
                p4info=P4INFO,
                bmv2_json=BMV2_JSON,
                controller="reconcile_interval_s = 60\nbackoff_initial_s = 0.05\n"
                "backoff_max_s = 0.5\ntelemetry_interval_s = 0.5",
            )
        )
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.log = open(self.tmp / "controller.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "symphony.daemon", "--config", str(self.cfg)],
            stdout=self.log,
            stderr=self.log,
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        self.log.close()

    def run_ctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "symphony.cli", "--api", self.api, "--json", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    def ctl(self, *args: str) -> dict:
        out = self.run_ctl(*args)
        assert out.returncode == 0, out.stdout + out.stderr
        return json.loads(out.stdout)

    def status(self) -> dict:
        return self.ctl("switch", "status")["switches"][0]

    def wait_ready(self, limit_s: float = 30.0) -> None:
        """Until switch s1 is connected and reconciled (a deadline, not a timing assertion)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"controller exited; see {self.tmp}/controller.log")
            out = self.run_ctl("switch", "status")
            if out.returncode == 0 and json.loads(out.stdout)["switches"][0]["state"] == "ready":
                return
            time.sleep(0.05)
        raise AssertionError(f"s1 not ready after {limit_s}s; see {self.tmp}/controller.log")


@dataclass(frozen=True)
class Entry:
    table: str
    match: str
    action: str


async def _read_entries() -> dict[bytes, Entry]:
    """Every table entry on the switch, through a second P4Runtime client. It brings no P4Info
    of its own (it fetches the switch's) and has a lower election id than the controller, so it
    never pushes a pipeline and is a backup while the controller is connected."""
    import finsy
    from finsy import P4TableEntry

    opts = finsy.SwitchOptions(device_id=ENV.device_id, initial_election_id=1)
    async with finsy.Switch("reader", ENV.grpc_addr, opts) as sw:
        if not sw.p4info.exists:
            raise RuntimeError("no pipeline on the switch yet")
        out = {}
        async for e in sw.read(P4TableEntry()):
            key = e.encode(sw.p4info).SerializeToString(deterministic=True)
            out[key] = Entry(
                sw.p4info.tables[e.table_id].name, repr(dict(e.match or {})), repr(e.action)
            )
        return out


def entries_on_switch() -> dict[bytes, Entry]:
    return asyncio.run(_read_entries())


def packets(job_id: int, steps=(5, 5, 5), src: str = "10.0.0.1", tag: bool = True) -> list:
    """A RDMA WRITE message of len(steps) packets: FIRST (resets the flow slot), MIDDLEs."""
    from conformance.packets import WRITE_FIRST, WRITE_MIDDLE, rocev2

    return [
        rocev2(
            opcode=WRITE_FIRST if i == 0 else WRITE_MIDDLE,
            step=s,
            psn=100 + i,
            tag=job_id if tag else 0,
            src=src,
            dst="10.0.1.1",
        )
        for i, s in enumerate(steps)
    ]


def send(pkts: list) -> None:
    from scapy.sendrecv import sendp

    sendp(pkts, iface=ENV.host_if(0), verbose=False)


def expected_state(
    job_id: int, pkts: list, *, tag: bool = True, params=None, marks: bool = False
) -> dict:
    """The golden model's state after ``pkts`` for a fresh job, by default with T_win = 0
    (every packet closes a window, so the result does not depend on the switch's clock). Every
    decision must be certain (P = 0 or 1), and with ``marks`` False never a mark."""
    from conformance.packets import parsed_view
    from symphony.model.params import JobParams
    from symphony.model.switch_model import SwitchModel

    views = [parsed_view(p) for p in pkts]
    model = SwitchModel()
    params = (params or JobParams(t_win_us=0.0)).to_action_params(ENV_TICK_NS)
    hosts = () if tag else (views[0].src,)
    model.install_job(job_id, params, tag=tag, hosts=hosts)
    for i, v in enumerate(views):
        d = model.process(v, now=1000 + i)
        assert d.mark is not None, "test packets must be deterministic (P = 0 or 1)"
        assert marks or d.mark is False, "test packets must never be marked"
    st = model.state(job_id)
    return {
        "step_min": st.step_min,
        "psn_rec": st.psn_rec,
        "step_max": st.step_max,
        "step_overlap": st.step_overlap,
        "alpha": st.alpha,
        "window_packets": st.window_packets,
        "window_ahead_packets": st.window_ahead_packets,
        "packets": st.packets,
        "marks": st.marks,
        "queue_marks": 0,
    }


def live_of(ctl: Controller, job: str) -> dict:
    """`symphonyctl --json job show JOB`, the one switch's live state as ints."""
    live = ctl.ctl("job", "show", job)["live"]
    assert len(live) == 1 and live[0]["switch"] == "s1", live
    s = live[0]
    assert s["available"], s
    return {k: int(v) for k, v in s.items() if k not in ("switch", "available", "error")}


def wait_packets(ctl: Controller, job: str, n: int) -> dict:
    """bmv2 processes packets asynchronously: poll until the job counted ``n`` (bounded)."""
    deadline = time.monotonic() + 10
    while True:
        live = live_of(ctl, job)
        if live["packets"] >= n or time.monotonic() > deadline:
            return live
        time.sleep(0.05)


def masked(live: dict) -> dict:
    return {k: v for k, v in live.items() if k != "win_start"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    pid = bmv2_running()
    if pid is not None:
        pytest.fail(
            f"a bmv2 is already running in {ENV.run_dir} (pid {pid}); these tests restart their "
            "switch, so they start their own: stop it (bmv2_env/stop.sh with the same "
            "SYMPHONY_* variables) or point SYMPHONY_RUN_DIR/SYMPHONY_GRPC_ADDR/"
            "SYMPHONY_THRIFT_PORT/SYMPHONY_VETH_BASE at another instance"
        )
    bmv2("start")
    ctl = Controller(tmp_path_factory.mktemp("controller"))
    try:
        ctl.start()
        ctl.wait_ready()
        yield ctl
    finally:
        ctl.stop()
        bmv2("stop")


def test_base_state_keeps_const_entries(setup):
    """The controller installed routes and lookup tables and left the const table alone."""
    on_switch = entries_on_switch().values()
    tables = {e.table for e in on_switch}
    assert sum(e.table == T_OPCODE_CLASS for e in on_switch) == 24  # classify.p4 const entries
    assert {
        p4names.IPV4_LPM,
        p4names.LOG_P,
        p4names.LOG_PSN_REC,
        p4names.LOG_ALPHA,
        p4names.PROB_THRESHOLD,
        p4names.QUEUE_THRESHOLD,
    } <= tables
    assert not tables & {T_JOB_PARAMS, T_JOB_BY_TAG, T_JOB_BY_SRC}
    st = setup.status()
    # The controller counts what it keeps: every non-const entry plus the one default entry it
    # sets (prob_threshold's; a wildcard read does not return default entries).
    assert st["state"] == "ready" and int(st["entries"]) == len(on_switch) - 24 + 1, st


def test_allocate_tracks_packets_and_release_clears(setup):
    ctl = setup
    base = entries_on_switch()
    r = ctl.ctl(
        "job", "allocate", "--name", "itest", "--mode", "tag", "--switch", "s1",
        "--param", "t_win_us=0",
    )  # fmt: skip
    job_id = r["job"]["job_id"]
    assert r["created"] and r["switches"] == [{"switch": "s1", "status": "installed"}]
    after = entries_on_switch()
    added = [after[k] for k in after.keys() - base.keys()]
    assert base.keys() <= after.keys()
    assert sorted(e.table for e in added) == [T_JOB_BY_TAG, T_JOB_PARAMS], added
    assert all(str(job_id) in e.match for e in added), added

    # Untagged packets and packets tagged with another (unallocated) ID are not this job's.
    other = job_id + 1 if job_id < 8191 else job_id - 1
    send(packets(other, steps=(7, 7)) + packets(job_id, tag=False, steps=(7,)))
    pkts = packets(job_id, steps=(5, 5, 6))
    send(pkts)
    live = wait_packets(ctl, "itest", 3)
    assert masked(live) == expected_state(job_id, pkts)
    assert live["packets"] == 3 and live["window_packets"] >= 1

    rel = ctl.ctl("job", "release", "itest")
    assert rel["job"]["state"] == "released"
    assert rel["switches"] == [{"switch": "s1", "status": "cleared"}]
    assert entries_on_switch().keys() == base.keys()
    out = ctl.run_ctl("job", "show", "itest")
    assert out.returncode == 1 and json.loads(out.stdout)["error"] == "NOT_FOUND"
    # The ID's registers and counters were zeroed: a new job that gets it starts clean.
    from symphony.switch.registers import ThriftJobRegisters

    regs = ThriftJobRegisters(ENV.grpc_host, ENV.thrift_port)
    state = asyncio.run(regs.read([job_id]))[job_id]
    assert (state.packets, state.step_min, state.psn_rec, state.alpha, state.window_packets) == (
        0,
        0,
        0,
        1,
        0,
    )
    # And packets with the released tag are untracked again.
    send(packets(job_id, steps=(3, 3)))
    time.sleep(0.3)
    assert asyncio.run(regs.read([job_id]))[job_id].packets == 0


def test_bmv2_restart_is_reconciled_within_5s(setup):
    ctl = setup
    r = ctl.ctl(
        "job", "allocate", "--name", "survivor", "--mode", "hosts", "--host", "10.0.0.1",
        "--switch", "s1", "--param", "t_win_us=0",
    )  # fmt: skip
    before = entries_on_switch()
    assert any(e.table == T_JOB_BY_SRC for e in before.values())
    connects = int(ctl.status()["connects"])
    # The switch process restarts (empty, no pipeline); its veth ports stay.
    bmv2("stop", "--keep-ports")
    bmv2("start")
    t0 = time.monotonic()
    # The explicit bound: a restarted bmv2 holds everything again within 5 s.
    got: dict = {}
    while time.monotonic() - t0 < 5.0:
        try:
            got = entries_on_switch()
        except Exception:  # not up or no pipeline yet
            got = {}
        if got.keys() == before.keys():
            break
        time.sleep(0.05)
    elapsed = time.monotonic() - t0
    print(f"bmv2 restart reconciled in {elapsed:.2f}s")
    assert got.keys() == before.keys(), f"not reconciled {elapsed:.2f}s after the restart"
    ctl.wait_ready()
    assert int(ctl.status()["connects"]) > connects
    # The job is tracked again on the new switch, from a zero state.
    pkts = packets(0, steps=(4, 4), tag=False)
    send(pkts)
    live = wait_packets(ctl, "survivor", 2)
    assert masked(live) == expected_state(r["job"]["job_id"], pkts, tag=False)
    ctl.ctl("job", "release", "survivor")


def test_controller_restart_changes_nothing(setup):
    ctl = setup
    r = ctl.ctl("job", "allocate", "--name", "steady", "--mode", "tag", "--switch", "s1")
    job_id = r["job"]["job_id"]
    send(packets(job_id, steps=(9, 9)))
    before_state = wait_packets(ctl, "steady", 2)
    assert before_state["packets"] == 2 and before_state["win_start"] != 0
    before_entries = entries_on_switch()
    ctl.stop()
    ctl.start()
    ctl.wait_ready()
    st = ctl.status()
    assert int(st["last_reconcile_changes"]) == 0, st
    assert entries_on_switch() == before_entries
    # No pipeline push (it would have wiped the registers), no register reset.
    assert live_of(ctl, "steady") == before_state
    ctl.ctl("job", "release", "steady")


def metric(ctl: Controller, name: str) -> float:
    """One sample of the daemon's /metrics (switch s1)."""
    import urllib.request

    with urllib.request.urlopen(f"http://{ctl.metrics}/metrics", timeout=10) as f:
        text = f.read().decode()
    for line in text.splitlines():
        if line.startswith(f'{name}{{switch="s1"}} '):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


class CountingThrift:
    """bmv2's real Thrift client, counting the calls made through it."""

    def __init__(self, client) -> None:
        self.client = client
        self.calls = 0

    def __getattr__(self, name: str):
        fn = getattr(self.client, name)

        def call(*args):
            self.calls += 1
            return fn(*args)

        return call


def test_a_change_writes_only_its_job_and_telemetry_reads_whole_arrays(setup):
    """With hundreds of live jobs on the switch, allocating, re-parameterising and releasing one
    job writes that job's entries only (counted P4Runtime updates and the switch's tables), and
    reading every job's state takes the same number of calls as reading a few dozen."""
    import finsy
    import grpc

    from symphony.api import symphony_pb2 as pb
    from symphony.api import symphony_pb2_grpc as pb_grpc
    from symphony.switch.registers import READ_ALL_FROM, ThriftJobRegisters
    from symphony.switch.thrift_registers import Bmv2Thrift

    ctl = setup
    stub = pb_grpc.JobServiceStub(grpc.insecure_channel(ctl.api))
    many = 300
    names = [f"fill-{i}" for i in range(many)]
    for i, name in enumerate(names):
        r = stub.Allocate(
            pb.AllocateRequest(
                request_key=name, name=name, mode="hosts",
                hosts=[f"10.7.{i // 200}.{i % 200 + 1}"], switches=["s1"],
            ),
            timeout=30,
        )  # fmt: skip
        assert r.switches[0].status == "installed"
    before = entries_on_switch()
    updates = metric(ctl, "symphony_switch_updates_total")

    r = ctl.ctl("job", "allocate", "--name", "one", "--mode", "tag", "--switch", "s1")
    job_id = r["job"]["job_id"]
    assert metric(ctl, "symphony_switch_updates_total") - updates == 2  # job_params + job_by_tag
    after = entries_on_switch()
    added = [after[k] for k in after.keys() - before.keys()]
    assert before.keys() <= after.keys()
    assert sorted(e.table for e in added) == [T_JOB_BY_TAG, T_JOB_PARAMS], added

    updates = metric(ctl, "symphony_switch_updates_total")
    ctl.ctl("params", "set", "--job", "one", "k=0.02")
    assert metric(ctl, "symphony_switch_updates_total") - updates == 1  # its job_params
    changed = entries_on_switch()
    new, old = changed.keys() - after.keys(), after.keys() - changed.keys()
    assert len(new) == len(old) == 1  # one entry replaced: the job's parameters
    assert {changed[k].table for k in new} == {after[k].table for k in old} == {T_JOB_PARAMS}
    assert all(str(job_id) in changed[k].match for k in new)

    updates = metric(ctl, "symphony_switch_updates_total")
    ctl.ctl("job", "release", "one")
    assert metric(ctl, "symphony_switch_updates_total") - updates == 2
    assert entries_on_switch().keys() == before.keys()

    # Telemetry: a constant number of calls per sweep, whatever the number of jobs read.
    job_ids = [j["job_id"] for j in ctl.ctl("job", "list")["jobs"]]
    assert len(job_ids) >= many

    async def calls_for(ids: list[int]) -> tuple[int, int]:
        opts = finsy.SwitchOptions(device_id=ENV.device_id, initial_election_id=1)
        async with finsy.Switch("reader", ENV.grpc_addr, opts) as sw:
            thrift = CountingThrift(Bmv2Thrift(ENV.grpc_host, ENV.thrift_port))
            regs = ThriftJobRegisters(ENV.grpc_host, ENV.thrift_port, client=thrift, switch=sw)
            states = await regs.read(ids)
            assert sorted(states) == sorted(ids)
            return thrift.calls, len(states)

    few, _ = asyncio.run(calls_for(job_ids[:READ_ALL_FROM]))
    all_, n = asyncio.run(calls_for(job_ids))
    assert n >= many and few == all_ == len(p4names.JOB_REGISTERS)

    for name in names:
        stub.Release(pb.JobRef(job=name), timeout=30)
    assert not any(e.table == T_JOB_BY_SRC for e in entries_on_switch().values())


def test_overlap_gauge_tracks_a_two_step_misalignment_into_prometheus(setup, tmp_path):
    """bmv2 against the golden model for a job whose workers are two steps apart, then the same
    numbers out of a real Prometheus scraping the controller: live jobs, marks, step overlap,
    the recording rule, and every query of the Grafana dashboard."""
    from services import Prometheus, missing_tools, wait_for

    from conformance.packets import WRITE_FIRST, WRITE_LAST, WRITE_MIDDLE, rocev2
    from symphony.model.params import JobParams
    from symphony_tools import dashboard

    if (why := missing_tools("prometheus")) is not None:
        pytest.skip(f"Prometheus test skipped: {why}")
    ctl = setup
    # No window closes during the test; k = 255 marks every outpacing packet past the warm-up
    # (P = 1), so the switch's marks are exact too.
    prm = JobParams(t_win_us=2_000_000_000.0, k=255.0, n_warmup=2, n_sample=4)
    args = [f"--param={k}={v}" for k, v in (("t_win_us", prm.t_win_us), ("k", prm.k),
            ("n_warmup", prm.n_warmup), ("n_sample", prm.n_sample))]  # fmt: skip
    r = ctl.ctl("job", "allocate", "--name", "overlap", "--mode", "tag", "--switch", "s1", *args)
    job_id = r["job"]["job_id"]

    def msg(step, n, src, last=False, psn=100):
        ops = [WRITE_FIRST] + [WRITE_MIDDLE] * (n - 2) + [WRITE_LAST if last else WRITE_MIDDLE]
        return [
            rocev2(opcode=op, step=step, psn=psn + i, tag=job_id, src=src, dst="10.0.1.1")
            for i, op in enumerate(ops)
        ]

    # Worker A finishes step 4 and is 5 packets into step 5; worker B is already in step 7.
    pkts = msg(4, 2, "10.0.0.1", last=True) + msg(5, 6, "10.0.0.1") + msg(7, 4, "10.0.0.2")
    send(pkts)
    live = wait_packets(ctl, "overlap", len(pkts))
    want = expected_state(job_id, pkts, params=prm, marks=True)
    assert masked(live) == want
    assert (live["step_min"], live["step_max"], live["step_overlap"]) == (5, 7, 3)
    assert live["marks"] == want["marks"] == 3  # B's MIDDLEs; its FIRST has p = 0
    show = subprocess.run(
        [sys.executable, "-m", "symphony.cli", "--api", ctl.api, "job", "show", "overlap"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert "OVERLAP" in show
    print(f"golden model: {want}\nsymphonyctl job show overlap:\n{show}")

    rules = Path(__file__).resolve().parents[2] / "deploy/prometheus/symphony-rules.yml"
    prom = Prometheus(tmp_path, [ctl.metrics], [rules])
    try:
        sel = f'job_name="overlap",job_id="{job_id}",switch="s1"'

        def value(expr: str) -> float | None:
            got = prom.query(expr)
            return float(got[0]["value"][1]) if got else None

        assert (
            wait_for("overlap scraped", lambda: value(f"symphony_job_step_overlap{{{sel}}}")) == 3
        )
        assert value(f"symphony_job_step_max{{{sel}}}") == 7
        assert value(f"symphony_job_step_min{{{sel}}}") == 5
        assert value(f"symphony_job_symphony_marks_total{{{sel}}}") == 3
        assert value('symphony_jobs{state="active"}') >= 1
        assert value('symphony_switch_up{switch="s1"}') == 1
        rec = f'symphony:job_step_overlap:max{{job_name="overlap",job_id="{job_id}"}}'
        assert wait_for("recording rule", lambda: value(rec)) == 3
        print(f"prometheus: {rec} = 3, symphony_job_step_overlap{{{sel}}} = 3, step_max 7, "
              "step_min 5, symphony_job_symphony_marks_total 3")  # fmt: skip
        # Every dashboard query evaluates on the real server, and all but the read-error panel
        # (no errors: no series) have data.
        board = json.loads(dashboard.OUT.read_text())
        for title, expr in dashboard.queries(board):
            got = wait_for(
                f"dashboard panel {title!r}: {expr}",
                lambda e=expr, t=title: prom.query(e) or (t == "Telemetry read errors" or None),
            )
            n = "no series (no read errors)" if got is True else f"{len(got)} series"
            print(f"dashboard {title!r}: {expr} -> {n}")
    finally:
        prom.stop()
        ctl.ctl("job", "release", "overlap")
