"""The Python client of the controller's job API, for schedulers, NCCL wrappers and symphonyctl.

    from symphony.client import Client, Credentials

    with Client("10.0.0.5:50051", Credentials.from_files(token_file="/etc/symphony/token")) as c:
        job = c.allocate("slurm:1234", "slurm-1234", hosts=["gpu01", "gpu02"]).job
        print(job.job_id)          # what the hosts write in their packets (docs/client.md)
        c.release("slurm-1234")

Replicated controllers: give every replica's address (a list, or one string with commas:
``Client("ctl-a:50051,ctl-b:50051,ctl-c:50051")``). A follower refuses changes with UNAVAILABLE
and names the leader (trailing metadata ``symphony-leader``); the client goes there at once and
keeps using it. An address that does not answer is skipped for the next one; only when a whole
round found no leader (a failover in progress) does the client wait before the next attempt.

`AsyncClient` has the same methods as coroutines (grpc.aio). Every call is retried on the
transient codes in `Retry.codes` with exponential backoff: safe because every method is
idempotent on the server - `allocate` on its request key (a retried request gets the same job and
Job_ID), `release` ends in the same state (and ``missing_ok`` turns the NOT_FOUND a retry of a
release that did land gets into success), the rest read or set absolute values. Errors that are
not transient raise `ApiError` with the gRPC status code and the controller's message.
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.model.params import PARAM_KINDS

ParamValues = Mapping[str, float | int | str]
DEFAULT_API = "127.0.0.1:50051"
# Where a follower names the leader (symphony.api.server.LEADER_KEY; the client imports only
# the API's stubs, so the key is repeated here and checked by tests/test_client.py).
LEADER_KEY = "symphony-leader"
Targets = str | Sequence[str]


def split_targets(target: Targets) -> list[str]:
    """The API addresses of ``"a:1,b:2"`` or ``["a:1", "b:2"]``, in order, without repeats."""
    items = target.split(",") if isinstance(target, str) else list(target)
    out: list[str] = []
    for t in (x.strip() for x in items):
        if t and t not in out:
            out.append(t)
    if not out:
        raise ValueError("no API address given")
    return out


def _leader_of(exc: grpc.RpcError) -> str:
    """The leader a follower named in its refusal, or ""."""
    try:
        # (key, value) pairs at runtime; grpc-stubs declares objects with .key/.value instead.
        metadata: Sequence[tuple[str, str | bytes]] = exc.trailing_metadata() or ()  # type: ignore[assignment]
    except Exception:  # no metadata on this error (a channel that never connected)
        return ""
    for key, value in metadata:
        if key == LEADER_KEY:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""


class ApiError(Exception):
    """A refused or failed call: ``code`` is the gRPC status, ``message`` the controller's."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Credentials:
    """A bearer token and/or TLS (server CA; client certificate and key for mTLS)."""

    token: str | None = None
    tls_ca: bytes | None = None
    tls_cert: bytes | None = None
    tls_key: bytes | None = None

    @classmethod
    def from_files(
        cls,
        token_file: str | Path | None = None,
        tls_ca: str | Path | None = None,
        tls_cert: str | Path | None = None,
        tls_key: str | Path | None = None,
    ) -> Credentials:
        def read(p: str | Path | None) -> bytes | None:
            return Path(p).read_bytes() if p else None

        if bool(tls_cert) != bool(tls_key):
            raise ValueError("mTLS needs both a client certificate and its key")
        if tls_cert and not tls_ca:
            raise ValueError("a client certificate needs the server's CA (tls_ca) too")
        token = Path(token_file).read_text().strip() if token_file else None
        return cls(token or None, read(tls_ca), read(tls_cert), read(tls_key))

    def metadata(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")] if self.token else []

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        if self.tls_ca is None:
            return None
        return grpc.ssl_channel_credentials(
            root_certificates=self.tls_ca, private_key=self.tls_key, certificate_chain=self.tls_cert
        )


@dataclass(frozen=True)
class Retry:
    """How often and how long to retry a call that failed with a transient status."""

    attempts: int = 5
    first_delay_s: float = 0.2
    max_delay_s: float = 5.0
    codes: frozenset[grpc.StatusCode] = field(
        default=frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
    )

    def delays(self) -> Iterable[float]:
        """The pause before each retry (attempts - 1 of them)."""
        d = self.first_delay_s
        for _ in range(self.attempts - 1):
            yield d
            d = min(self.max_delay_s, d * 2)


NO_RETRY = Retry(attempts=1)


def params_msg(values: ParamValues | None) -> pb.Params:
    """A Params message from ``{name: value}``; unknown names and wrong kinds raise ValueError."""
    msg = pb.Params()
    for name, value in (values or {}).items():
        if name not in PARAM_KINDS:
            raise ValueError(f"unknown parameter {name!r} (known: {', '.join(PARAM_KINDS)})")
        setattr(msg, name, PARAM_KINDS[name](value))
    return msg


def _allocate_request(
    request_key: str,
    name: str,
    mode: str,
    switches: Iterable[str],
    hosts: Iterable[str],
    params: ParamValues | None,
) -> pb.AllocateRequest:
    if not request_key:
        raise ValueError("request_key is required: it makes a retried allocate safe")
    return pb.AllocateRequest(
        request_key=request_key,
        name=name,
        mode=mode,
        hosts=list(hosts),
        switches=list(switches),
        params=params_msg(params),
    )


def _error(exc: grpc.RpcError) -> ApiError:
    return ApiError(exc.code(), exc.details() or "")


def _released(job: str | int) -> pb.JobReply:
    """What `release(missing_ok=True)` returns for a job that is not live (any more)."""
    return pb.JobReply(job=pb.Job(name=str(job), state="released"))


class _Base:
    """What both clients share: credentials, timeouts, retries, the replicas' addresses, one
    channel and stub per address (opened when first used)."""

    def __init__(
        self,
        target: Targets = DEFAULT_API,
        credentials: Credentials | None = None,
        *,
        timeout_s: float = 30.0,
        retry: Retry = Retry(),
    ) -> None:
        self.credentials = credentials or Credentials()
        self.timeout_s = timeout_s
        self.retry = retry
        self.targets = split_targets(target)
        # The address that answered last (the leader, with replicas): tried first.
        self.current = self.targets[0]
        self._channels: dict[str, Any] = {}
        self._stubs: dict[str, pb_grpc.JobServiceStub] = {}

    def _open(self, target: str, creds: grpc.ChannelCredentials | None) -> Any:
        raise NotImplementedError

    def _stub(self, target: str) -> pb_grpc.JobServiceStub:
        stub = self._stubs.get(target)
        if stub is None:
            channel = self._open(target, self.credentials.channel_credentials())
            self._channels[target] = channel
            stub = self._stubs[target] = pb_grpc.JobServiceStub(channel)
        return stub

    def _call_kw(self) -> dict[str, Any]:
        return {"timeout": self.timeout_s, "metadata": self.credentials.metadata()}

    def _round(self) -> Iterator[str]:
        """One round of addresses to try: the last one that answered, then the others in order;
        a leader named by a refusal is tried next (see `_redirect`), once per round."""
        self._named: list[str] = []
        tried: set[str] = set()
        order = [self.current, *(t for t in self.targets if t != self.current)]
        while order or self._named:
            t = self._named.pop(0) if self._named else order.pop(0)
            if t in tried:
                continue
            tried.add(t)
            yield t

    def _redirect(self, exc: grpc.RpcError) -> None:
        leader = _leader_of(exc)
        if leader:
            if leader not in self.targets:
                self.targets.append(leader)  # the address the leader advertises
            self._named.append(leader)


class Client(_Base):
    """Blocking client; one channel, closed by `close` or the ``with`` block."""

    def _open(self, target: str, creds: grpc.ChannelCredentials | None) -> grpc.Channel:
        return grpc.secure_channel(target, creds) if creds else grpc.insecure_channel(target)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()

    def _call(self, method: str, request: Any) -> Any:
        kw = self._call_kw()
        delays = iter(self.retry.delays())
        while True:
            last: grpc.RpcError | None = None
            for target in self._round():
                try:
                    reply = getattr(self._stub(target), method)(request, **kw)
                except grpc.RpcError as exc:
                    if exc.code() not in self.retry.codes:
                        raise _error(exc) from None
                    last = exc
                    self._redirect(exc)
                    continue
                self.current = target
                return reply
            assert last is not None
            pause = next(delays, None)
            if pause is None:
                raise _error(last) from None
            time.sleep(pause)

    def allocate(
        self,
        request_key: str,
        name: str,
        *,
        switches: Iterable[str] = (),
        mode: str = "tag",
        hosts: Iterable[str] = (),
        params: ParamValues | None = None,
    ) -> pb.JobReply:
        """A Job_ID for the job, on ``switches``; or, with none and a topology in the
        controller's config, on every switch between its ``hosts`` (names or addresses).
        ``mode`` "hosts" classifies by the hosts' addresses, "tag" by the BTH tag."""
        req = _allocate_request(request_key, name, mode, switches, hosts, params)
        reply: pb.JobReply = self._call("Allocate", req)
        return reply

    def release(self, job: str | int, *, missing_ok: bool = False) -> pb.JobReply:
        try:
            reply: pb.JobReply = self._call("Release", pb.JobRef(job=str(job)))
            return reply
        except ApiError as exc:
            if missing_ok and exc.code == grpc.StatusCode.NOT_FOUND:
                return _released(job)
            raise

    def get(self, job: str | int) -> pb.GetReply:
        reply: pb.GetReply = self._call("Get", pb.JobRef(job=str(job)))
        return reply

    def list(self, *, include_released: bool = False) -> builtins.list[pb.Job]:
        reply = self._call("List", pb.ListRequest(include_released=include_released))
        return builtins.list(reply.jobs)

    def set_params(self, values: ParamValues, *, job: str | int = "") -> pb.SetParamsReply:
        req = pb.SetParamsRequest(job=str(job), params=params_msg(values))
        reply: pb.SetParamsReply = self._call("SetParams", req)
        return reply

    def switch_status(self) -> builtins.list[pb.SwitchInfo]:
        return builtins.list(self._call("SwitchStatus", pb.SwitchStatusRequest()).switches)


class AsyncClient(_Base):
    """The same API as `Client`, for asyncio code (one grpc.aio channel)."""

    def _open(self, target: str, creds: grpc.ChannelCredentials | None) -> grpc.aio.Channel:
        if creds:
            return grpc.aio.secure_channel(target, creds)
        return grpc.aio.insecure_channel(target)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()

    async def _call(self, method: str, request: Any) -> Any:
        kw = self._call_kw()
        delays = iter(self.retry.delays())
        while True:
            last: grpc.RpcError | None = None
            for target in self._round():
                try:
                    reply = await getattr(self._stub(target), method)(request, **kw)
                except grpc.RpcError as exc:
                    if exc.code() not in self.retry.codes:
                        raise _error(exc) from None
                    last = exc
                    self._redirect(exc)
                    continue
                self.current = target
                return reply
            assert last is not None
            pause = next(delays, None)
            if pause is None:
                raise _error(last) from None
            await asyncio.sleep(pause)

    async def allocate(
        self,
        request_key: str,
        name: str,
        *,
        switches: Iterable[str] = (),
        mode: str = "tag",
        hosts: Iterable[str] = (),
        params: ParamValues | None = None,
    ) -> pb.JobReply:
        req = _allocate_request(request_key, name, mode, switches, hosts, params)
        reply: pb.JobReply = await self._call("Allocate", req)
        return reply

    async def release(self, job: str | int, *, missing_ok: bool = False) -> pb.JobReply:
        try:
            reply: pb.JobReply = await self._call("Release", pb.JobRef(job=str(job)))
            return reply
        except ApiError as exc:
            if missing_ok and exc.code == grpc.StatusCode.NOT_FOUND:
                return _released(job)
            raise

    async def get(self, job: str | int) -> pb.GetReply:
        reply: pb.GetReply = await self._call("Get", pb.JobRef(job=str(job)))
        return reply

    async def list(self, *, include_released: bool = False) -> builtins.list[pb.Job]:
        req = pb.ListRequest(include_released=include_released)
        return builtins.list((await self._call("List", req)).jobs)

    async def set_params(self, values: ParamValues, *, job: str | int = "") -> pb.SetParamsReply:
        req = pb.SetParamsRequest(job=str(job), params=params_msg(values))
        reply: pb.SetParamsReply = await self._call("SetParams", req)
        return reply

    async def switch_status(self) -> builtins.list[pb.SwitchInfo]:
        reply = await self._call("SwitchStatus", pb.SwitchStatusRequest())
        return list(reply.switches)
