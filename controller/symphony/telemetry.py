"""Prometheus ``/metrics``: per-job, per-switch series plus switch and job-table health.

Switch reads are asynchronous and can be slow, and a scrape must not wait on a switch, so a
poller task in the daemon's loop reads every switch every ``telemetry_interval_s`` into a
snapshot, and the collector (called from the HTTP server's thread) only formats that snapshot.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

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


class SymphonyCollector(Collector):
    def __init__(self, manager: JobManager) -> None:
        self.manager = manager
        self.snapshot = Snapshot()
        self._lock = threading.Lock()

    def publish(self, snapshot: Snapshot) -> None:
        with self._lock:
            self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snap = self.snapshot
        # "job_name", not "job": Prometheus gives every scraped series its scrape job in "job"
        # (and would rename ours to "exported_job").
        labels = ["job_id", "job_name", "switch"]
        families = {}
        for f, (name, doc, is_counter) in JOB_SERIES.items():
            cls = CounterMetricFamily if is_counter else GaugeMetricFamily
            families[f] = cls(name, doc, labels=labels)
        for (job_id, job_name, sw), state in sorted(snap.jobs.items()):
            values = {**asdict(state), "step_overlap": state.step_overlap}
            for f, fam in families.items():
                fam.add_metric([str(job_id), job_name, sw], values[f])
        yield from families.values()

        errors = CounterMetricFamily(
            "symphony_telemetry_read_errors",
            "Failed reads of job state, per switch.",
            labels=["switch"],
        )
        for sw, n in sorted(snap.read_errors.items()):
            errors.add_metric([sw], n)
        yield errors

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
        for s in self.manager.switch_status():
            up.add_metric([s.name], 1.0 if s.state == "ready" else 0.0)
            connects.add_metric([s.name], s.connects)
            entries.add_metric([s.name], s.entries)
        yield from (up, connects, entries)

        jobs = GaugeMetricFamily("symphony_jobs", "Live jobs by state.", labels=["state"])
        counts: dict[str, int] = {"active": 0, "releasing": 0}
        for job in self.manager.list():
            counts[job.state] = counts.get(job.state, 0) + 1
        for state, n in sorted(counts.items()):
            jobs.add_metric([state], n)
        yield jobs


async def poll(manager: JobManager, collector: SymphonyCollector, interval: float) -> None:
    """Read every active job's state from every ready switch on its path, forever."""
    errors: dict[str, int] = {}
    while True:
        await poll_once(manager, collector, errors)
        await asyncio.sleep(interval)


async def poll_once(
    manager: JobManager, collector: SymphonyCollector, errors: dict[str, int]
) -> None:
    snap = Snapshot(read_errors=errors)
    for name, session in manager.sessions.items():
        if not session.is_ready:
            continue
        active, _ = manager.jobs_on(name)
        if not active:
            continue
        try:
            states: Mapping[int, Any] = await session.read_state(j.job_id for j in active)
        except Exception as exc:  # counted and logged; the next poll retries
            errors[name] = errors.get(name, 0) + 1
            LOG.debug("telemetry read from %s failed: %s", name, exc)
            continue
        for job in active:
            if job.job_id in states:
                snap.jobs[(job.job_id, job.name, name)] = states[job.job_id]
    collector.publish(snap)


def serve(collector: SymphonyCollector, listen: str, token: str | None = None) -> Any:
    """The /metrics HTTP server in its own thread. With ``token`` every request must carry
    ``Authorization: Bearer <token>`` (the API's token; Prometheus sends it with
    ``authorization.credentials_file``), else it gets 401."""
    registry = CollectorRegistry()
    registry.register(collector)
    host, port = split_host_port(listen)
    if token is None:
        server, _thread = start_http_server(port, addr=host.strip("[]"), registry=registry)
    else:
        server = _serve_with_token(make_wsgi_app(registry), host.strip("[]"), port, token)
    LOG.info("metrics on http://%s/metrics%s", listen, " (token)" if token else "")
    return server


def _serve_with_token(app: Any, host: str, port: int, token: str) -> Any:
    expected = f"Bearer {token}".encode()

    def guarded(environ: dict[str, Any], start_response: Any) -> Any:
        got = environ.get("HTTP_AUTHORIZATION", "").encode()
        if hmac.compare_digest(got, expected):
            return app(environ, start_response)
        start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer")])
        return [b"missing or wrong token\n"]

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = make_server(host, port, guarded, ThreadingWSGIServer, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    return server
