"""The API's security policy: who may reach the controller's gRPC API, and how.

Off loopback, a request must prove who it is: a bearer token (``token_file``) or a client
certificate (mTLS: ``tls_cert``, ``tls_key``, ``tls_client_ca``). The daemon refuses to start on a
config that would listen elsewhere without one. ``/metrics`` names every job: off loopback it
needs the API token, which it then asks for (telemetry.serve).
"""

from __future__ import annotations

from symphony.config.addresses import is_loopback_host, split_host_port
from symphony.config.reader import TableReader
from symphony.config.schema import ApiConfig, ConfigError


def api_config(r: TableReader) -> ApiConfig:
    r.only_keys("listen", "token_file", "tls_cert", "tls_key", "tls_client_ca")
    api = ApiConfig(
        listen=r.address("listen", "127.0.0.1:50051"),
        token_file=r.path("token_file"),
        tls_cert=r.path("tls_cert"),
        tls_key=r.path("tls_key"),
        tls_client_ca=r.path("tls_client_ca"),
    )
    if (api.tls_cert is None) != (api.tls_key is None):
        raise ConfigError("api.tls_key", "tls_cert and tls_key go together")
    if api.tls_client_ca is not None and api.tls_cert is None:
        raise ConfigError("api.tls_client_ca", "mTLS needs tls_cert and tls_key too")
    for name in ("token_file", "tls_cert", "tls_key", "tls_client_ca"):
        p = getattr(api, name)
        if p is not None and not p.is_file():
            raise ConfigError(f"api.{name}", f"{p} does not exist")
    if api.token_file is not None and not api.token_file.read_text().strip():
        raise ConfigError("api.token_file", f"{api.token_file} is empty")
    # Security model: off loopback, a request must prove who it is (token or client cert).
    if not api.is_loopback and api.token_file is None and not api.mtls:
        raise ConfigError(
            "api.listen",
            f"{api.listen} is not a loopback address: set api.token_file or mTLS "
            "(tls_cert, tls_key, tls_client_ca) to listen there",
        )
    return api


def check_metrics_listen(listen: str, api: ApiConfig) -> str:
    """A non-loopback ``metrics.listen`` needs ``api.token_file`` (the same bearer token)."""
    if not is_loopback_host(split_host_port(listen)[0]) and api.token_file is None:
        raise ConfigError(
            "metrics.listen",
            f"{listen} is not a loopback address: set api.token_file (then /metrics asks"
            " for the same bearer token) to listen there",
        )
    return listen
