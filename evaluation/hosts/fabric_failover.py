"""A spine lost mid-traffic and back (issue 31, item 5): how long the controller takes to route
around it, how long to put it back, and what is lost in between.

    .venv/bin/python -m evaluation.hosts.fabric_failover [--pps 1000] [--kill-at 3] [--down 5]

The 2 x 2 x 2 bmv2 fabric and the controller daemon (its own run directory under
build/fabric-failover/), a tag-mode job allocated by all 4 hosts, and a steady stream h0 -> h2
(leaf0 -> leaf1) of one RoCEv2 frame after another over 16 flows, one per ECMP bucket (the UDP
source port, the step in tag mode, chosen per bucket: fabric_probe.bucket_sports), so half the
flows hash to each spine. spine0's process is SIGKILLed at --kill-at seconds and restarted
(bmv2_env/start.sh) --down seconds later. Measured:

- reroute: kill -> the first frame of a spine0 flow that arrives again (through spine1), and the
  frames lost in between (each frame's path from the hash: where it was lost);
- restore: restart -> the controller reports spine0 ready, and -> the first frame entering
  spine0 from leaf0 again (its veth counter, sampled every 10 ms);
- every table entry of every switch before the kill and after the return (P4Runtime reads):
  equal, i.e. the job's entries and the routes are all back; the job's live state readable on
  every switch (the controller's Get).

No egress rate limit (bmv2's unlimited queues): --pps is far below what 3 hops carry, so every
loss is the spine's. docs/experiments.md, "Fabric" -> "A spine lost", has the figures.
"""

from __future__ import annotations

import argparse
import os
import select
import threading
import time

from evaluation.fabric.collectives import build_sends
from evaluation.hosts import experiments as ex
from evaluation.hosts import fabric_experiment as fx
from evaluation.hosts.collective import run_collective
from evaluation.hosts.fabric_probe import Prober, bucket_sports, rx_packets, table_entries
from evaluation.hosts.nic import Fabric, Host
from symphony.api import symphony_pb2 as pb
from symphony_tools.daemon_process import ControllerProcess
from symphony_tools.fabric import ROCE_DPORT, Bmv2Fabric, Topology
from symphony_tools.ports import free_port
from symphony_tools.testbed import REPO

OUT = REPO / "build/fabric-failover"


