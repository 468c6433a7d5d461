"""/metrics: per-job, per-switch series from the poller's snapshot."""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from symphony import telemetry
from symphony.model.switch_model import JobState


class FakeSession:
    def __init__(self, states, ready=True, fail=False):
        self.states = states
        self.is_ready = ready
        self.fail = fail

    async def read_state(self, job_ids, pause=None):
        if self.fail:
            raise OSError("thrift down")
        return {j: self.states[j] for j in job_ids}


class FakeManager:
    def __init__(self, sessions, jobs):
        self.sessions = sessions
        self.jobs = jobs

    def switch_status(self):
        return [
            SimpleNamespace(
                name=n, state="ready" if s.is_ready else "down", connects=2, entries=10, updates=5
            )
            for n, s in self.sessions.items()
        ]

    def active_labels(self):
        return [(j.job_id, j.name, j.switches) for j in self.jobs if j.state == "active"]

    def count_by_state(self):
        return {"active": len(self.jobs)}  # what the fake's store says


def test_metrics_have_per_job_per_switch_series():
    job = SimpleNamespace(job_id=7, name="resnet", switches=("s1", "s2", "s3"), state="active")
    gone = SimpleNamespace(job_id=8, name="old", switches=("s1",), state="releasing")
    mgr = FakeManager(
        {
            "s1": FakeSession({7: JobState(step_min=3, step_max=5, alpha=2, packets=40, marks=4)}),
            "s2": FakeSession({}, fail=True),
            "s3": FakeSession({}, ready=False),
        },
        [job, gone],
    )
    col = telemetry.SymphonyCollector(mgr)
    asyncio.run(telemetry.poll_once(mgr, col, {}))
    text = b"".join(col.exposition()).decode()
    assert 'symphony_job_step_min{job_id="7",job_name="resnet",switch="s1"} 3.0' in text
    assert 'symphony_job_alpha{job_id="7",job_name="resnet",switch="s1"} 2.0' in text
    assert 'symphony_job_step_max{job_id="7",job_name="resnet",switch="s1"} 5.0' in text
    assert 'symphony_job_step_overlap{job_id="7",job_name="resnet",switch="s1"} 3.0' in text
    assert 'symphony_job_packets_total{job_id="7",job_name="resnet",switch="s1"} 40.0' in text
    assert 'symphony_job_symphony_marks_total{job_id="7",job_name="resnet",switch="s1"} 4.0' in text
    assert 'switch="s2"}' not in text.split("symphony_telemetry_read_errors")[0]
    assert 'symphony_telemetry_read_errors_total{switch="s2"} 1.0' in text
    assert 'symphony_switch_up{switch="s1"} 1.0' in text
    assert 'symphony_switch_up{switch="s3"} 0.0' in text
    assert 'job_name="old"' not in text  # only active jobs have series
    assert 'symphony_jobs{state="active"} 2.0' in text
    assert 'symphony_switch_updates_total{switch="s1"} 5.0' in text


class _Families:
    """The per-job series as prometheus_client's own families would write them."""

    def __init__(self, jobs):
        self.jobs = jobs

    def collect(self):
        for f, (name, doc, is_counter) in telemetry.JOB_SERIES.items():
            cls = CounterMetricFamily if is_counter else GaugeMetricFamily
            fam = cls(name, doc, labels=["job_id", "job_name", "switch"])
            for (job_id, job, sw), st in sorted(self.jobs.items()):
                fam.add_metric([str(job_id), job, sw], getattr(st, f))
            yield fam


def test_rendered_job_series_are_what_prometheus_client_writes():
    """render_jobs (once per sweep) writes byte for byte what prometheus_client's families would,
    for values small, large and fractional."""
    jobs = {
        (7, "resnet", "s1"): JobState(step_min=3, step_max=6, alpha=2, packets=40, marks=4),
        (12, "bert.v2", "s2"): JobState(psn_rec=1 << 23, window_packets=123_456_789, alpha=1),
        (9, "a-b_c", "s1"): JobState(),
    }

    reg = CollectorRegistry()
    reg.register(_Families(jobs))
    assert b"".join(asyncio.run(telemetry.render_jobs(jobs))) == generate_latest(reg)


def test_rendering_in_slices_keeps_every_series_in_order():
    """More jobs than one slice: the chunks join into prometheus_client's text, and the sweep
    paused between its slices."""
    n = 2 * telemetry.SLICE + 7
    jobs = {(j, f"job-{j}", "s1"): JobState(step_min=j, packets=3 * j) for j in range(1, n + 1)}
    reg = CollectorRegistry()
    reg.register(_Families(jobs))
    pauses = 0

    async def pause():
        nonlocal pauses
        pauses += 1

    chunks = asyncio.run(telemetry.render_jobs(jobs, pause))
    assert b"".join(chunks) == generate_latest(reg)
    # 3 slices of labels, then 3 per series
    assert pauses == 3 + 3 * len(telemetry.JOB_SERIES)
    assert max(map(len, chunks)) < len(b"".join(chunks)) / 10


def test_metrics_endpoint_serves_the_exposition():
    import urllib.request

    mgr = FakeManager({}, [])
    col = telemetry.SymphonyCollector(mgr)
    col.publish(telemetry.Snapshot(chunks=[b"# a rendered", b" line\n"]))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = telemetry.serve(col, f"127.0.0.1:{port}")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            body = r.read().decode()
            assert r.headers["Content-Type"].startswith("text/plain")
        assert body.startswith("# a rendered line\n") and "symphony_switch_up" in body
    finally:
        server.shutdown()
        server.server_close()
