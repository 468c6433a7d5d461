"""The job manager: validates requests, commits the desired state, then drives the switches.

Order of every change: validate everything -> one SQLite transaction -> ask each switch session
on the job's path to sync. A refused request writes nothing. A switch that is down does not fail
the request: the desired state is committed and that switch's session installs it when the
switch comes back; the answer says which switches are still pending.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from symphony.config import Config
from symphony.foreground import Foreground
from symphony.jobs import validation as v
from symphony.jobs.errors import JobError, Kind
from symphony.jobs.store import BaseJobStore, Job
from symphony.model import params as model_params
from symphony.model.switch_model import JobState
from symphony.sizes import TICK_NS

if TYPE_CHECKING:  # the sessions import the store and Job from jobs/: no cycle at run time
    from symphony.foreground import Pause
    from symphony.switch.session import SessionStatus

LOG = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
INSTALLED = "installed"
CLEARED = "cleared"


class WriteGate(Protocol):
    """Whether this controller may change anything now (replicas: only the leader may)."""

    def check(self) -> None:
        """Return, or raise JobError(NOT_LEADER) naming the leader when known."""

    def why_not(self) -> str:
        """Why this controller does not drive the switches ("" when it does)."""


class SoleController:
    """The gate of a controller that owns its store alone (SQLite, db_lock.py)."""

    def check(self) -> None:
        return None

    def why_not(self) -> str:
        return ""


def _request(
    method: Callable[Concatenate[JobManager, P], Awaitable[R]],
) -> Callable[Concatenate[JobManager, P], Awaitable[R]]:
    """Mark an API method's whole run as a request in progress (telemetry steps aside)."""

    async def run(self: JobManager, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.foreground.request():
            return await method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


def _write(
    method: Callable[Concatenate[JobManager, P], Awaitable[R]],
) -> Callable[Concatenate[JobManager, P], Awaitable[R]]:
    """A request that changes the desired state: only when the gate lets this controller write
    (a follower refuses it before validating or reading anything)."""

    async def run(self: JobManager, /, *args: P.args, **kwargs: P.kwargs) -> R:
        self.gate.check()
        return await method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return _request(run)


@dataclass(frozen=True)
class Outcome:
    job: Job
    created: bool
    # switch -> "installed" / "cleared" / "pending: <why>"
    switches: Mapping[str, str]


class Session(Protocol):
    """What the manager and telemetry use of a switch session (switch/session.py's
    SwitchSession; the unit tests' sessions at this boundary)."""

    @property
    def is_ready(self) -> bool: ...

    @property
    def status(self) -> SessionStatus: ...

    def defer(self, job_ids: Iterable[int] | None = None) -> None: ...

    async def sync(self, job_ids: Iterable[int] | None = None) -> int: ...

    async def read_state(
        self, job_ids: Iterable[int], pause: Pause = ...
    ) -> dict[int, JobState]: ...


class JobManager:
    def __init__(
        self,
        config: Config,
        store: BaseJobStore,
        sessions: Mapping[str, Session] | None = None,
        gate: WriteGate | None = None,
    ):
        self.config = config
        self.store = store
        self.gate: WriteGate = gate or SoleController()
        self.sessions: dict[str, Session] = dict(sessions or {})
        # One writer at a time: validation reads (name/host clashes) and the commit must see
        # the same state; SQLite's lock does this across processes, this does it in the loop.
        self._write_lock = asyncio.Lock()
        # Requests in progress: telemetry sweeps step aside for them.
        self.foreground = Foreground()
        if gate is None:
            self.forget_unknown_switches()

    def forget_unknown_switches(self) -> None:
        """A releasing job pending on a switch that left the config can never be cleared there;
        count it as cleared so its Job_ID is not lost forever. (A write: a replica does it when
        it becomes the leader.)"""
        known = set(self.config.switch_names)
        for job in self.store.list():
            if job.state == "releasing":
                for sw in job.pending:
                    if sw not in known:
                        LOG.warning(
                            "job %d: switch %s left the config; counted as cleared", job.job_id, sw
                        )
                        self.store.mark_cleared(job.uid, sw)
            elif set(job.switches) - known:
                LOG.warning(
                    "job %d: switches %s are not in the config",
                    job.job_id,
                    ", ".join(sorted(set(job.switches) - known)),
                )

    # ---- what the switch sessions ask (DesiredSource) ----------------------------------------

    def jobs_on(self, switch: str) -> tuple[list[Job], list[Job]]:
        active, releasing = [], []
        for job in self.store.list():
            if job.state == "active" and switch in job.switches:
                active.append(job)
            elif job.state == "releasing" and switch in job.pending:
                releasing.append(job)
        return active, releasing

    def job(self, job_id: int) -> Job | None:
        return self.store.get(job_id)

    def params_of(self, job: Job) -> model_params.JobParams:
        return model_params.effective(self.config.defaults, self.store.global_params(), job.params)

    def action_params(self, job: Job, tick_ns: int) -> dict[str, int]:
        return self.params_of(job).to_action_params(tick_ns)

    def cleared(self, job: Job, switch: str) -> None:
        after = self.store.mark_cleared(job.uid, switch)
        if after.state == "released":
            LOG.info("job %d (%s) released everywhere; Job_ID free", job.job_id, job.name)

    # ---- API ---------------------------------------------------------------------------------

    @_write
    async def allocate(
        self,
        request_key: str,
        name: str,
        mode: str,
        hosts: Iterable[str],
        switches: Iterable[str],
        params: Mapping[str, Any],
    ) -> Outcome:
        """``hosts``: IPv4 addresses or, with a topology, host names (stored as addresses).
        ``switches`` empty with a topology: derived from the hosts."""
        v.name(name)
        v.request_key(request_key)
        v.mode(mode)
        topology = self.config.topology
        clean_hosts = v.hosts(hosts, mode, topology)
        switches = list(switches)
        if not switches and topology is not None:
            # No switch list: every switch on a shortest path between two of its hosts.
            clean_switches = v.switches_of(clean_hosts, topology)
        else:
            clean_switches = v.switches(switches, self.config.switch_names)
        clean_params = v.params(params)
        self._check_targets(clean_params, clean_switches)
        async with self._write_lock:
            job, created = self.store.allocate(
                request_key, name, mode, clean_hosts, clean_switches, clean_params
            )
        status = await self._sync(job.switches, job) if job.state == "active" else {}
        return Outcome(job, created, status)

    @_write
    async def release(self, ref: int | str) -> Outcome:
        job = self.find(ref)
        async with self._write_lock:
            job = self.store.release(job.job_id)
        status = await self._sync(job.pending, job)
        after = self.store.by_uid(job.uid) or job
        for sw in job.switches:
            if sw not in after.pending:
                status[sw] = CLEARED
        return Outcome(after, False, status)

    def list(self, include_released: bool = False) -> builtins.list[Job]:
        return self.store.list(include_released)

    def active_labels(self) -> builtins.list[tuple[int, str, tuple[str, ...]]]:
        """(Job_ID, name, switches) of every active job (telemetry's labels)."""
        return self.store.active_labels()

    def count_by_state(self) -> dict[str, int]:
        return self.store.count_by_state()

    def find(self, ref: int | str) -> Job:
        """A live job by Job_ID or by name."""
        # ASCII digits only: str.isdigit() is also true for "²", which int() refuses.
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isascii() and ref.isdigit()):
            job_id = v.job_id(int(ref))
            job = self.store.get(job_id)
        else:
            job = self.store.get_by_name(v.name(ref, "job"))
        if job is None:
            raise JobError(Kind.NOT_FOUND, "job", f"no live job {ref!r}")
        return job

    async def live_state(self, job: Job) -> dict[str, JobState | str]:
        """Per switch on the job's path: its registers and counters, or why they are unknown."""

        async def one(sw: str) -> JobState | str:
            session = self.sessions.get(sw)
            if session is None:
                return f"unavailable: {self.gate.why_not() or 'no session'}"
            try:
                return (await session.read_state([job.job_id]))[job.job_id]
            except Exception as exc:  # reported to the caller per switch
                return f"unavailable: {exc}"

        results = await asyncio.gather(*(one(sw) for sw in job.switches))
        return dict(zip(job.switches, results, strict=True))

    @_write
    async def set_params(
        self, ref: int | str | None, overrides: Mapping[str, Any]
    ) -> Outcome | None:
        clean = v.params(overrides)
        if not clean:
            raise v.invalid("params", "nothing to set")
        if ref is None:
            # Global: the result of merging must still be valid for every live job.
            async with self._write_lock:
                merged = {**self.store.global_params(), **clean}
                for job in self.store.list():
                    self._effective_or_invalid(merged, job.params, f"job {job.job_id}")
                self.store.set_global_params(clean)
            await self._sync(self.config.switch_names)
            return None
        job = self.find(ref)
        async with self._write_lock:
            self._effective_or_invalid(
                self.store.global_params(), {**job.params, **clean}, "params"
            )
            self._check_targets({**job.params, **clean}, job.switches)
            job = self.store.set_job_params(job.job_id, clean)
        return Outcome(job, False, await self._sync(job.switches, job))

    def switch_status(self) -> builtins.list[SessionStatus]:
        return [
            self.sessions[name].status for name in self.config.switch_names if name in self.sessions
        ]

    # ---- helpers -----------------------------------------------------------------------------

    def _effective_or_invalid(
        self, global_params: Mapping[str, Any], job: Mapping[str, Any], where: str
    ) -> None:
        try:
            model_params.effective(self.config.defaults, global_params, job)
        except ValueError as exc:
            raise v.invalid(where, str(exc)) from exc

    def _check_targets(self, overrides: Mapping[str, Any], switches: Iterable[str]) -> None:
        """Parameters must fit every target on the path (T_win in ticks is target-specific)."""
        params = model_params.effective(self.config.defaults, self.store.global_params(), overrides)
        for sw in switches:
            tick = TICK_NS[self.config.switch(sw).target]
            try:
                params.validate(tick)
            except ValueError as exc:
                raise v.invalid(f"params ({sw})", str(exc)) from exc

    async def _sync(self, switches: Iterable[str], job: Job | None = None) -> dict[str, str]:
        """Install the committed change on each switch: ``job``'s entries only, or everything
        (a global parameter change) when None."""
        job_ids = None if job is None else [job.job_id]

        async def one(sw: str) -> str:
            session = self.sessions.get(sw)
            if session is None:
                return "pending: no session"
            if not session.is_ready:
                # Committed: the reconciliation in progress (or the next) installs it.
                session.defer(job_ids)
                return f"pending: switch {session.status.state}"
            # shield: on timeout the sync goes on in the background; only the answer stops
            # waiting for it.
            work = asyncio.ensure_future(session.sync(job_ids))
            try:
                await asyncio.wait_for(asyncio.shield(work), self.config.install_timeout_s)
                return INSTALLED
            except asyncio.TimeoutError:
                return "pending: timed out (the session keeps trying)"
            except asyncio.CancelledError:
                # The session's write was cancelled under it (its channel went down mid-write:
                # finsy cancels the call). That is this request's answer, not its cancellation;
                # before, the CancelledError ended the API handler and the caller never got a
                # reply. A cancellation of this request itself (work not cancelled) goes on.
                if not work.cancelled():
                    raise
                return "pending: the switch connection dropped during the write"
            except Exception as exc:  # the session's next reconcile retries
                return f"pending: {exc}"

        names = list(switches)
        results = await asyncio.gather(*(one(sw) for sw in names))
        return dict(zip(names, results, strict=True))