def run(pps: float, kill_at: float, down: float, tail: float) -> dict[str, object]:
    topo = Topology(2, 2, 2)
    fabric = Bmv2Fabric(topo, OUT / "run")
    api = f"127.0.0.1:{free_port()}"
    fabric.start()
    controller = ControllerProcess(
        fabric.write_config(
            OUT / "controller.toml",
            api=api,
            metrics=f"127.0.0.1:{free_port()}",
            controller="reconcile_interval_s = 600\ntelemetry_interval_s = 600",
        ),
        api,
        OUT / "controller.log",
    )
    for f in OUT.glob("symphony.db*"):
        f.unlink()
    try:
        controller.start()
        controller.wait_ready([s.name for s in topo.switches])
        stub = controller.stub
        assert stub is not None
        reply = stub.Allocate(
            pb.AllocateRequest(
                request_key="ring", name="ring", mode="tag", hosts=[h.name for h in topo.hosts]
            ),
            timeout=30,
        )
        assert reply.job.state == "active", reply
        src, dst = topo.host("h0"), topo.host("h2")
        sports = [v[0] for v in bucket_sports(src, dst).values()]
        spine_of = {s: topo.spine_for(src, dst, 17, s, ROCE_DPORT) for s in sports}
        before = {sw.name: table_entries(sw.grpc_addr) for sw in topo.switches}
        probe = Prober(fabric, src, dst)
        probe.rx.setblocking(True)
        sent: list[tuple[float, int]] = []  # (time, sport), index = PSN
        arrived: dict[int, float] = {}  # PSN -> arrival time
        stop = threading.Event()

        def receive() -> None:
            while not stop.is_set():
                if not select.select([probe.rx], [], [], 0.1)[0]:
                    continue
                data = probe.rx.recv(65535)
                if data[36:38] == ROCE_DPORT.to_bytes(2, "big"):
                    arrived[int.from_bytes(data[51:54], "big")] = time.monotonic()

        rx_thread = threading.Thread(target=receive, daemon=True)
        rx_thread.start()
        s0 = topo.spine_if(0, src.leaf)
        s0_seen: list[tuple[float, int]] = []
        t_kill = t_restart = t_ready = None
        # The kill and the restart in a thread of their own: the stream goes on meanwhile
        # (kill() waits for the process to be gone, restart() for the switch to answer).
        events: dict[str, float] = {}

        def chaos() -> None:
            time.sleep(kill_at)
            events["kill"] = time.monotonic()
            fabric.kill("spine0")
            time.sleep(max(0.0, events["kill"] + down - time.monotonic()))
            events["restart"] = time.monotonic()
            fabric.restart("spine0")

        chaos_thread = threading.Thread(target=chaos, daemon=True)
        t0 = time.monotonic()
        chaos_thread.start()
        period = 1.0 / pps
        i = 0
        while time.monotonic() - t0 < kill_at + down + tail:
            if "restart" in events and t_ready is None and i % 20 == 0:
                st = stub.SwitchStatus(pb.SwitchStatusRequest(), timeout=5)
                if {s.name: s.state for s in st.switches}["spine0"] == "ready":
                    t_ready = time.monotonic()
            if i % 10 == 0:
                s0_seen.append((time.monotonic(), rx_packets(s0)))
            sport = sports[i % len(sports)]
            sent.append((time.monotonic(), sport))
            probe.send(sport)
            i += 1
            # Paced, without catching up in a burst after a stall.
            time.sleep(max(0.0, sent[-1][0] + period - time.monotonic()))
        chaos_thread.join()
        t_kill, t_restart = events["kill"], events["restart"]
        time.sleep(1.0)
        stop.set()
        rx_thread.join()
        probe.close()
        after = {sw.name: table_entries(sw.grpc_addr) for sw in topo.switches}
        live = stub.Get(pb.JobRef(job="ring"), timeout=30).live
        lost = [psn for psn in range(len(sent)) if psn not in arrived]
        lost_spine = {j: sum(spine_of[sent[p][1]] == j for p in lost) for j in (0, 1)}
        back = [
            sent[p][0]
            for p in range(len(sent))
            if p in arrived and sent[p][0] > t_kill and spine_of[sent[p][1]] == 0
        ]
        t_rerouted = min(back) if back else None
        # spine0 carries again: its port from leaf0 counts frames after the restart (frames
        # sent to it while dead count too, so the first rise after the restart).
        base = next((c for t, c in s0_seen if t >= t_restart), None)
        t_carries = next(
            (t for t, c in s0_seen if t >= t_restart and base is not None and c > base), None
        )
        return {
            "pps": pps,
            "frames sent": len(sent),
            "achieved frames/s": round(len(sent) / (sent[-1][0] - sent[0][0])),
            "frames lost": len(lost),
            "lost by spine (hash)": lost_spine,
            "lost after restart": sum(sent[p][0] >= t_restart for p in lost),
            "lost frames sent (s after the kill)": (
                (round(sent[lost[0]][0] - t_kill, 3), round(sent[lost[-1]][0] - t_kill, 3))
                if lost
                else None
            ),
            "reroute s (kill -> a spine0 flow arrives via spine1)": (
                None if t_rerouted is None else round(t_rerouted - t_kill, 3)
            ),
            "restore s (restart -> controller: spine0 ready)": (
                None if t_ready is None else round(t_ready - t_restart, 3)
            ),
            "restore s (restart -> frames enter spine0 again)": (
                None if t_carries is None else round(t_carries - t_restart, 3)
            ),
            "switches whose entries differ after": [n for n in before if before[n] != after[n]],
            "table entries per switch after": {
                n: sum(len(v) for v in t.values()) for n, t in after.items()
            },
            "live state available on": sorted(x.switch for x in live if x.available),
            "load average": os.getloadavg(),
        }
    finally:
        controller.stop()
        fabric.stop()


