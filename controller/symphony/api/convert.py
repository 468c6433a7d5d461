"""Between the API's protobufs and the manager's Python values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from symphony.api import symphony_pb2 as pb
from symphony.jobs.store import Job
from symphony.model.params import PARAM_NAMES
from symphony.model.switch_model import JobState


def params_from_pb(msg: pb.Params) -> dict[str, Any]:
    return {f: getattr(msg, f) for f in PARAM_NAMES if msg.HasField(f)}


def params_to_pb(values: Mapping[str, Any]) -> pb.Params:
    msg = pb.Params()
    for f in PARAM_NAMES:
        if f in values:
            setattr(msg, f, values[f])
    return msg


def job_to_pb(job: Job, effective: Any | None = None) -> pb.Job:
    msg = pb.Job(
        job_id=job.job_id,
        name=job.name,
        mode=job.mode,
        hosts=list(job.hosts),
        switches=list(job.switches),
        params=params_to_pb(job.params),
        state=job.state,
        pending=list(job.pending),
        created_at=job.created_at,
        released_at=job.released_at or 0.0,
        request_key=job.request_key,
    )
    if effective is not None:
        msg.effective.CopyFrom(params_to_pb(asdict(effective)))
    return msg


def live_to_pb(switch: str, state: JobState | str) -> pb.LiveState:
    if isinstance(state, str):
        return pb.LiveState(switch=switch, available=False, error=state)
    return pb.LiveState(
        switch=switch, available=True, step_overlap=state.step_overlap, **asdict(state)
    )


def switch_results(status: Mapping[str, str]) -> list[pb.SwitchResult]:
    return [pb.SwitchResult(switch=k, status=v) for k, v in status.items()]
