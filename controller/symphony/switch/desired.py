"""What one switch should hold: the entries derived from the config and the jobs on its path.

Pure functions of (switch config, jobs, parameters): the session diffs their result against what
it reads from the switch. Names are the P4Info names of docs/design.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from symphony.config import SwitchConfig
from symphony.jobs.store import Job

T_IPV4_LPM = "SymphonyIngress.forward.ipv4_lpm"
T_PORT_MAP = "SymphonyIngress.forward.port_map"
A_SET_EGRESS = "SymphonyIngress.forward.set_egress_port"
T_JOB_BY_TAG = "SymphonyIngress.classify.job_by_tag"
T_JOB_BY_SRC = "SymphonyIngress.classify.job_by_src"
T_JOB_PARAMS = "SymphonyIngress.classify.job_params"
A_SET_JOB = "SymphonyIngress.classify.set_job"
A_SET_PARAMS = "SymphonyIngress.classify.set_params"

# Tables whose entries belong to one job; everything else is "base" (config + lookup tables).
JOB_TABLES = (T_JOB_PARAMS, T_JOB_BY_TAG, T_JOB_BY_SRC)


def spec_class() -> Any:
    from symphony.model.tables import TableEntrySpec

    return TableEntrySpec


def base_entries(sw: SwitchConfig) -> list[Any]:
    """Routes, the non-IPv4 cross-connect, per-port queue marking and the lookup tables."""
    from symphony.model import tables
    from symphony.model.params import QueueParams

    spec = spec_class()
    out: list[Any] = []
    for route in sw.routes:
        prefix = (int(route.prefix.network_address), route.prefix.prefixlen)
        out.append(
            spec(
                table=T_IPV4_LPM,
                match={"dst_addr": prefix},
                action=A_SET_EGRESS,
                params={"port": route.port},
            )
        )
    for port in sw.ports:
        if port.peer is not None:
            out.append(
                spec(
                    table=T_PORT_MAP,
                    match={"ingress_port": port.port},
                    action=A_SET_EGRESS,
                    params={"port": port.peer},
                )
            )
        m = port.marking
        out.extend(tables.queue_mark_entries(port.port, QueueParams(m.k_min, m.k_max, m.p_max)))
    out.extend(tables.lut_entries())
    return out


def job_entries(job: Job, action_params: dict[str, int]) -> list[Any]:
    """A stored job's entries (see `entries_for`)."""
    hosts = tuple(_ipv4(h) for h in job.hosts) if job.mode != "tag" else ()
    return entries_for(job.job_id, action_params, tag=job.mode == "tag", hosts=hosts)


def entries_for(
    job_id: int, action_params: dict[str, int], *, tag: bool = True, hosts: tuple[int, ...] = ()
) -> list[Any]:
    """A job's entries: its parameters, then its classifier(s). The order matters on insert: a
    packet classified to a job must find that job's parameters (the switch leaves it untracked
    otherwise)."""
    spec = spec_class()
    out = [
        spec(
            table=T_JOB_PARAMS,
            match={"job_id": job_id},
            action=A_SET_PARAMS,
            params=dict(action_params),
        )
    ]
    if tag:
        out.append(
            spec(
                table=T_JOB_BY_TAG,
                match={"tag": job_id},
                action=A_SET_JOB,
                params={"job_id": job_id},
            )
        )
    out += [
        spec(table=T_JOB_BY_SRC, match={"src_addr": h}, action=A_SET_JOB, params={"job_id": job_id})
        for h in hosts
    ]
    return out


def all_job_entries(
    jobs: Iterable[Job], action_params_for: Callable[[Job], dict[str, int]]
) -> dict[int, list[Any]]:
    return {job.job_id: job_entries(job, action_params_for(job)) for job in jobs}


def _ipv4(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d
