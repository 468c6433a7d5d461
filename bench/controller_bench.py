"""Controller benchmark against bmv2: allocate+install latency (p50/p99), allocations per
second, and the time to install the lookup tables.

    make build && bmv2_env/start.sh
    .venv/bin/python bench/controller_bench.py [--jobs 200] [--concurrency 8]

Runs the real daemon (subprocess) against the bmv2_env switch named by the same variables as
bmv2_env/env.sh, with the same defaults (P4Runtime $SYMPHONY_GRPC_ADDR = 127.0.0.1:9559, Thrift
$SYMPHONY_THRIFT_PORT = 9090, device $SYMPHONY_DEVICE_ID = 0), and drives it through the gRPC API
like a scheduler would. Prints the figures with the command line. It re-pushes the pipeline
(wiping the switch), so point it at a switch nobody else is using, e.g. a second instance:

    export SYMPHONY_VETH_BASE=20 SYMPHONY_GRPC_ADDR=127.0.0.1:9659 SYMPHONY_THRIFT_PORT=9190 \
        SYMPHONY_RUN_DIR=$PWD/run/bmv2-ctl
    bmv2_env/start.sh && .venv/bin/python bench/controller_bench.py
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony_tools.testbed import Bmv2Env

ROOT = Path(__file__).resolve().parents[1]
P4INFO = ROOT / "build/bmv2/symphony.p4info.txtpb"
BMV2_JSON = ROOT / "build/bmv2/symphony.json"
ENV = Bmv2Env.from_env()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def lut_install_seconds() -> tuple[float, int]:
    """Push the pipeline (forced) and time writing every lookup-table entry in batches."""
    import finsy

    from symphony.model.tables import lut_entries
    from symphony.sizes import WRITE_BATCH
    from symphony.switch import entries

    opts = finsy.SwitchOptions(
        p4info=P4INFO, p4blob=BMV2_JSON, device_id=ENV.device_id, p4force=True
    )
    async with finsy.Switch("bench", ENV.grpc_addr, opts) as sw:
        specs = [s for s in lut_entries() if not s.is_default]
        pbs = [entries.encode(s, sw.p4info) for s in specs]
        t0 = time.perf_counter()
        for i in range(0, len(pbs), WRITE_BATCH):
            await sw.write(entries.updates(finsy.proto.p4r.Update.INSERT, pbs[i : i + WRITE_BATCH]))
        elapsed = time.perf_counter() - t0
        # The figure counts only if every entry is really on the switch.
        lut_tables = {s.table for s in specs}
        n = 0
        for table in lut_tables:
            async for _ in sw.read(finsy.P4TableEntry(table)):
                n += 1
        assert n == len(pbs), f"{n} of {len(pbs)} lookup-table entries read back"
        return elapsed, len(pbs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()

    lut_s, lut_n = asyncio.run(lut_install_seconds())

    tmp = Path(tempfile.mkdtemp(prefix="symphony-bench-"))
    api = f"127.0.0.1:{free_port()}"
    (tmp / "c.toml").write_text(
        ENV.controller_toml(
            api=api,
            metrics=f"127.0.0.1:{free_port()}",
            p4info=P4INFO,
            bmv2_json=BMV2_JSON,
            ports=2,
        )
    )
    log = open(tmp / "controller.log", "wb")  # noqa: SIM115 - lives as long as the daemon
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "symphony.daemon",
            "--config",
            str(tmp / "c.toml"),
            "--log-level",
            "WARNING",
        ],
        stdout=log,
        stderr=log,
    )
    try:
        ch = grpc.insecure_channel(api)
        stub = pb_grpc.JobServiceStub(ch)
        t0 = time.monotonic()
        while True:
            try:
                st = stub.SwitchStatus(
                    pb.SwitchStatusRequest(), timeout=1, wait_for_ready=True
                ).switches[0]
                if st.state == "ready":
                    break
            except grpc.RpcError:
                pass
            if time.monotonic() - t0 > 60:
                raise SystemExit(f"switch not ready; see {tmp}/controller.log")
            time.sleep(0.05)
        first_ready_s = time.monotonic() - t0

        def one(i: int) -> float:
            t = time.perf_counter()
            r = stub.Allocate(
                pb.AllocateRequest(
                    request_key=f"bench-{i}",
                    name=f"bench-{i}",
                    mode="hosts",
                    hosts=[f"10.9.{i // 250}.{i % 250 + 1}"],
                    switches=["s1"],
                ),
                timeout=30,
            )
            assert r.switches[0].status == "installed", r.switches[0].status
            return time.perf_counter() - t

        t_all = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            lat = sorted(pool.map(one, range(args.jobs)))
        wall = time.perf_counter() - t_all
        # Sequential latency (no queueing behind other requests).
        seq = sorted(one(args.jobs + i) for i in range(min(100, args.jobs)))
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()

    def pct(xs: list[float], q: float) -> float:
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

    print(f"$ {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"switch: bmv2 P4Runtime {ENV.grpc_addr} device {ENV.device_id} Thrift {ENV.thrift_port}")
    print(
        f"lookup tables: {lut_n} entries installed in {lut_s:.2f} s ({lut_n / lut_s:.0f} entries/s)"
    )
    print(f"controller start -> switch reconciled (pipeline + all tables): {first_ready_s:.2f} s")
    print(
        f"allocate+install, sequential: p50 {pct(seq, 0.5):.1f} ms, p99 {pct(seq, 0.99):.1f} ms"
        f" (n={len(seq)})"
    )
    print(
        f"allocate+install, {args.concurrency} concurrent clients: p50 {pct(lat, 0.5):.1f} ms,"
        f" p99 {pct(lat, 0.99):.1f} ms, {args.jobs / wall:.0f} allocations/s (n={args.jobs})"
    )
    print(f"mean sequential latency {statistics.mean(seq) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
