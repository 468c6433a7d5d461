"""Controller benchmark against bmv2, at scale: allocate+install latency (p50/p99) with 0, 1,000
and 16,000 live jobs on the switch, allocations per second with concurrent clients, cold start
and restart with a full switch (16,383 jobs), and the telemetry sweep and scrape at that size.

    make build
    flock /tmp/symphony-bmv2.lock .venv/bin/python bench/controller_bench.py \\
        [--live 0,1000,16000] [--seq 100] [--jobs 200] [--concurrency 8] [--full 16383]

Runs the real daemon (subprocess) against a bmv2 it starts and stops itself (bmv2_env/start.sh
and stop.sh, so root), named by the variables of bmv2_env/env.sh with their defaults, and
drives it through the gRPC API like a scheduler would. For each live-job count N it restarts
bmv2 (no pipeline), writes N jobs into a fresh database (the scheduler's history), starts the
daemon (cold start: pipeline push + N jobs installed), then times sequential allocations,
releases, concurrent allocations, and a daemon restart (which must make 0 changes). Prints a
table with the command line and writes ``controller_bench.json`` and ``controller_curve.png``
to ``--out``. It refuses to touch a bmv2 already running in $SYMPHONY_RUN_DIR: run it on its
own instance, e.g.

    SYMPHONY_VETH_BASE=80 SYMPHONY_GRPC_ADDR=127.0.0.1:9959 SYMPHONY_THRIFT_PORT=9490 \\
    SYMPHONY_RUN_DIR=$PWD/run/bmv2-bench flock /tmp/symphony-bmv2.lock \\
    .venv/bin/python bench/controller_bench.py
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.jobs.store import JobStore
from symphony_tools.ports import free_port
from symphony_tools.testbed import BMV2_JSON, P4INFO, Bmv2Env

ROOT = Path(__file__).resolve().parents[1]
ENV = Bmv2Env.from_env()


def bmv2(action: str, *args: str) -> None:
    ENV.script(action, *args)


def host(i: int, net: int) -> str:
    """The i-th distinct unicast address of 10.<net>.0.0/14-ish space (250 per /24)."""
    return f"10.{net + i // 62500}.{i // 250 % 250}.{i % 250 + 1}"


def preload(db: Path, n: int) -> float:
    """N hosts-mode jobs on s1 written straight into a fresh database: seconds taken."""
    t0 = time.perf_counter()
    store = JobStore(db)
    # Durability is not what is measured here; the daemon reopens with synchronous=FULL.
    store._db.execute("PRAGMA synchronous=OFF")
    for i in range(n):
        store.allocate(f"pre-{i}", f"pre-{i}", "hosts", [host(i, 100)], ["s1"], {})
    store.close()
    return time.perf_counter() - t0


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


class Daemon:
    def __init__(self, tmp: Path, telemetry_s: float) -> None:
        self.tmp = tmp
        self.api = f"127.0.0.1:{free_port()}"
        self.metrics = f"127.0.0.1:{free_port()}"
        (tmp / "c.toml").write_text(
            ENV.controller_toml(
                api=self.api,
                metrics=self.metrics,
                p4info=P4INFO,
                bmv2_json=BMV2_JSON,
                ports=2,
                controller=f"reconcile_interval_s = 600\ntelemetry_interval_s = {telemetry_s}\n"
                "install_timeout_s = 30",
            )
        )
        self.proc: subprocess.Popen | None = None
        self.stub = pb_grpc.JobServiceStub(grpc.insecure_channel(self.api))

    def start(self, expect_jobs: int, limit_s: float = 300) -> float:
        """Start the daemon; seconds until s1 is reconciled and holds ``expect_jobs`` jobs."""
        log = open(self.tmp / "controller.log", "ab")  # noqa: SIM115 - the daemon's lifetime
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "symphony.daemon",
                "--config",
                str(self.tmp / "c.toml"),
                "--log-level",
                "WARNING",
            ],
            stdout=log,
            stderr=log,
        )
        log.close()
        while True:
            try:
                st = self.status()
                if st.state == "ready" and st.jobs == expect_jobs:
                    return time.monotonic() - t0
            except grpc.RpcError:
                pass
            if self.proc.poll() is not None or time.monotonic() - t0 > limit_s:
                raise SystemExit(f"s1 not ready with {expect_jobs} jobs; see {self.tmp}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)

    def status(self) -> pb.SwitchInfo:
        return self.stub.SwitchStatus(pb.SwitchStatusRequest(), timeout=2).switches[0]

    def allocate(self, i: int) -> float:
        t = time.perf_counter()
        r = self.stub.Allocate(
            pb.AllocateRequest(
                request_key=f"bench-{i}",
                name=f"bench-{i}",
                mode="hosts",
                hosts=[host(i, 9)],
                switches=["s1"],
            ),
            timeout=60,
        )
        assert r.switches[0].status == "installed", r.switches[0].status
        return time.perf_counter() - t

    def release(self, i: int) -> float:
        t = time.perf_counter()
        r = self.stub.Release(pb.JobRef(job=f"bench-{i}"), timeout=60)
        assert r.job.state == "released", r.job.state
        return time.perf_counter() - t

    def scrape(self) -> tuple[float, str]:
        t = time.perf_counter()
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=30) as f:
            text = f.read().decode()
        return time.perf_counter() - t, text


def telemetry(d: Daemon, jobs: int, limit_s: float = 60) -> tuple[float, float, int]:
    """Wait for a sweep that covered every job: (sweep seconds, scrape seconds, job series)."""
    t0 = time.monotonic()
    while True:
        secs, text = d.scrape()
        series = text.count("\nsymphony_job_packets_total{")
        if series == jobs:
            sweep = next(
                float(line.split()[1])
                for line in text.splitlines()
                if line.startswith("symphony_telemetry_sweep_seconds ")
            )
            return sweep, secs, series
        if time.monotonic() - t0 > limit_s:
            raise SystemExit(f"telemetry showed {series} of {jobs} jobs after {limit_s} s")
        time.sleep(0.5)


@dataclass
class Point:
    live: int
    preload_s: float = 0.0
    cold_start_s: float = 0.0
    seq_alloc_ms: list[float] = field(default_factory=list)
    seq_release_ms: list[float] = field(default_factory=list)
    conc_alloc_ms: list[float] = field(default_factory=list)
    allocations_per_s: float = 0.0
    restart_s: float = 0.0
    restart_changes: int = -1
    restart_jobs: int = 0
    sweep_s: float = 0.0
    scrape_s: float = 0.0


def run_point(n: int, args: argparse.Namespace, seq: bool) -> Point:
    p = Point(n)
    tmp = Path(tempfile.mkdtemp(prefix=f"symphony-bench-{n}-"))
    bmv2("stop", "--keep-ports")
    bmv2("start")
    d = Daemon(tmp, args.telemetry_interval)
    try:
        p.preload_s = preload(tmp / "jobs.db", n)
        p.cold_start_s = d.start(n)
        live = n
        if seq:
            # One allocation and release first: the API channel's connection is not measured.
            d.allocate(10**6)
            d.release(10**6)
            p.seq_alloc_ms = [d.allocate(i) * 1000 for i in range(args.seq)]
            p.seq_release_ms = [d.release(i) * 1000 for i in range(args.seq)]
            base = args.seq
            t_all = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                lat = list(pool.map(d.allocate, range(base, base + args.jobs)))
            p.allocations_per_s = args.jobs / (time.perf_counter() - t_all)
            p.conc_alloc_ms = [x * 1000 for x in lat]
            live = n + args.jobs
        p.sweep_s, p.scrape_s, _ = telemetry(d, live)
        d.stop()
        p.restart_s = d.start(live)
        st = d.status()
        p.restart_changes, p.restart_jobs = st.last_reconcile_changes, st.jobs
    finally:
        d.stop()
        bmv2("stop")
    return p


def plot(points: list[Point], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [p for p in points if p.seq_alloc_ms]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [p.live for p in pts]
    ax.plot(xs, [pct(p.seq_alloc_ms, 0.5) for p in pts], "o-", label="p50")
    ax.plot(xs, [pct(p.seq_alloc_ms, 0.99) for p in pts], "s-", label="p99")
    ax.axhline(10, color="grey", ls=":", lw=1, label="target p50 10 ms")
    ax.axhline(30, color="grey", ls="--", lw=1, label="target p99 30 ms")
    ax.set_xlabel("live jobs on the switch")
    ax.set_ylabel("allocate + install (ms), sequential")
    ax.set_ylim(bottom=0)
    ax.set_title("Controller on bmv2: latency against switch fill")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--live", default="0,1000,16000", help="live-job counts for the curve")
    ap.add_argument("--seq", type=int, default=200, help="sequential allocations per point")
    ap.add_argument("--jobs", type=int, default=200, help="concurrent allocations per point")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--full", type=int, default=16383, help="jobs for cold start/restart (0: skip)")
    ap.add_argument("--out", type=Path, default=ROOT / "build/bench")
    ap.add_argument(
        "--telemetry-interval", type=float, default=2.0, help="the daemon's sweep period (s)"
    )
    args = ap.parse_args()
    if (ENV.run_dir / "switch.pid").exists():
        raise SystemExit(f"a bmv2 may be running in {ENV.run_dir}: use another SYMPHONY_RUN_DIR")

    points = [run_point(int(n), args, seq=True) for n in args.live.split(",") if n]
    if args.full:
        points.append(run_point(args.full, args, seq=False))

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "controller_bench.json").write_text(
        json.dumps([asdict(p) for p in points], indent=1)
    )
    plot(points, args.out / "controller_curve.png")

    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"switch: bmv2 P4Runtime {ENV.grpc_addr}, Thrift {ENV.thrift_port}; {os.cpu_count()} CPUs"
    )
    print(
        "| live jobs | allocate p50 / p99 (ms) | release p50 / p99 (ms) | "
        f"{args.concurrency} clients: p50 / p99 (ms), allocations/s | cold start (s) | "
        "restart (s, changes) | telemetry sweep / scrape (s) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for p in points:
        seq = (
            f"{pct(p.seq_alloc_ms, 0.5):.1f} / {pct(p.seq_alloc_ms, 0.99):.1f}"
            if p.seq_alloc_ms
            else "-"
        )
        rel = (
            f"{pct(p.seq_release_ms, 0.5):.1f} / {pct(p.seq_release_ms, 0.99):.1f}"
            if p.seq_release_ms
            else "-"
        )
        conc = (
            f"{pct(p.conc_alloc_ms, 0.5):.1f} / {pct(p.conc_alloc_ms, 0.99):.1f}, "
            f"{p.allocations_per_s:.0f}/s"
            if p.conc_alloc_ms
            else "-"
        )
        print(
            f"| {p.live} | {seq} | {rel} | {conc} | {p.cold_start_s:.2f} ({p.live} jobs) | "
            f"{p.restart_s:.2f} ({p.restart_jobs} jobs, {p.restart_changes}) | "
            f"{p.sweep_s:.3f} / {p.scrape_s:.3f} |"
        )
    print(f"written: {args.out}/controller_bench.json, {args.out}/controller_curve.png")


if __name__ == "__main__":
    main()