def run_ring(
    *, kill_at: float | None, down: float, chunk: int, rto_s: float, seed: int = 100
) -> dict[str, object]:
    """The fabric experiment's ring all-reduce (4 hosts, 2 leaves: build_sends of its
    FabricSetup) on the DCQCN hosts with go-back-N retransmission (nic.Fabric rto_s), spine0
    SIGKILLed `kill_at` s into the run and restarted `down` s later (its queue rate and depth set
    again once the controller has it ready); None: no kill, the reference."""
    setup = fx.FabricSetup(
        leaves=2,
        spines=2,
        hosts_per_leaf=2,
        line_pps=2000.0,
        rings=1,
        chunk_packets=chunk,
        queue_depth=1000,
        jitter_real_us=2.0,
        sample_ms=50.0,
    )
    topo = setup.topo
    name = f"ring-{'kill' if kill_at is not None else 'ref'}"
    with fx.FabricBed(setup, OUT / name) as bed:
        cfg = setup.sim_config(ex.BASELINE)
        sends = build_sends(cfg)
        job = bed.allocate(name, ex.BASELINE)
        hosts = [Host(h.index, h.ifname, h.ip, h.mac, h.netns) for h in topo.hosts]
        fab = Fabric(
            hosts,
            setup.ex_setup.scaled(),
            payload=ex.PAYLOAD,
            seed=seed,
            rt_priority=setup.rt_priority,
            rto_s=rto_s,
        )
        events: dict[str, float] = {}

        def chaos() -> None:
            assert kill_at is not None and bed.controller is not None
            while fab.t0 == 0.0:
                time.sleep(0.005)
            time.sleep(kill_at)
            events["kill"] = fab.now()
            bed.fabric.kill("spine0")
            time.sleep(down)
            events["restart"] = fab.now()
            bed.fabric.restart("spine0")
            bed.controller.wait_ready(["spine0"], timeout_s=60)
            events["ready"] = fab.now()
            t = bed.fabric.thrift("spine0")
            t.set_queue_depth(setup.queue_depth)
            t.set_queue_rate(round(setup.line_pps))

        thread = threading.Thread(target=chaos, daemon=True)
        try:
            fab.open()
            if kill_at is not None:
                thread.start()
            run = run_collective(
                fab,
                sends,
                host_key={h.index: h.index for h in topo.hosts},
                packets_of=cfg.packets,
                tag_of=lambda _job: job,
                start_jitter_s=setup.jitter_real_us * 1e-6 * setup.scale,
                seed=seed,
                limit_s=120.0,
                stall_s=max(ex.STALL_S, 4 * rto_s),
            )
            if kill_at is not None:
                thread.join()
            fab.drain()
            after = {sw.name: table_entries(sw.grpc_addr) for sw in topo.switches}
            live = bed.live(name)
        finally:
            fab.close()
        qps = list(fab.senders.values())
        rxs = list(fab.receivers.values())
        sent = sum(q.sent for q in qps)
        taken = sum(r.received for r in rxs)
        ooo = sum(r.out_of_order for r in rxs)
        return {
            "run": name,
            "complete": run.complete,
            "cct s": round(run.cct_s, 3),
            "kill / restart / ready at s": (
                tuple(round(events[k], 3) for k in ("kill", "restart", "ready")) if events else None
            ),
            "frames sent (with resent)": sent,
            "frames resent": sum(q.resent for q in qps),
            "go-back-N rewinds": sum(q.retransmits for q in qps),
            "frames taken": taken,
            "discarded after a gap": ooo,
            "lost on the way": sent - taken - ooo,
            "entries per switch after": {
                n: sum(len(v) for v in t.values()) for n, t in after.items()
            },
            "live state available on": sorted(x.switch for x in live.values() if x.available),
            "load average": tuple(round(x, 2) for x in os.getloadavg()),
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluation.hosts.fabric_failover")
    ap.add_argument("--pps", type=float, default=1000.0, help="frames/s h0 -> h2")
    ap.add_argument("--kill-at", type=float, default=3.0, help="s after the start")
    ap.add_argument("--down", type=float, default=5.0, help="s from the kill to the restart")
    ap.add_argument("--tail", type=float, default=8.0, help="s of traffic after the restart")
    ap.add_argument(
        "--ring",
        action="store_true",
        help="the ring all-reduce with retransmission instead of the probe stream",
    )
    ap.add_argument("--chunk", type=int, default=2000, help="--ring: packets per step")
    ap.add_argument("--rto-ms", type=float, default=100.0, help="--ring: go-back-N timeout")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.ring:
        rows = [
            run_ring(kill_at=k, down=args.down, chunk=args.chunk, rto_s=args.rto_ms / 1000)
            for k in (None, args.kill_at)
        ]
        text = "\n\n".join("\n".join(f"{k:28}  {v}" for k, v in r.items()) for r in rows)
        print(text)
        (OUT / "ring.txt").write_text(text + "\n")
        return 0 if all(r["complete"] for r in rows) else 1
    result = run(args.pps, args.kill_at, args.down, args.tail)
    width = max(len(k) for k in result)
    for k, v in result.items():
        print(f"{k:{width}}  {v}")
    (OUT / "result.txt").write_text("\n".join(f"{k}: {v}" for k, v in result.items()) + "\n")
    return 0 if not result["switches whose entries differ after"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
