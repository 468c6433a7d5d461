"""/metrics: per-job, per-switch series from the poller's snapshot."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest

from symphony import telemetry
from symphony.model.pipeline import JobState


class FakeSession:
    def __init__(self, states, ready=True, fail=False):
        self.states = states
        self.is_ready = ready
        self.fail = fail

    async def read_state(self, job_ids):
        if self.fail:
            raise OSError("thrift down")
        return {j: self.states[j] for j in job_ids}


class FakeManager:
    def __init__(self, sessions, jobs):
        self.sessions = sessions
        self.jobs = jobs

    def jobs_on(self, switch):
        return [j for j in self.jobs if switch in j.switches], []

    def switch_status(self):
        return [
            SimpleNamespace(name=n, state="ready" if s.is_ready else "down", connects=2, entries=10)
            for n, s in self.sessions.items()
        ]

    def list(self):
        return [SimpleNamespace(state="active") for _ in self.jobs]


def test_metrics_have_per_job_per_switch_series():
    job = SimpleNamespace(job_id=7, name="resnet", switches=("s1", "s2", "s3"))
    mgr = FakeManager(
        {
            "s1": FakeSession({7: JobState(step_min=3, step_max=5, alpha=2, packets=40, marks=4)}),
            "s2": FakeSession({}, fail=True),
            "s3": FakeSession({}, ready=False),
        },
        [job],
    )
    col = telemetry.SymphonyCollector(mgr)
    asyncio.run(telemetry.poll_once(mgr, col, {}))
    reg = CollectorRegistry()
    reg.register(col)
    text = generate_latest(reg).decode()
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
    assert 'symphony_jobs{state="active"} 1.0' in text
