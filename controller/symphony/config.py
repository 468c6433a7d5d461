"""The controller's configuration file (TOML), parsed into frozen dataclasses.

Every check happens here, at start: a daemon that accepted a bad config would fail later, on one
switch, in the middle of the night. Each error names the field it is about, with its path in the
file (``switches[1].routes[0].prefix``), so the operator can find it without reading code.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

TARGETS = ("bmv2", "tofino2")
# bmv2 v1model ports are 9 bits; 511 is the drop port, so real ports are 0..510.
PORT_MAX = 510
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
PARAM_NAMES = ("k", "tau", "t_win_us", "n_warmup", "n_sample", "alpha_max", "psn_mode")
# Paper section 4.7 (DCQCN defaults): K_min = 50, K_max = 100 (packets on bmv2), P_max = 0.2.
DEFAULT_QUEUE_MARKING = {"k_min": 50, "k_max": 100, "p_max": 0.2}


class ConfigError(ValueError):
    """A config value that the daemon refuses; ``field`` is its path in the file."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"config error: {field_path}: {message}")
        self.field = field_path


@dataclass(frozen=True)
class QueueMarking:
    k_min: int
    k_max: int
    p_max: float


@dataclass(frozen=True)
class PortConfig:
    port: int
    marking: QueueMarking
    # Non-IPv4 traffic arriving on `port` leaves on `peer` (forward.port_map), if set.
    peer: int | None = None


@dataclass(frozen=True)
class Route:
    prefix: ipaddress.IPv4Network
    port: int


@dataclass(frozen=True)
class SwitchConfig:
    name: str
    address: str
    device_id: int
    target: str
    thrift_port: int
    thrift_host: str
    ports: tuple[PortConfig, ...]
    routes: tuple[Route, ...]


@dataclass(frozen=True)
class PipelineConfig:
    """Where the compiled program for one target lives."""

    p4info: Path
    # bmv2: the bmv2 JSON. tofino2: unused (binary/context/bfrt are packed instead).
    device_config: Path | None = None
    program_name: str = "symphony"
    binary: Path | None = None
    context: Path | None = None
    bfrt: Path | None = None
    # How the Tofino device config is packed: "pi" (bf_switchd's PI server, stratum_bf) or
    # "stratum" (BfPipelineConfig protobuf, stratum_bfrt / stratum_tdi).
    device_config_format: str = "pi"


@dataclass(frozen=True)
class ApiConfig:
    listen: str = "127.0.0.1:50051"
    token_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None

    @property
    def host(self) -> str:
        return split_host_port(self.listen)[0]

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    @property
    def mtls(self) -> bool:
        return self.tls_cert is not None and self.tls_client_ca is not None


@dataclass(frozen=True)
class Config:
    database: Path
    switches: tuple[SwitchConfig, ...]
    pipelines: Mapping[str, PipelineConfig]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    api: ApiConfig = field(default_factory=ApiConfig)
    metrics_listen: str = "127.0.0.1:9464"
    # Full read-back-and-fix of every switch, on top of the one after each (re)connection.
    reconcile_interval_s: float = 30.0
    # How long Allocate/Release wait for the switches before answering "pending".
    install_timeout_s: float = 5.0
    telemetry_interval_s: float = 5.0
    # Reconnect backoff: first delay, doubled per failure up to the cap.
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 2.0

    def switch(self, name: str) -> SwitchConfig:
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(name)

    @property
    def switch_names(self) -> tuple[str, ...]:
        return tuple(sw.name for sw in self.switches)


def split_host_port(address: str) -> tuple[str, int]:
    """'host:port' or '[v6]:port' -> (host, port); raises ValueError."""
    host, sep, port = address.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{address!r} is not host:port")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} has no valid TCP port")
    return host, int(port)


