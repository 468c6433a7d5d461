"""The controller against a real bmv2 (simple_switch_grpc): allocate -> entries and tracked
packets, release -> gone, bmv2 restart -> reconciled, controller restart -> nothing changes.

Needs simple_switch_grpc on PATH (or /opt/p4/bin), `make build` output in build/bmv2/, and root
(bmv2_env/start.sh creates veth ports). Skips loudly otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build/bmv2"
P4INFO = BUILD / "symphony.p4info.txtpb"
BMV2_JSON = BUILD / "symphony.json"
SWITCH = shutil.which("simple_switch_grpc") or shutil.which(
    "simple_switch_grpc", path="/opt/p4/bin"
)


def _missing() -> str | None:
    if SWITCH is None:
        return "simple_switch_grpc not found on PATH or in /opt/p4/bin (bmv2 with P4Runtime)"
    if not (P4INFO.is_file() and BMV2_JSON.is_file()):
        return f"{BMV2_JSON} / {P4INFO} missing: run `make build`"
    if os.geteuid() != 0:
        return "bmv2_env/start.sh needs root to create veth ports"
    return None


pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(_missing() is not None, reason=f"bmv2 test skipped: {_missing()}"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bmv2(action: str) -> None:
    subprocess.run(
        ["bash", str(ROOT / f"bmv2_env/{action}.sh")],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )


class Controller:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.api = f"127.0.0.1:{free_port()}"
        self.cfg = tmp / "controller.toml"
        self.cfg.write_text(f"""
database = "jobs.db"
[controller]
reconcile_interval_s = 60
backoff_initial_s = 0.05
backoff_max_s = 0.5
[api]
listen = "{self.api}"
[metrics]
listen = "127.0.0.1:{free_port()}"
[pipelines.bmv2]
p4info = "{P4INFO}"
device_config = "{BMV2_JSON}"
[[switches]]
name = "s1"
address = "127.0.0.1:9559"
device_id = 0
target = "bmv2"
thrift_port = 9090
ports = [{{ port = 0 }}, {{ port = 1 }}, {{ port = 2 }}, {{ port = 3 }}]
routes = [{{ prefix = "10.0.0.0/24", port = 0 }}, {{ prefix = "10.0.1.0/24", port = 1 }}]
""")
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

    def ctl(self, *args: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", "symphony.cli", "--api", self.api, "--json", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        return json.loads(out.stdout)

    def wait_ready(self, limit_s: float = 30.0) -> float:
        """Seconds until switch s1 is connected and reconciled."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit_s:
            try:
                st = self.ctl("switch", "status")["switches"][0]
                if st["state"] == "ready":
                    return time.monotonic() - t0
            except AssertionError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"s1 not ready after {limit_s}s; see {self.tmp}/controller.log")


async def _read_entries() -> set[bytes]:
    """Every table entry on the switch, through a second P4Runtime client (backup role)."""
    import finsy
    from finsy import P4TableEntry

    opts = finsy.SwitchOptions(p4info=P4INFO, device_id=0, initial_election_id=1)
    async with finsy.Switch("reader", "127.0.0.1:9559", opts) as sw:
        return {
            e.encode(sw.p4info).SerializeToString(deterministic=True)
            async for e in sw.read(P4TableEntry())
        }


def entries_on_switch() -> set[bytes]:
    return asyncio.run(_read_entries())


def send_tagged(job_id: int, steps=(5, 5, 5)) -> None:
    from scapy.sendrecv import sendp

    from symphony.packets import rocev2

    pkts = [
        rocev2(opcode=0x07, step=s, psn=i, tag=job_id, src="10.0.0.1", dst="10.0.1.1")
        for i, s in enumerate(steps)
    ]  # RDMA WRITE MIDDLE: no step completion
    sendp(pkts, iface="veth1", verbose=False)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    bmv2("stop")
    bmv2("start")
    ctl = Controller(tmp_path_factory.mktemp("controller"))
    ctl.start()
    ctl.wait_ready()
    yield ctl
    ctl.stop()
    bmv2("stop")


def _live(ctl: Controller, job: str) -> dict:
    return ctl.ctl("job", "show", job)["live"][0]


def test_allocate_tracks_packets_and_release_clears(setup):
    ctl = setup
    base = entries_on_switch()
    r = ctl.ctl("job", "allocate", "--name", "itest", "--mode", "tag", "--switch", "s1")
    job_id = r["job"]["job_id"]
    assert r["switches"][0]["status"] == "installed"
    added = entries_on_switch() - base
    assert len(added) == 2  # job_params + job_by_tag
    send_tagged(job_id)
    for _ in range(100):  # packets are processed asynchronously by bmv2
        live = _live(ctl, "itest")
        if int(live["packets"]) >= 3:
            break
        time.sleep(0.05)
    assert live["available"] and int(live["packets"]) == 3
    assert live["step_min"] == 5 and int(live["cnt_total"]) >= 1
    rel = ctl.ctl("job", "release", "itest")
    assert rel["job"]["state"] == "released"
    assert entries_on_switch() == base
    # The ID's registers were zeroed: a new job that gets it starts clean.
    from symphony.switch.registers import ThriftJobRegisters

    state = asyncio.run(ThriftJobRegisters("127.0.0.1", 9090).read([job_id]))[job_id]
    assert state.packets == 0 and state.step_min == 0 and state.alpha == 1


def test_bmv2_restart_is_reconciled(setup):
    ctl = setup
    ctl.ctl(
        "job",
        "allocate",
        "--name",
        "survivor",
        "--mode",
        "hosts",
        "--host",
        "10.0.0.1",
        "--switch",
        "s1",
    )
    before = entries_on_switch()
    bmv2("stop")
    bmv2("start")
    t0 = time.monotonic()
    ctl.wait_ready(limit_s=30)
    while entries_on_switch() != before and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    elapsed = time.monotonic() - t0
    assert entries_on_switch() == before
    print(f"bmv2 restart reconciled in {elapsed:.2f}s")
    assert elapsed < 5.0, f"reconciled after {elapsed:.2f}s"


def test_controller_restart_changes_nothing(setup):
    ctl = setup
    r = ctl.ctl("job", "allocate", "--name", "steady", "--mode", "tag", "--switch", "s1")
    send_tagged(r["job"]["job_id"], steps=(9, 9))
    time.sleep(0.5)
    before_entries = entries_on_switch()
    before_state = _live(ctl, "steady")
    ctl.stop()
    ctl.start()
    ctl.wait_ready()
    st = ctl.ctl("switch", "status")["switches"][0]
    assert int(st["last_reconcile_changes"]) == 0, st
    assert entries_on_switch() == before_entries
    after_state = _live(ctl, "steady")
    # No pipeline push (it would have wiped the registers), no register reset.
    assert after_state == before_state
