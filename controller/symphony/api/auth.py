"""API authentication: a bearer token (metadata ``authorization: Bearer <token>``) and/or mTLS.

The token is compared in constant time. mTLS is enforced by the TLS layer itself (the server
requires and verifies a client certificate signed by ``tls_client_ca``), so there is nothing
left for an interceptor to check in that case.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from symphony.config import ApiConfig


def read_token(path: Path) -> str:
    return path.read_text().strip()


class TokenInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

        async def deny(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong API token")

        self._deny = deny

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        got = b""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                got = value.encode() if isinstance(value, str) else value
        if hmac.compare_digest(got, self._expected):
            return await continuation(handler_call_details)
        return grpc.unary_unary_rpc_method_handler(self._deny)


def server_credentials(api: ApiConfig) -> grpc.ServerCredentials | None:
    if api.tls_cert is None or api.tls_key is None:
        return None
    ca = api.tls_client_ca.read_bytes() if api.tls_client_ca is not None else None
    return grpc.ssl_server_credentials(
        [(api.tls_key.read_bytes(), api.tls_cert.read_bytes())],
        root_certificates=ca,
        require_client_auth=ca is not None,
    )
