"""symphony-controller: the long-running control plane (issue 3, paper section 3.5).

    symphony-controller --config controller.toml [--check]

Starts one session per configured switch, the job API (gRPC) and the Prometheus endpoint, all in
one asyncio loop; stops cleanly on SIGTERM / SIGINT. A bad config stops it before anything
starts, with a message naming the field. With ``[store] url`` (PostgreSQL) it is one of several
replicas: the sessions run only while it holds the leader lease (symphony/replica.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sqlite3
import sys
from collections.abc import Callable, Sequence

from symphony import config as config_mod
from symphony import telemetry
from symphony.api import auth as api_auth
from symphony.api import server as api_server
from symphony.config import Config, ConfigError
from symphony.config.topology import routes_for
from symphony.jobs import db_lock
from symphony.jobs.db_lock import DatabaseInUse
from symphony.jobs.errors import StoreError
from symphony.jobs.lease import Lease
from symphony.jobs.manager import JobManager
from symphony.jobs.migrations import SchemaTooNew
from symphony.jobs.pg_store import PgJobStore
from symphony.jobs.store import BaseJobStore, JobStore
from symphony.replica import Replica, election_id
from symphony.switch.fabric import Fabric
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
        fabric = (
            f", {len(cfg.topology.links)} link(s), {len(cfg.topology.hosts)} host(s)"
            if cfg.topology is not None
            else ""
        )
        print(f"config OK: {len(cfg.switches)} switch(es){fabric}, API on {cfg.api.listen}")
        return 0
    with contextlib.suppress(KeyboardInterrupt):
        try:
            asyncio.run(run(cfg))
        except (DatabaseInUse, sqlite3.Error, StoreError, SchemaTooNew) as exc:
            # A second controller on the database, a database it cannot open (read-only,
            # unreachable), or one migrated by a newer controller.
            print(f"symphony-controller: {exc}", file=sys.stderr)
            return 1
    return 0


class Leading:
    """What only the leader runs: one session per switch and the telemetry poller. A standalone
    controller leads from start to stop; a replica between taking and losing the lease."""

    def __init__(
        self, cfg: Config, manager: JobManager, collector: telemetry.SymphonyCollector
    ) -> None:
        self.cfg = cfg
        self.manager = manager
        self.collector = collector
        self.fence: Callable[[], None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.fabric: Fabric | None = None

    async def start(self, epoch: int | None) -> None:
        m = self.manager
        if epoch is not None:
            m.forget_unknown_switches()  # a write: the leader's
        eid = None if epoch is None else election_id(epoch)
        fibs = routes_for(self.cfg.topology) if self.cfg.topology is not None else {}
        sessions = {
            sw.name: SwitchSession(
                sw, self.cfg, m, election_id=eid, fence=self.fence, fib=fibs.get(sw.name, ())
            )
            for sw in self.cfg.switches
        }
        if self.cfg.topology is not None:
            # Routes around a switch whose session lost it, and back when it is reconciled.
            self.fabric = fabric = Fabric(self.cfg.topology, sessions)
            for s in sessions.values():
                s.on_down = lambda session: fabric.switch_down(session.name)
                s.on_reconciled = lambda session: fabric.switch_up(session.name)
        m.sessions.update(sessions)
        self._tasks = [
            asyncio.create_task(s.run(), name=f"session:{n}") for n, s in sessions.items()
        ]
        self._tasks.append(
            asyncio.create_task(
                telemetry.poll(m, self.collector, self.cfg.telemetry_interval_s), name="telemetry"
            )
        )

    async def stop(self) -> None:
        if self.fabric is not None:
            self.fabric.close()  # sessions stopped on purpose: no switch is lost
            self.fabric = None
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self.manager.sessions.clear()
        # A follower reads no switch: no per-job series of its time as the leader stay behind.
        self.collector.publish(telemetry.Snapshot())


async def run(cfg: Config, stop: asyncio.Event | None = None) -> None:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    db_lock_file = None
    replica: Replica | None = None
    store: BaseJobStore
    if cfg.store is None:
        assert cfg.database is not None
        db_lock_file = db_lock.hold(cfg.database)
        try:
            store = JobStore(cfg.database)
        except sqlite3.Error as exc:
            raise sqlite3.OperationalError(f"job database {cfg.database}: {exc}") from exc
        manager = JobManager(cfg, store)
    else:
        pg_store = store = PgJobStore(cfg.store.url, f"symphony:{cfg.store.replica}")
        lease = Lease(cfg.store.url, cfg.store.replica, cfg.store.advertise, cfg.store.lease_ttl_s)
        replica = Replica(cfg.store.replica, pg_store, lease)
        manager = JobManager(cfg, store, gate=replica)
    collector = telemetry.SymphonyCollector(
        manager, replica=replica.status if replica is not None else None
    )
    leading = Leading(cfg, manager, collector)
    token = api_auth.read_token(cfg.api.token_file) if cfg.api.token_file else None
    metrics = telemetry.serve(collector, cfg.metrics_listen, token)
    grpc_server = await api_server.start(manager, cfg.api)
    replica_task = None
    if replica is None:
        await leading.start(None)
    else:
        leading.fence = replica.check
        replica_task = asyncio.create_task(replica.run(stop, leading), name="replica")
    LOG.info(
        "symphony-controller running: %d switch(es), %d live job(s)%s",
        len(cfg.switches),
        len(manager.list()),
        f", replica {cfg.store.replica} on PostgreSQL" if cfg.store is not None else "",
    )
    try:
        await stop.wait()
    finally:
        LOG.info("stopping")
        await grpc_server.stop(grace=1.0)
        if replica_task is not None:
            # It steps down (sessions stopped) and hands the lease back.
            stop.set()
            await asyncio.gather(replica_task, return_exceptions=True)
        await leading.stop()
        metrics.shutdown()
        metrics.server_close()
        store.close()
        if db_lock_file is not None:
            db_lock_file.close()


if __name__ == "__main__":
    sys.exit(main())
