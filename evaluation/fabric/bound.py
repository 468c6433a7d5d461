"""What is possible: the link-load lower bound of one run.

Whatever the congestion control does, a link cannot carry its bytes faster than its rate: a run
lasts at least max over egress ports of (data packets its flows' paths put through the port x
the port's serialisation time). Data only: ACKs share a data port's link direction but their
number and size depend on the ACK policy (the congestion-control profile), and background
bursts are left out too, so this stays a lower bound for every profile. With static balanced
routing every port carries at most what each NIC sends, and the bound is the lockstep bound.
"""

from __future__ import annotations

import numpy as np

from evaluation.fabric.topology import Fabric, Workload

PS = 1_000_000  # ps per us


def port_packets(fab: Fabric, wl: Workload) -> np.ndarray:
    """Data packets through each egress port, over all flows' paths (NIC ports included)."""
    pkts = np.zeros(fab.n_ports, dtype=np.int64)
    hop = np.arange(wl.f_path.shape[1])
    on = hop[None, :] < wl.f_plen[:, None]
    npk = np.broadcast_to(wl.f_npk[:, None], wl.f_path.shape)
    np.add.at(pkts, wl.f_path[on], npk[on])
    return pkts


def link_load_bound_us(fab: Fabric, wl: Workload) -> float:
    return float((port_packets(fab, wl) * fab.port_ser_ps).max()) / PS
