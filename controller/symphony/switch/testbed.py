"""The 4-port bmv2 testbed shared by the PTF suite, the benchmarks and the experiments.

Switch port i is veth(2i) and its host side veth(2i+1) (bmv2_env/env.sh). Hosts 10.0.i.0/24
sit behind port i; non-IPv4 traffic crosses 0 <-> 1 and 2 <-> 3.
"""

from __future__ import annotations

from symphony.model import tables
from symphony.model.tables import TableEntrySpec

PORTS = 4
# bmv2 timestamps tick in microseconds.
BMV2_TICK_NS = 1000
FORWARD = "SymphonyIngress.forward"
CLASSIFY = "SymphonyIngress.classify"


def host_if(port: int) -> str:
    return f"veth{2 * port + 1}"


def route(prefix: int, plen: int, port: int) -> TableEntrySpec:
    return TableEntrySpec(
        table=f"{FORWARD}.ipv4_lpm",
        match={"dst_addr": (prefix, plen)},
        action=f"{FORWARD}.set_egress_port",
        params={"port": port},
    )


def base_entries() -> list[TableEntrySpec]:
    """Routes, the cross-connect and the lookup tables."""
    specs = [route(0x0A000000 | i << 8, 24, i) for i in range(PORTS)]
    specs += [
        TableEntrySpec(
            table=f"{FORWARD}.port_map",
            match={"ingress_port": i},
            action=f"{FORWARD}.set_egress_port",
            params={"port": i ^ 1},
        )
        for i in range(PORTS)
    ]
    return specs + list(tables.lut_entries())


def job_entries(
    job_id: int, action_params: dict[str, int], *, tag: bool = True, hosts: tuple[int, ...] = ()
) -> list[TableEntrySpec]:
    """A job's parameters first, then its classifiers: a packet classified to a job must find
    the job's parameters (the switch would leave it untracked otherwise)."""
    specs = [
        TableEntrySpec(
            table=f"{CLASSIFY}.job_params",
            match={"job_id": job_id},
            action=f"{CLASSIFY}.set_params",
            params=dict(action_params),
        )
    ]
    classify = [("job_by_tag", {"tag": job_id})] if tag else []
    classify += [("job_by_src", {"src_addr": h}) for h in hosts]
    specs += [
        TableEntrySpec(
            table=f"{CLASSIFY}.{table}",
            match=match,
            action=f"{CLASSIFY}.set_job",
            params={"job_id": job_id},
        )
        for table, match in classify
    ]
    return specs
