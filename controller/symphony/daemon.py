"""symphony-controller: the long-running control plane (issue 3, paper section 3.5).

    symphony-controller --config controller.toml [--check]

Starts one session per configured switch, the job API (gRPC) and the Prometheus endpoint, all in
one asyncio loop; stops cleanly on SIGTERM / SIGINT. A bad config stops it before anything
starts, with a message naming the field.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sqlite3
import sys
from collections.abc import Sequence

from symphony import config as config_mod
from symphony import telemetry
from symphony.api import auth as api_auth
from symphony.api import server as api_server
from symphony.config import Config, ConfigError
from symphony.jobs import db_lock
from symphony.jobs.db_lock import DatabaseInUse
from symphony.jobs.manager import JobManager
from symphony.jobs.store import JobStore
from symphony.switch.session import SwitchSession

LOG = logging.getLogger("symphony.daemon")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="symphony-controller", description=__doc__.split("\n")[0])
    p.add_argument("--config", "-c", help="TOML config file")
    p.add_argument("--example-config", action="store_true", help="print an example config")
    p.add_argument("--check", action="store_true", help="check the config and exit")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default INFO)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.example_config:
        print(config_mod.example(), end="")
        return 0
    if not args.config:
        print("symphony-controller: --config is required", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        cfg = config_mod.load(args.config)
    except ConfigError as exc:
        print(f"symphony-controller: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"config OK: {len(cfg.switches)} switch(es), API on {cfg.api.listen}")
        return 0
    with contextlib.suppress(KeyboardInterrupt):
        try:
            asyncio.run(run(cfg))
        except (DatabaseInUse, sqlite3.Error) as exc:
            # A second controller on the database, or a database it cannot open (read-only).
            print(f"symphony-controller: {exc}", file=sys.stderr)
            return 1
    return 0


async def run(cfg: Config, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    db_lock_file = db_lock.hold(cfg.database)
    try:
        store = JobStore(cfg.database)
    except sqlite3.Error as exc:
        raise sqlite3.OperationalError(f"job database {cfg.database}: {exc}") from exc
    manager = JobManager(cfg, store)
    for sw in cfg.switches:
        manager.sessions[sw.name] = SwitchSession(sw, cfg, manager)
    collector = telemetry.SymphonyCollector(manager)
    token = api_auth.read_token(cfg.api.token_file) if cfg.api.token_file else None
    metrics = telemetry.serve(collector, cfg.metrics_listen, token)
    grpc_server = await api_server.start(manager, cfg.api)
    tasks = [asyncio.create_task(s.run(), name=f"session:{n}") for n, s in manager.sessions.items()]
    tasks.append(
        asyncio.create_task(
            telemetry.poll(manager, collector, cfg.telemetry_interval_s), name="telemetry"
        )
    )
    LOG.info(
        "symphony-controller running: %d switch(es), %d live job(s)",
        len(cfg.switches),
        len(manager.list()),
    )
    try:
        await stop.wait()
    finally:
        LOG.info("stopping")
        await grpc_server.stop(grace=1.0)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        metrics.shutdown()
        metrics.server_close()
        store.close()
        db_lock_file.close()


if __name__ == "__main__":
    sys.exit(main())
