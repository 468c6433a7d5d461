"""Prometheus ``/metrics``: per-job, per-switch series plus switch and job-table health.

Switch reads are asynchronous and can be slow, and a scrape must not wait on a switch, so a
poller task in the daemon's loop reads every switch every ``telemetry_interval_s`` into a
snapshot, and the collector (called from the HTTP server's thread) only formats that snapshot.
A sweep reads whole register and counter arrays (``JobRegisters.read`` of many jobs), so its
switch calls do not grow with the number of jobs; the snapshot holds the active jobs only.

At 16k jobs the per-job series are 131k samples: formatting them through prometheus_client on
every scrape took over a second. The sweep renders them once, in slices that let the event loop
serve requests in between, and the endpoint (our own small HTTP server) sends that text followed
by prometheus_client's rendering of the few switch and job-table series.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from symphony.config import split_host_port
from symphony.jobs.manager import JobManager
from symphony.model.pipeline import JobState

LOG = logging.getLogger(__name__)

# JobState field (or property) -> (metric name, help, is a counter)
JOB_SERIES: dict[str, tuple[str, str, bool]] = {
    "step_min": ("symphony_job_step_min", "Slowest step seen in the job (step_min).", False),
    "psn_rec": ("symphony_job_psn_rec", "Progress of the slowest step (psn_rec).", False),
    "step_max": ("symphony_job_step_max", "Highest step seen in the current window.", False),
    "step_overlap": (
        "symphony_job_step_overlap",
        "Steps in flight: step_max - step_min + 1 in the current window (0: all completed).",
        False,
    ),
    "alpha": ("symphony_job_alpha", "Marking aggressiveness alpha.", False),
    "window_packets": ("symphony_job_window_packets", "Packets in the current window.", False),
    "window_ahead_packets": (
        "symphony_job_window_ahead_packets",
        "Packets of a later step than step_min in the current window.",
        False,
    ),
    "packets": ("symphony_job_packets", "Packets of the job seen by the switch.", True),
    "marks": ("symphony_job_symphony_marks", "Symphony mark decisions.", True),
    "queue_marks": ("symphony_job_queue_marks", "Queue-depth mark decisions.", True),
}


@dataclass
class Snapshot:
    # (job_id, job name, switch) -> state
    jobs: dict[tuple[int, str, str], JobState] = field(default_factory=dict)
    read_errors: dict[str, int] = field(default_factory=dict)
    # Wall time of the sweep that made this snapshot (every switch read, decoded, rendered).
    sweep_seconds: float = 0.0
    # The per-job series in the Prometheus text format (render_jobs), made once per sweep.
    text: bytes = b""


class SymphonyCollector(Collector):
    def __init__(self, manager: JobManager) -> None:
        self.manager = manager
        self.snapshot = Snapshot()
        self._lock = threading.Lock()

    def publish(self, snapshot: Snapshot) -> None:
        with self._lock:
            self.snapshot = snapshot

    def exposition(self) -> bytes:
        """The whole /metrics page: the per-job series of the last sweep, then the rest."""
        with self._lock:
            snap = self.snapshot
        registry = CollectorRegistry()
        registry.register(self)
        return snap.text + generate_latest(registry)

    def collect(self) -> Iterator[Metric]:
        """Everything but the per-job series (those are rendered by the sweep)."""
        with self._lock:
            snap = self.snapshot
        errors = CounterMetricFamily(
            "symphony_telemetry_read_errors",
            "Failed reads of job state, per switch.",
            labels=["switch"],
        )
        for sw, n in sorted(snap.read_errors.items()):
            errors.add_metric([sw], n)
        yield errors
        yield GaugeMetricFamily(
            "symphony_telemetry_sweep_seconds",
            "Time the last telemetry sweep took to read every switch.",
            value=snap.sweep_seconds,
        )

        up = GaugeMetricFamily(
            "symphony_switch_up",
            "1 when the switch is connected and reconciled.",
            labels=["switch"],
        )
        connects = CounterMetricFamily(
            "symphony_switch_connects", "P4Runtime connections made.", labels=["switch"]
        )
        entries = GaugeMetricFamily(
            "symphony_switch_entries",
            "Table entries the controller keeps on the switch.",
            labels=["switch"],
        )
        updates = CounterMetricFamily(
            "symphony_switch_updates",
            "P4Runtime table updates (insert, modify, delete) the controller wrote.",
            labels=["switch"],
        )
        for s in self.manager.switch_status():
            up.add_metric([s.name], 1.0 if s.state == "ready" else 0.0)
            connects.add_metric([s.name], s.connects)
            entries.add_metric([s.name], s.entries)
            updates.add_metric([s.name], s.updates)
        yield from (up, connects, entries, updates)

        jobs = GaugeMetricFamily("symphony_jobs", "Live jobs by state.", labels=["state"])
        counts = {"active": 0, "releasing": 0, **self.manager.count_by_state()}
        for state, n in sorted(counts.items()):
            jobs.add_metric([state], n)
        yield jobs


async def poll(manager: JobManager, collector: SymphonyCollector, interval: float) -> None:
    """Read every active job's state from every ready switch on its path, forever."""
    errors: dict[str, int] = {}
    while True:
        try:
            await poll_once(manager, collector, errors)
        except Exception:  # a bug in one sweep must not end telemetry for good
            LOG.exception("telemetry sweep failed")
        await asyncio.sleep(interval)


