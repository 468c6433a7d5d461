"""The bmv2 fabric (symphony_tools/fabric.py) described for the loss meter (losses.py): every
switch with the interface bmv2 owns per port, every veth pair (leaf-spine links in this
namespace, host links with the host's end in its namespace). The fabric's experiments and
bench/fabric_rate.py count every lost frame with it, as the one-switch experiments do."""

from __future__ import annotations

from evaluation.hosts import losses
from symphony_tools.fabric import Topology


def loss_topology(topo: Topology) -> losses.Topology:
    switches = tuple(
        losses.Switch(
            sw.name,
            sw.thrift_port,
            tuple((p, losses.Iface(name)) for p, name in enumerate(sw.interfaces)),
        )
        for sw in topo.switches
    )
    links = tuple(losses.Link(losses.Iface(lk.a_if), losses.Iface(lk.b_if)) for lk in topo.links)
    links += tuple(
        losses.Link(losses.Iface(topo.leaf_if(h.leaf, h.port)), losses.Iface(h.ifname, h.netns))
        for h in topo.hosts
    )
    return losses.Topology(switches, links)
