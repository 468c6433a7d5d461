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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from symphony import heap
from symphony.config import split_host_port
from symphony.foreground import Pause, Yielder, next_turn
from symphony.jobs.manager import JobManager
from symphony.model.switch_model import JobState
from symphony.replica import ReplicaStatus

LOG = logging.getLogger(__name__)
# Prometheus's float text format (+Inf, NaN, no trailing .0 on integers); untyped upstream.
_go_float: Callable[[float], str] = floatToGoString

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
    chunks: list[bytes] = field(default_factory=list)


class SymphonyCollector(Collector):
    def __init__(
        self, manager: JobManager, replica: Callable[[], ReplicaStatus] | None = None
    ) -> None:
        self.manager = manager
        # A replicated controller's leadership (role, epoch, failovers); None: standalone.
        self.replica = replica
        self.snapshot = Snapshot()
        self._lock = threading.Lock()

    def publish(self, snapshot: Snapshot) -> None:
        with self._lock:
            self.snapshot = snapshot

    def exposition(self) -> list[bytes]:
        """The whole /metrics page, in chunks: the per-job series of the last sweep, then the
        rest (the switch and job-table series, rendered now)."""
        with self._lock:
            snap = self.snapshot
        registry = CollectorRegistry()
        registry.register(self)
        return [*snap.chunks, generate_latest(registry)]

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

        if self.replica is not None:
            yield from _replica_series(self.replica())

        jobs = GaugeMetricFamily("symphony_jobs", "Live jobs by state.", labels=["state"])
        counts = {"active": 0, "releasing": 0, **self.manager.count_by_state()}
        for state, n in sorted(counts.items()):
            jobs.add_metric([state], n)
        yield jobs


def _replica_series(st: ReplicaStatus) -> Iterator[Metric]:
    role = GaugeMetricFamily(
        "symphony_replica_role",
        "1 for this replica's role (leader or follower), 0 for the other.",
        labels=["replica", "role"],
    )
    for r in ("leader", "follower"):
        role.add_metric([st.name, r], 1.0 if st.role == r else 0.0)
    yield role
    epoch = GaugeMetricFamily(
        "symphony_replica_epoch",
        "The lease epoch this replica leads with, or the last leader's it saw.",
        labels=["replica"],
    )
    epoch.add_metric([st.name], st.epoch)
    yield epoch
    failovers = CounterMetricFamily(
        "symphony_replica_failovers",
        "Times this replica took the leader lease.",
        labels=["replica"],
    )
    failovers.add_metric([st.name], st.failovers)
    yield failovers


async def poll(manager: JobManager, collector: SymphonyCollector, interval: float) -> None:
    """Read every active job's state from every ready switch on its path, forever.

    A sweep steps aside for API requests (it pauses between its calls and slices while one is in
    progress, for at most ``interval`` in all), and the heap it leaves behind is kept out of the
    cyclic collector's full collections (``heap.Settler``): at 16k jobs those took 30-45 ms of the
    event loop about once per sweep, and an allocation caught behind one missed its 30 ms."""
    errors: dict[str, int] = {}
    settle = heap.Settler(manager.foreground)
    while True:
        # Before the sweep too: what the last interval built (a reconciliation's mirror of 16k
        # jobs, say) is frozen before the sweep's allocations can trigger a full collection.
        settle()
        try:
            await poll_once(manager, collector, errors, Yielder(manager.foreground, interval).pause)
        except Exception:  # a bug in one sweep must not end telemetry for good
            LOG.exception("telemetry sweep failed")
        settle()
        await asyncio.sleep(interval)


# Jobs handled between two pauses: each slice is a few milliseconds of the event loop.
SLICE = 1024


async def poll_once(
    manager: JobManager,
    collector: SymphonyCollector,
    errors: dict[str, int],
    pause: Pause = next_turn,
) -> None:
    """One sweep; ``pause()`` is awaited between its switch calls and slices of work."""
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
            states: Mapping[int, Any] = await session.read_state((j for j, _ in active), pause)
        except Exception as exc:  # counted and logged; the next poll retries
            errors[name] = errors.get(name, 0) + 1
            LOG.debug("telemetry read from %s failed: %s", name, exc)
            continue
        for i in range(0, len(active), SLICE):
            for job_id, job_name in active[i : i + SLICE]:
                if job_id in states:
                    snap.jobs[(job_id, job_name, name)] = states[job_id]
            await pause()
    snap.chunks = await render_jobs(snap.jobs, pause)
    snap.sweep_seconds = time.perf_counter() - t0
    collector.publish(snap)


async def render_jobs(
    jobs: Mapping[tuple[int, str, str], JobState], pause: Pause = next_turn
) -> list[bytes]:
    """The per-job series in the Prometheus text format, as prometheus_client writes them
    (sorted label names, Go float formatting, ``_total`` for counters), in chunks: one per slice
    of jobs, so that no step joins or encodes megabytes at once."""
    keys = sorted(jobs)
    labels: list[str] = []
    for i in range(0, len(keys), SLICE):
        # "job_name", not "job": Prometheus gives every scraped series its scrape job in "job"
        # (and would rename ours to "exported_job").
        labels += [
            f'{{job_id="{job_id}",job_name="{_escape(job)}",switch="{_escape(sw)}"}} '
            for job_id, job, sw in keys[i : i + SLICE]
        ]
        await pause()
    states = [jobs[k] for k in keys]
    out: list[bytes] = []
    for f, (name, doc, is_counter) in JOB_SERIES.items():
        metric = f"{name}_total" if is_counter else name
        kind = "counter" if is_counter else "gauge"
        out.append(f"# HELP {metric} {doc}\n# TYPE {metric} {kind}\n".encode())
        for i in range(0, len(states), SLICE):
            out.append(
                "".join(
                    f"{metric}{lab}{_go_float(getattr(st, f))}\n"
                    for lab, st in zip(labels[i : i + SLICE], states[i : i + SLICE], strict=True)
                ).encode()
            )
            await pause()
    return out


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
                denied = b"missing or wrong token\n"
                self.send_response(401)
                self.send_header("WWW-Authenticate", "Bearer")
                self.send_header("Content-Length", str(len(denied)))
                self.end_headers()
                self.wfile.write(denied)
                return
        if self.path.split("?", 1)[0] not in ("/", "/metrics"):
            self.send_error(404)
            return
        body = self.collector.exposition()
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(sum(map(len, body))))
        self.end_headers()
        for chunk in body:
            self.wfile.write(chunk)

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
    server: ThreadingHTTPServer = server_cls((host, port), handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    LOG.info("metrics on http://%s/metrics%s", listen, " (token)" if token else "")
    return server
