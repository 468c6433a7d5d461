"""The fabric simulator's collective, run by the emulated hosts: one workload for both.

`evaluation.fabric.collectives.build_sends` turns a `FabricConfig` into Astra-Sim's sends (who
sends how many bytes to whom, at which step) and their start DAG (a send starts when the sends
it waits for are fully delivered). This module runs that very DAG on the DCQCN hosts of
`evaluation.hosts.nic` through real switches, so the simulator and the switches carry the same
collective: same members, same steps in the UDP source port, same dependencies, same start
jitter rule. As in Astra-Sim's ns-3 backend (and the kernel), every send is a QP of its own, so
a node's next step can overlap its previous one on the wire: the misalignment Symphony acts on.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evaluation.fabric.collectives import Sends
from evaluation.hosts.nic import Fabric, ReceiverQP, SenderQP, StepLog


@dataclass(frozen=True)
class Message:
    """One send as it ran: (first frame out, last frame in) in loop seconds."""

    send: int  # index in Sends
    src: int
    dst: int
    step: int  # what its frames carried in the UDP source port
    first_tx: float
    last_rx: float
    packets: int
    received: int


@dataclass
class CollectiveRun:
    complete: bool
    end_s: float  # loop time when the run stopped
    cct_s: float  # last delivery of the collective (nan when incomplete)
    messages: list[Message]
    qps: list[SenderQP]


def run_collective(
    fab: Fabric,
    sends: Sends,
    *,
    host_key: Mapping[int, int],
    packets_of: Callable[[int], int],
    tag_of: Callable[[int], int],
    window_of: Callable[[int], int] | None = None,
    start_jitter_s: float,
    seed: int,
    limit_s: float,
    stall_s: float,
) -> CollectiveRun:
    """Run `sends` on `fab` (opened, not yet running). `host_key[h]` is the simulator host h's
    key in `fab.hosts`; `packets_of(bytes)` the data packets of a message; `tag_of(job)` the
    Job_ID a send of that job carries; `window_of(f)` send f's window in bytes (None or 0:
    none). Root sends start at a uniform draw in [0, jitter] per host (the simulator draws per
    flow; here per host, as every root of a host is its first step). Returns when every send is
    delivered, when nothing moved for `stall_s` after the last start (a lost frame leaves its
    send undelivered for good: nothing is retransmitted), or when `limit_s` passed."""
    n = len(sends.src)
    waits_for: dict[int, list[int]] = defaultdict(list)
    missing = [0] * n
    for a, b in sends.edges:
        waits_for[a].append(b)
        missing[b] += 1
    qps: list[SenderQP] = []
    msgs: list[StepLog | None] = [None] * n
    send_of_qpn: dict[int, int] = {}
    for f in range(n):
        src, dst = host_key[int(sends.src[f])], host_key[int(sends.dst[f])]
        window = window_of(f) if window_of is not None else 0
        qp = fab.connect(f"s{f}", src, dst, tag=tag_of(int(sends.job[f])), window=window)
        qps.append(qp)
        send_of_qpn[qp.qpn] = f
    steps = [int(s) for s in sends.collective_step]
    done = [0]

    def post(f: int, now: float) -> None:
        msgs[f] = fab.post(
            qps[f], step=steps[f], packets=packets_of(int(sends.msg_bytes[f])), now=now
        )

    def on_delivered(rx: ReceiverQP, _msg: StepLog, now: float) -> None:
        f = send_of_qpn[rx.sender.qpn]
        done[0] += 1
        for g in waits_for[f]:
            missing[g] -= 1
            if missing[g] == 0:
                post(g, now)

    fab.on_delivered = on_delivered
    rng = random.Random(seed)
    host_start = {int(h): rng.uniform(0.0, start_jitter_s) for h in sorted(set(sends.src))}
    roots = [f for f in range(n) if sends.root[f]]

    def starter(f: int) -> Callable[[float], None]:
        return lambda now: post(f, now)

    last_start = max(host_start.values(), default=0.0)
    end = fab.run(
        lambda t: done[0] == n or (t > last_start and fab.quiet_for(t) > stall_s),
        timers=[(host_start[int(sends.src[f])], starter(f)) for f in roots],
        limit_s=limit_s,
    )
    out = []
    for f, m in enumerate(msgs):
        if m is None:
            continue
        out.append(
            Message(
                send=f,
                src=int(sends.src[f]),
                dst=int(sends.dst[f]),
                step=steps[f],
                first_tx=m.first_tx,
                last_rx=m.last_rx,
                packets=m.packets,
                received=m.received,
            )
        )
    complete = done[0] == n
    cct = max(m.last_rx for m in out) if complete else float("nan")
    return CollectiveRun(complete, end, cct, out, qps)