def is_loopback_host(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load(path: str | Path) -> Config:
    """Read and check a config file; raise ConfigError naming the bad field."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError("<file>", f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("<file>", f"{path} is not valid TOML: {exc}") from exc
    return parse(raw, base_dir=path.parent)


def parse(raw: Mapping[str, Any], base_dir: Path = Path(".")) -> Config:
    """Check a decoded config; relative paths are relative to ``base_dir`` (the file's folder)."""
    r = _Reader(raw, "", base_dir)
    r.only_keys(
        "database",
        "switches",
        "pipelines",
        "defaults",
        "queue_marking",
        "api",
        "metrics",
        "controller",
    )
    ctl = r.table("controller")
    ctl.only_keys(
        "reconcile_interval_s",
        "install_timeout_s",
        "telemetry_interval_s",
        "backoff_initial_s",
        "backoff_max_s",
    )
    database = r.path("database", required=True)
    assert database is not None
    qm_defaults = _queue_marking(r.table("queue_marking"), DEFAULT_QUEUE_MARKING)
    pipelines = _pipelines(r.table("pipelines"))
    switches = _switches(r, qm_defaults, pipelines)
    defaults = _defaults(r.table("defaults"))
    api = _api(r.table("api"))
    metrics = r.table("metrics")
    metrics.only_keys("listen")
    metrics_listen = metrics.address("listen", "127.0.0.1:9464")
    # /metrics names every job: off loopback it asks for the API token (telemetry.serve).
    if not is_loopback_host(split_host_port(metrics_listen)[0]) and api.token_file is None:
        raise ConfigError(
            "metrics.listen",
            f"{metrics_listen} is not a loopback address: set api.token_file (then /metrics asks"
            " for the same bearer token) to listen there",
        )
    backoff_initial = ctl.number("backoff_initial_s", 0.1, lo=0.001, hi=60)
    return Config(
        database=database,
        switches=switches,
        pipelines=pipelines,
        defaults=defaults,
        api=api,
        metrics_listen=metrics_listen,
        reconcile_interval_s=ctl.number("reconcile_interval_s", 30.0, lo=0.1, hi=86400),
        install_timeout_s=ctl.number("install_timeout_s", 5.0, lo=0.0, hi=600),
        telemetry_interval_s=ctl.number("telemetry_interval_s", 5.0, lo=0.1, hi=3600),
        backoff_initial_s=backoff_initial,
        backoff_max_s=ctl.number("backoff_max_s", 2.0, lo=backoff_initial, hi=600),
    )


def _queue_marking(r: _Reader, fallback: Mapping[str, Any]) -> QueueMarking:
    k_min = r.integer("k_min", fallback["k_min"], lo=0, hi=(1 << 19) - 1)
    k_max = r.integer("k_max", fallback["k_max"], lo=0, hi=(1 << 19) - 1)
    p_max = r.number("p_max", fallback["p_max"], lo=0.0, hi=1.0)
    from symphony.model.params import QueueParams

    # The model's rules (it generates the entries): k_min < k_max, depths within 19 bits.
    try:
        QueueParams(k_min, k_max, p_max).validate()
    except ValueError as exc:
        name, _, reason = str(exc).partition(": ")
        raise ConfigError(r.at(name), reason or str(exc)) from exc
    return QueueMarking(k_min, k_max, p_max)


def _pipelines(r: _Reader) -> dict[str, PipelineConfig]:
    r.only_keys(*TARGETS)
    out: dict[str, PipelineConfig] = {}
    for target in TARGETS:
        if target not in r.raw:
            continue
        p = r.table(target)
        if target == "bmv2":
            p.only_keys("p4info", "device_config")
            p4info = p.path("p4info", required=True, exists=True)
            blob = p.path("device_config", required=True, exists=True)
            assert p4info is not None
            out[target] = PipelineConfig(p4info=p4info, device_config=blob)
        else:
            p.only_keys("p4info", "program_name", "binary", "context", "bfrt", "format")
            p4info = p.path("p4info", required=True, exists=True)
            assert p4info is not None
            fmt = p.choice("format", ("pi", "stratum"), "pi")
            out[target] = PipelineConfig(
                p4info=p4info,
                program_name=p.name("program_name", "symphony"),
                binary=p.path("binary", required=True, exists=True),
                context=p.path("context", required=True, exists=True),
                bfrt=p.path("bfrt", required=fmt == "stratum", exists=True),
                device_config_format=fmt,
            )
    return out


def _switches(
    r: _Reader, qm_defaults: QueueMarking, pipelines: Mapping[str, PipelineConfig]
) -> tuple[SwitchConfig, ...]:
    items = r.array("switches", required=True)
    if not items:
        raise ConfigError("switches", "at least one switch is required")
    seen_names: set[str] = set()
    seen_targets: dict[tuple[str, int], str] = {}
    out = []
    for sw in items:
        sw.only_keys(
            "name",
            "address",
            "device_id",
            "target",
            "thrift_port",
            "thrift_host",
            "ports",
            "routes",
        )
        name = sw.name("name")
        if name in seen_names:
            raise ConfigError(sw.at("name"), f"duplicate switch name {name!r}")
        seen_names.add(name)
        address = sw.address("address")
        device_id = sw.integer("device_id", lo=0, hi=(1 << 64) - 1)
        key = (address, device_id)
        if key in seen_targets:
            raise ConfigError(
                sw.at("address"),
                f"{address} device_id {device_id} is already switch {seen_targets[key]!r}",
            )
        seen_targets[key] = name
        target = sw.choice("target", TARGETS)
        if target not in pipelines:
            raise ConfigError(sw.at("target"), f"no [pipelines.{target}] section for {target!r}")
        thrift_port = sw.integer("thrift_port", 9090, lo=1, hi=65535)
        thrift_host = sw.string("thrift_host", split_host_port(address)[0].strip("[]"))
        ports = []
        port_numbers: set[int] = set()
        for p in sw.array("ports"):
            p.only_keys("port", "peer", "k_min", "k_max", "p_max")
            number = p.integer("port", lo=0, hi=PORT_MAX)
            if number in port_numbers:
                raise ConfigError(p.at("port"), f"duplicate port {number}")
            port_numbers.add(number)
            peer = p.integer("peer", None, lo=0, hi=PORT_MAX)
            ports.append(
                PortConfig(number, _queue_marking(p, dataclasses.asdict(qm_defaults)), peer)
            )
        for p in ports:
            if p.peer is not None and p.peer not in port_numbers:
                idx = ports.index(p)
                raise ConfigError(
                    f"{sw.prefix}.ports[{idx}].peer", f"port {p.peer} is not in ports"
                )
        routes = []
        for rt in sw.array("routes"):
            rt.only_keys("prefix", "port")
            prefix = rt.network("prefix")
            port = rt.integer("port", lo=0, hi=PORT_MAX)
            if port_numbers and port not in port_numbers:
                raise ConfigError(rt.at("port"), f"port {port} is not in ports")
            if any(x.prefix == prefix for x in routes):
                raise ConfigError(rt.at("prefix"), f"duplicate route {prefix}")
            routes.append(Route(prefix, port))
        out.append(
            SwitchConfig(
                name=name,
                address=address,
                device_id=device_id,
                target=target,
                thrift_port=thrift_port,
                thrift_host=thrift_host,
                ports=tuple(ports),
                routes=tuple(routes),
            )
        )
    return tuple(out)


def _defaults(r: _Reader) -> dict[str, Any]:
    r.only_keys(*PARAM_NAMES)
    out = dict(r.raw)
    # The model's own check names the field; prefix it with the section.
    from symphony.jobs.params import ParamError, check_overrides

    try:
        check_overrides(out)
    except ParamError as exc:
        raise ConfigError(f"defaults.{exc.field}", exc.reason) from exc
    return out


def _api(r: _Reader) -> ApiConfig:
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


class _Reader:
    """Typed access to one TOML table, remembering its path for error messages."""

    def __init__(self, raw: Any, prefix: str, base_dir: Path) -> None:
        if not isinstance(raw, Mapping):
            raise ConfigError(prefix or "<file>", "must be a table")
        self.raw = raw
        self.prefix = prefix
        self.base_dir = base_dir

    def at(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def only_keys(self, *keys: str) -> None:
        for k in self.raw:
            if k not in keys:
                raise ConfigError(self.at(k), f"unknown key (known: {', '.join(keys)})")

    def _get(self, key: str, default: Any, required: bool) -> Any:
        if key in self.raw:
            return self.raw[key]
        if required:
            raise ConfigError(self.at(key), "is required")
        return default

    def table(self, key: str) -> _Reader:
        return _Reader(self.raw.get(key, {}), self.at(key), self.base_dir)

    def array(self, key: str, required: bool = False) -> list[_Reader]:
        value = self._get(key, [], required)
        if not isinstance(value, list):
            raise ConfigError(self.at(key), "must be an array of tables")
        return [_Reader(v, f"{self.at(key)}[{i}]", self.base_dir) for i, v in enumerate(value)]

    def string(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default, default is None)
        if not isinstance(value, str) or not value:
            raise ConfigError(self.at(key), f"must be a non-empty string, got {value!r}")
        return value

    def name(self, key: str, default: str | None = None) -> str:
        value = self.string(key, default)
        if not NAME_RE.match(value):
            raise ConfigError(
                self.at(key), f"{value!r} is not a name (letters, digits, . _ -; 1-63 chars)"
            )
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = self.string(key, default)
        if value not in choices:
            raise ConfigError(self.at(key), f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, key: str, default: Any = ..., *, lo: int, hi: int) -> Any:
        value = self._get(key, None if default is ... else default, default is ...)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(self.at(key), f"must be an integer, got {value!r}")
        if not lo <= value <= hi:
            raise ConfigError(self.at(key), f"must be in {lo}..{hi}, got {value}")
        return value

    def number(self, key: str, default: float, *, lo: float, hi: float) -> float:
        value = self._get(key, default, False)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(self.at(key), f"must be a number, got {value!r}")
        if not lo <= value <= hi:
            raise ConfigError(self.at(key), f"must be in [{lo}, {hi}], got {value}")
        return float(value)

    def address(self, key: str, default: str | None = None) -> str:
        value = self.string(key, default)
        try:
            split_host_port(value)
        except ValueError as exc:
            raise ConfigError(self.at(key), str(exc)) from exc
        return value

    def network(self, key: str) -> ipaddress.IPv4Network:
        value = self.string(key)
        try:
            return ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ConfigError(self.at(key), f"{value!r} is not an IPv4 prefix: {exc}") from exc

    def path(self, key: str, required: bool = False, exists: bool = False) -> Path | None:
        value = self._get(key, None, required)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise ConfigError(self.at(key), f"must be a path string, got {value!r}")
        p = Path(value)
        p = p if p.is_absolute() else self.base_dir / p
        if exists and not p.is_file():
            raise ConfigError(self.at(key), f"{p} does not exist (run `make build`?)")
        return p


# A complete config for one bmv2 switch (`symphony-controller --example-config` prints it);
# relative paths are relative to the config file's folder.
EXAMPLE = """\
database = "run/symphony.db"

[controller]
reconcile_interval_s = 30     # full read-back-and-fix of every switch
install_timeout_s = 5         # Allocate/Release wait this long for the switches
telemetry_interval_s = 5
backoff_initial_s = 0.1       # reconnect backoff: doubles up to backoff_max_s
backoff_max_s = 2.0

[api]
listen = "127.0.0.1:50051"    # off loopback only with token_file or mTLS
# token_file = "/etc/symphony/api.token"
# tls_cert = "server.pem"
# tls_key = "server.key"
# tls_client_ca = "clients-ca.pem"   # with tls_cert/tls_key: mTLS

[metrics]
listen = "127.0.0.1:9464"

[pipelines.bmv2]
p4info = "build/bmv2/symphony.p4info.txtpb"
device_config = "build/bmv2/symphony.json"

# [pipelines.tofino2]
# p4info = "build/tofino2/symphony.p4info.txtpb"
# program_name = "symphony"
# binary = "build/tofino2/pipe/tofino2.bin"
# context = "build/tofino2/pipe/context.json"
# bfrt = "build/tofino2/bf-rt.json"
# format = "pi"                 # "pi" (bf_switchd, stratum_bf) or "stratum" (stratum_bfrt)

[defaults]                      # global job parameters (SPEC section 7)
k = 0.01
tau = 0.25
t_win_us = 100.0

[queue_marking]                 # per-port default; a port may override each value
k_min = 50
k_max = 100
p_max = 0.2

[[switches]]
name = "s1"
address = "127.0.0.1:9559"
device_id = 0                   # simple_switch_grpc's device id
target = "bmv2"
thrift_port = 9090
ports = [
  { port = 1, peer = 2 },
  { port = 2, peer = 1, k_min = 20, k_max = 80 },
]
routes = [
  { prefix = "10.0.1.0/24", port = 1 },
  { prefix = "10.0.2.0/24", port = 2 },
]
"""
