"""Failover of replicated controllers under load: 8 concurrent clients make 1,000 allocations
(and release all but a few of them) while the leader is SIGKILLed 5 times at random points.

    make build
    flock /tmp/symphony-bmv2.lock .venv/bin/python bench/failover_bench.py \\
        [--replicas 3] [--clients 8] [--allocations 1000] [--kills 5] [--ttl 3] [--seed 1]

Starts its own PostgreSQL cluster (Debian's server, loopback, a temporary directory), its own
bmv2 (bmv2_env/start.sh, so root; the SYMPHONY_* variables name the instance) and the replicas
(real symphony-controller processes), runs symphony_tools.chaos and prints:

- the checks: acknowledged allocations lost, duplicate live Job_IDs, request keys with other
  than one job, switch-vs-store differences after each failover (all must be 0; the exit code
  is 1 otherwise);
- the failover time, last reply from the old leader to the first reply from the new one as
  the clients saw it: p50 and p99 over the kills, and each one.

A second instance beside the PTF suite's, e.g.:

    SYMPHONY_VETH_BASE=60 SYMPHONY_GRPC_ADDR=127.0.0.1:9859 SYMPHONY_THRIFT_PORT=9390 \\
    SYMPHONY_RUN_DIR=$PWD/run/bmv2-failover flock /tmp/symphony-bmv2.lock \\
    .venv/bin/python bench/failover_bench.py
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from symphony.config import load
from symphony_tools.chaos import Chaos, switch_settled
from symphony_tools.ports import free_port
from symphony_tools.postgres import TempPostgres
from symphony_tools.replicas import ReplicaSet
from symphony_tools.testbed import BMV2_JSON, P4INFO, Bmv2Env

ROOT = Path(__file__).resolve().parents[1]
ENV = Bmv2Env.from_env()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a small sample."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _quiet_gnmi(record: logging.LogRecord) -> bool:
    """bmv2 has no gNMI: finsy says so once per connection, i.e. at every switch-vs-store read
    of the chaos checker; that line alone is dropped, every other finsy message stays."""
    return "gNMI is not implemented" not in record.getMessage()


def main() -> int:
    logging.getLogger("finsy").addFilter(_quiet_gnmi)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--allocations", type=int, default=1000)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--ttl", type=float, default=3.0, help="lease_ttl_s of the replicas")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument(
        "--no-switch",
        action="store_true",
        help="the leadership alone: the replicas' switch never answers (no bmv2, no root), so "
        "jobs stay pending and the switch is not compared with the store",
    )
    args = ap.parse_args()

    def body(api: str, metrics: str) -> str:
        if args.no_switch:
            return ENV.controller_toml(
                api=api,
                metrics=metrics,
                p4info=dummy / "p4info.txtpb",
                bmv2_json=dummy / "bmv2.json",
                controller="install_timeout_s = 0.2\nbackoff_initial_s = 1",
            ).replace(ENV.grpc_addr, f"127.0.0.1:{free_port()}")
        return ENV.controller_toml(
            api=api,
            metrics=metrics,
            p4info=P4INFO,
            bmv2_json=BMV2_JSON,
            controller="reconcile_interval_s = 60\nbackoff_initial_s = 0.05\n"
            "backoff_max_s = 0.5\ninstall_timeout_s = 10",
        )

    tmp = Path(tempfile.mkdtemp(prefix="symphony-failover-"))
    dummy = tmp / "no-switch"
    if args.no_switch:
        dummy.mkdir()
        (dummy / "p4info.txtpb").write_text("")
        (dummy / "bmv2.json").write_text("{}")
    else:
        ENV.script("start")
    t0 = time.monotonic()
    try:
        with TempPostgres() as pg:
            url = pg.new_database()
            rs = ReplicaSet(tmp, url, args.replicas, body, ttl_s=args.ttl)
            rs.start()
            try:
                cfg = load(rs.replicas[0].config)
                result = Chaos(
                    rs,
                    url,
                    clients=args.clients,
                    allocations=args.allocations,
                    kills=args.kills,
                    seed=args.seed,
                    settled=None
                    if args.no_switch
                    else switch_settled(url, cfg, ENV.grpc_addr, ENV.device_id),
                ).run()
            finally:
                rs.stop()
    finally:
        if not args.no_switch:
            ENV.script("stop")
    took = time.monotonic() - t0
    fo = result.failover_s
    print(f"$ {' '.join(sys.argv)}")
    print(
        f"{args.replicas} replicas, {args.clients} clients, lease_ttl_s {args.ttl}"
        f"{' (no switch)' if args.no_switch else ', bmv2'}: "
        f"{len(result.allocated)} allocations and {len(result.released)} releases acknowledged, "
        f"{result.kills} leader SIGKILLs, {took:.0f} s"
    )
    print(f"client calls failed for good: {len(result.errors)}")
    print(f"problems (lost, duplicate, key, switch != store): {len(result.problems)}")
    for p in result.problems[:20]:
        print(f"  {p}")
    if fo:
        print(
            f"failover (last reply from the old leader -> first from the new): "
            f"p50 {statistics.median(fo) * 1000:.0f} ms, p99 {percentile(fo, 99) * 1000:.0f} ms"
            f" (n={len(fo)}: {', '.join(f'{x * 1000:.0f}' for x in fo)} ms)"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "args": vars(args) | {"json": str(args.json)},
                    "allocated": len(result.allocated),
                    "released": len(result.released),
                    "errors": result.errors,
                    "problems": result.problems,
                    "failover_s": fo,
                },
                indent=1,
            )
        )
    return 1 if result.problems or result.errors or len(fo) != result.kills else 0


if __name__ == "__main__":
    sys.exit(main())
