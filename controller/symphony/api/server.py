"""The gRPC JobService: thin glue from protobufs to the JobManager."""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import grpc

from symphony.api import convert
from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.api.auth import TokenInterceptor, read_token, server_credentials
from symphony.config import ApiConfig
from symphony.jobs.errors import JobError, Kind, StoreError
from symphony.jobs.manager import JobManager, Outcome

LOG = logging.getLogger(__name__)

STATUS = {
    Kind.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    Kind.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Kind.CONFLICT: grpc.StatusCode.ALREADY_EXISTS,
    Kind.EXHAUSTED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    # Transient for the caller: the leader (named in LEADER_KEY) or a retry will take it.
    Kind.NOT_LEADER: grpc.StatusCode.UNAVAILABLE,
}
# Trailing metadata of a NOT_LEADER refusal: the leader's API address, for clients that follow
# it (symphony.client) without parsing the message.
LEADER_KEY = "symphony-leader"


def _errors(method: Any) -> Any:
    """Turn a JobError into its gRPC status; anything else is INTERNAL (and logged)."""

    async def wrapper(
        self: JobService, request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        try:
            return await method(self, request, context)
        except JobError as exc:
            if exc.leader:
                context.set_trailing_metadata(((LEADER_KEY, exc.leader),))
            await context.abort(STATUS[exc.kind], str(exc))
        except grpc.aio.AbortError:
            raise
        except (sqlite3.Error, StoreError) as exc:
            # The store refused the write (read-only, disk full, unreachable): its transaction
            # rolled back - unless the connection broke during COMMIT, when nobody knows.
            LOG.error("%s: job database: %s", method.__name__, exc)
            unknown = isinstance(exc, StoreError) and exc.outcome_unknown
            outcome = (
                "the change may or may not have been made: retry with the same request key"
                if unknown
                else "nothing was changed"
            )
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"job database: {exc} ({outcome})")
        except Exception:
            LOG.exception("%s failed", method.__name__)
            await context.abort(grpc.StatusCode.INTERNAL, "internal error (see controller log)")

    wrapper.__name__ = method.__name__
    return wrapper


class JobService(pb_grpc.JobServiceServicer):
    def __init__(self, manager: JobManager) -> None:
        self.m = manager

    def _job(self, job: Any) -> pb.Job:
        effective = None
        if job.state == "active":
            try:
                effective = self.m.params_of(job)
            except ValueError:
                effective = None
        return convert.job_to_pb(job, effective)

    def _reply(self, out: Outcome) -> pb.JobReply:
        return pb.JobReply(
            job=self._job(out.job),
            created=out.created,
            switches=convert.switch_results(out.switches),
        )

    @_errors
    async def Allocate(self, request: pb.AllocateRequest, context: Any) -> pb.JobReply:
        out = await self.m.allocate(
            request.request_key,
            request.name,
            request.mode,
            list(request.hosts),
            list(request.switches),
            convert.params_from_pb(request.params),
        )
        return self._reply(out)

    @_errors
    async def Release(self, request: pb.JobRef, context: Any) -> pb.JobReply:
        return self._reply(await self.m.release(request.job))

    @_errors
    async def List(self, request: pb.ListRequest, context: Any) -> pb.ListReply:
        return pb.ListReply(jobs=[self._job(j) for j in self.m.list(request.include_released)])

    @_errors
    async def Get(self, request: pb.JobRef, context: Any) -> pb.GetReply:
        job = self.m.find(request.job)
        live = await self.m.live_state(job)
        return pb.GetReply(
            job=self._job(job), live=[convert.live_to_pb(sw, st) for sw, st in live.items()]
        )

    @_errors
    async def SetParams(self, request: pb.SetParamsRequest, context: Any) -> pb.SetParamsReply:
        params = convert.params_from_pb(request.params)
        out = await self.m.set_params(request.job or None, params)
        reply = pb.SetParamsReply()
        # "global" is a Python keyword, so the field is reached with getattr.
        getattr(reply, "global").CopyFrom(convert.params_to_pb(self.m.store.global_params()))
        if out is not None:
            reply.job.CopyFrom(self._job(out.job))
            reply.switches.extend(convert.switch_results(out.switches))
        return reply

    @_errors
    async def SwitchStatus(self, request: Any, context: Any) -> pb.SwitchStatusReply:
        """Every switch of the config: its session's status, or "unmanaged" where this
        controller runs none (a follower)."""
        sessions = {s.name: s for s in self.m.switch_status()}
        topology = self.m.config.topology
        out = []
        for sw in self.m.config.switches:
            info = pb.SwitchInfo(
                name=sw.name, address=sw.address, target=sw.target, ports=len(sw.ports)
            )
            if topology is not None:
                info.neighbours.extend(topology.neighbour_labels(sw.name))
            s = sessions.get(sw.name)
            if s is None:
                info.state = "unmanaged"
                info.last_error = self.m.gate.why_not() or "no session on this controller"
            else:
                info.state = s.state
                info.connected_since = s.connected_since or 0.0
                info.last_error = s.last_error
                info.connects = s.connects
                info.last_reconcile = s.last_reconcile or 0.0
                info.last_reconcile_changes = s.last_reconcile_changes
                info.entries = s.entries
                info.jobs = s.jobs
                info.routes = s.routes
                info.ecmp_groups = s.ecmp_groups
            out.append(info)
        return pb.SwitchStatusReply(switches=out)


async def start(manager: JobManager, api: ApiConfig) -> grpc.aio.Server:
    """Start the API server; the config loader already refused an unsafe listen address."""
    interceptors = []
    if api.token_file is not None:
        interceptors.append(TokenInterceptor(read_token(api.token_file)))
    server = grpc.aio.server(interceptors=interceptors)
    pb_grpc.add_JobServiceServicer_to_server(JobService(manager), server)
    creds = server_credentials(api)
    if creds is None:
        port = server.add_insecure_port(api.listen)
    else:
        port = server.add_secure_port(api.listen, creds)
    if port == 0:
        raise OSError(f"cannot listen on {api.listen}")
    await server.start()
    LOG.info("API listening on %s (%s)", api.listen, "TLS" if creds else "plaintext")
    server.bound_port = port  # type: ignore[attr-defined]
    return server
