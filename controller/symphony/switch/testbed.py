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
