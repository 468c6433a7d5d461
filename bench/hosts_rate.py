"""How fast the emulated hosts can send and receive, against what the experiments ask of them.

The closed-loop experiments are only meaningful if the hosts are never the bottleneck: this
runs the real event loop (evaluation/hosts/nic.py) on a veth pair of its own, one sender QP
paced far above any experiment's link rate and its receiver on the other end, and reports the
packet rate the loop reached beside the highest rate an experiment needs (all its senders at line
rate together). Needs root (it creates veth pair symbench0/symbench1 and removes it after).

    python bench/hosts_rate.py --packets 100000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.hosts.dcqcn import DEFAULT_PROFILE, Scaled, host_profile  # noqa: E402
from evaluation.hosts.nic import Fabric, Host  # noqa: E402

IF_A, IF_B = "symbench0", "symbench1"


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=100000)
    # The most any experiment sends at once: 2 senders x 4000 (experiment 1) or 4 host NICs x
    # 2500 (experiment 2; a host's QPs share its NIC).
    ap.add_argument("--need-pps", type=float, default=10000.0)
    args = ap.parse_args()
    subprocess.run(["ip", "link", "del", IF_A], capture_output=True)
    sh("ip", "link", "add", IF_A, "type", "veth", "peer", "name", IF_B)
    try:
        for i in (IF_A, IF_B):
            sh("sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1")
            sh("ip", "link", "set", i, "mtu", "9500", "up")
        p = Scaled.of(
            host_profile(DEFAULT_PROFILE), line_pps=1e7, frame_bytes=1082
        )  # pacing never waits
        # The normal scheduler: the loop never waits here, and this measures the loop itself.
        fab = Fabric([Host(0, IF_A), Host(2, IF_B)], p, payload=1024, seed=0, rt_priority=0)
        fab.open()
        qp = fab.connect("bench", 0, 2, tag=1)
        msg = fab.post(qp, step=0, packets=args.packets, now=0.0)
        t = time.perf_counter()
        fab.run(lambda _now: msg.received == msg.packets or qp.current is None, limit_s=120)
        # Let the last frames arrive.
        fab.run(lambda now: msg.received == msg.packets or now > 1.0, limit_s=2)
        secs = time.perf_counter() - t
        fab.close()
    finally:
        subprocess.run(["ip", "link", "del", IF_A], capture_output=True)
    rate = qp.sent / (msg.last_tx - msg.first_tx)
    print(f"sent {qp.sent} packets, received {msg.received}, in {secs:.2f} s")
    print(f"host loop send+receive rate: {rate:,.0f} pkt/s")
    print(
        f"experiments need at most {args.need_pps:,.0f} pkt/s: headroom x{rate / args.need_pps:.1f}"
    )


if __name__ == "__main__":
    main()