async def poll_once(
    manager: JobManager, collector: SymphonyCollector, errors: dict[str, int]
) -> None:
    t0 = time.perf_counter()
    snap = Snapshot(read_errors=errors)
    labels = manager.active_labels()
    for name, session in manager.sessions.items():
        if not session.is_ready:
            continue
        active = [(job_id, job_name) for job_id, job_name, switches in labels if name in switches]
        if not active:
            continue
        try:
            states: Mapping[int, Any] = await session.read_state(j for j, _ in active)
        except Exception as exc:  # counted and logged; the next poll retries
            errors[name] = errors.get(name, 0) + 1
            LOG.debug("telemetry read from %s failed: %s", name, exc)
            continue
        for job_id, job_name in active:
            if job_id in states:
                snap.jobs[(job_id, job_name, name)] = states[job_id]
    snap.text = await render_jobs(snap.jobs)
    snap.sweep_seconds = time.perf_counter() - t0
    collector.publish(snap)


# Jobs rendered between two yields to the event loop (a few milliseconds of work).
RENDER_SLICE = 1024


async def render_jobs(jobs: Mapping[tuple[int, str, str], JobState]) -> bytes:
    """The per-job series in the Prometheus text format, as prometheus_client writes them
    (sorted label names, Go float formatting, ``_total`` for counters)."""
    keys = sorted(jobs)
    # "job_name", not "job": Prometheus gives every scraped series its scrape job in "job"
    # (and would rename ours to "exported_job").
    labels = [
        f'{{job_id="{job_id}",job_name="{_escape(job)}",switch="{_escape(sw)}"}} '
        for job_id, job, sw in keys
    ]
    states = [jobs[k] for k in keys]
    out: list[str] = []
    for f, (name, doc, is_counter) in JOB_SERIES.items():
        metric = f"{name}_total" if is_counter else name
        out.append(
            f"# HELP {metric} {doc}\n# TYPE {metric} {'counter' if is_counter else 'gauge'}\n"
        )
        for i in range(0, len(states), RENDER_SLICE):
            out.extend(
                f"{metric}{lab}{floatToGoString(getattr(st, f))}\n"
                for lab, st in zip(
                    labels[i : i + RENDER_SLICE], states[i : i + RENDER_SLICE], strict=True
                )
            )
            await asyncio.sleep(0)
    return "".join(out).encode()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _MetricsHandler(BaseHTTPRequestHandler):
    collector: SymphonyCollector
    # b"Bearer <token>" when a token is configured, else None.
    expected: bytes | None = None

    def do_GET(self) -> None:
        if self.expected is not None:
            got = (self.headers.get("Authorization") or "").encode()
            if not hmac.compare_digest(got, self.expected):
                body = b"missing or wrong token\n"
                self.send_response(401)
                self.send_header("WWW-Authenticate", "Bearer")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
        if self.path.split("?", 1)[0] not in ("/", "/metrics"):
            self.send_error(404)
            return
        body = self.collector.exposition()
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # scrapes are not news
        pass


def serve(
    collector: SymphonyCollector, listen: str, token: str | None = None
) -> ThreadingHTTPServer:
    """The /metrics endpoint in a daemon thread; ``shutdown()`` stops it. With ``token`` every
    request must carry ``Authorization: Bearer <token>`` (the API's token; Prometheus sends it
    with ``authorization.credentials_file``), else it gets 401."""
    host, port = split_host_port(listen)
    host = host.strip("[]")
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    expected = None if token is None else f"Bearer {token}".encode()
    handler = type("Handler", (_MetricsHandler,), {"collector": collector, "expected": expected})
    server_cls = type("Server", (ThreadingHTTPServer,), {"address_family": family})
    server = server_cls((host, port), handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    LOG.info("metrics on http://%s/metrics%s", listen, " (token)" if token else "")
    return server
