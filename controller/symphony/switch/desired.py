"""What one switch should hold: the entries derived from the config and the jobs on its path.

Pure functions of (switch config, its routes derived from the topology, jobs, parameters): the
session diffs their result against what it reads from the switch. Names are the P4Info names of
docs/design.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from symphony import p4names as n
from symphony.config import SwitchConfig
from symphony.config.topology import NextHops
from symphony.jobs.store import Job
from symphony.model import tables
from symphony.model.ecmp import bucket_members
from symphony.model.opcodes import ACK_CLASS
from symphony.model.tables import TableEntrySpec
from symphony.sizes import ECMP_GROUP_ID_MAX

# Tables whose entries belong to one job; everything else is "base" (config + lookup tables).
JOB_TABLES = (n.JOB_PARAMS, n.JOB_BY_TAG, n.JOB_BY_SRC)


def route(prefix: int, plen: int, port: int) -> TableEntrySpec:
    """Packets to prefix/plen leave on port."""
    return TableEntrySpec(
        table=n.IPV4_LPM,
        match={"dst_addr": (prefix, plen)},
        action=n.SET_EGRESS_PORT,
        params={"port": port},
    )


def ecmp_route(prefix: int, plen: int, group: int) -> TableEntrySpec:
    """Packets to prefix/plen leave on a member of ECMP group `group` (see ecmp_group_entries)."""
    _check_group(group)
    return TableEntrySpec(
        table=n.IPV4_LPM,
        match={"dst_addr": (prefix, plen)},
        action=n.SET_ECMP_GROUP,
        params={"group": group},
    )


def ecmp_group_entries(group: int, members: Sequence[int]) -> list[TableEntrySpec]:
    """The member table's entries of one group: every bucket -> its member port
    (model.ecmp.bucket_members). Insert them before the routes that name the group, so that no
    frame finds a route to an empty group (the member table's default drops it)."""
    _check_group(group)
    return [
        TableEntrySpec(
            table=n.ECMP_MEMBER,
            match={"group": group, "bucket": bucket},
            action=n.SET_EGRESS_PORT,
            params={"port": port},
        )
        for bucket, port in enumerate(bucket_members(members))
    ]


def _check_group(group: int) -> None:
    if not 0 < group <= ECMP_GROUP_ID_MAX:
        raise ValueError(f"ecmp group {group}: ids are 1..{ECMP_GROUP_ID_MAX} (0 is no group)")


def cross_connect(in_port: int, out_port: int) -> TableEntrySpec:
    """Non-IPv4 traffic arriving on in_port leaves on out_port."""
    return TableEntrySpec(
        table=n.PORT_MAP,
        match={"ingress_port": in_port},
        action=n.SET_EGRESS_PORT,
        params={"port": out_port},
    )


def ack_class_entries() -> list[TableEntrySpec]:
    """The ACK class (docs/ack_priority.md): each of its opcodes (model.opcodes.ACK_CLASS) to the
    priority egress queue. Only a switch with ack_priority on holds them; without them every
    frame stays in data's queue."""
    return [
        TableEntrySpec(
            table=n.ACK_CLASS, match={"opcode": opcode}, action=n.TO_ACK_QUEUE, params={}
        )
        for opcode in sorted(ACK_CLASS)
    ]


def ecmp_groups(fib: Sequence[NextHops]) -> dict[tuple[int, ...], int]:
    """Member ports -> group id: one group per distinct member set, numbered 1.. in the order of
    the sorted member sets (0 is never a group)."""
    sets = sorted({nh.ports for nh in fib if nh.ecmp})
    return {ports: i for i, ports in enumerate(sets, start=1)}


def fib_entries(fib: Sequence[NextHops]) -> list[TableEntrySpec]:
    """Routes derived from the topology: one next hop -> set_egress_port, several -> the
    ECMP group of those ports (its member entries first)."""
    groups = ecmp_groups(fib)
    out: list[TableEntrySpec] = []
    for ports, group in groups.items():
        out += ecmp_group_entries(group, ports)
    for nh in fib:
        prefix, plen = int(nh.prefix.network_address), nh.prefix.prefixlen
        if nh.ecmp:
            out.append(ecmp_route(prefix, plen, groups[nh.ports]))
        else:
            out.append(route(prefix, plen, nh.ports[0]))
    return out


def base_entries(sw: SwitchConfig, fib: Sequence[NextHops] = ()) -> list[TableEntrySpec]:
    """Routes (the switch's explicit ones and ``fib``, those derived from the topology), the
    non-IPv4 cross-connect, per-port queue marking, the ACK class when the switch has it on and
    the lookup tables."""
    out: list[TableEntrySpec] = []
    for r in sw.routes:
        out.append(route(int(r.prefix.network_address), r.prefix.prefixlen, r.port))
    out += fib_entries(fib)
    for port in sw.ports:
        if port.peer is not None:
            out.append(cross_connect(port.port, port.peer))
        out.extend(tables.queue_mark_entries(port.port, port.marking))
    if sw.ack_priority:
        out += ack_class_entries()
    out.extend(tables.lut_entries())
    return out


def job_entries(job: Job, action_params: dict[str, int]) -> list[TableEntrySpec]:
    """A stored job's entries (see `entries_for`)."""
    hosts = tuple(_ipv4(h) for h in job.hosts) if job.mode != "tag" else ()
    return entries_for(job.job_id, action_params, tag=job.mode == "tag", hosts=hosts)


def entries_for(
    job_id: int, action_params: dict[str, int], *, tag: bool = True, hosts: tuple[int, ...] = ()
) -> list[TableEntrySpec]:
    """A job's entries: its parameters, then its classifier(s). The order matters on insert: a
    packet classified to a job must find that job's parameters (the switch leaves it untracked
    otherwise)."""
    out = [
        TableEntrySpec(
            table=n.JOB_PARAMS,
            match={"job_id": job_id},
            action=n.SET_PARAMS,
            params=dict(action_params),
        )
    ]
    if tag:
        out.append(
            TableEntrySpec(
                table=n.JOB_BY_TAG,
                match={"tag": job_id},
                action=n.SET_JOB,
                params={"job_id": job_id},
            )
        )
    out += [
        TableEntrySpec(
            table=n.JOB_BY_SRC, match={"src_addr": h}, action=n.SET_JOB, params={"job_id": job_id}
        )
        for h in hosts
    ]
    return out


def _ipv4(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d
