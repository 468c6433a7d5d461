"""The controller's configuration file (TOML): read, check every field, build `Config`.

Every check happens here, at start: a daemon that accepted a bad config would fail later, on one
switch, in the middle of the night. Each error names the field it is about, with its path in the
file (``switches[1].routes[0].prefix``), so the operator can find it without reading code.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from symphony.config import topology
from symphony.config.addresses import split_host_port, unicast_ipv4
from symphony.config.reader import TableReader, read_toml
from symphony.config.schema import (
    DEFAULT_QUEUE_MARKING,
    ApiConfig,
    Config,
    ConfigError,
    PipelineConfig,
    PortConfig,
    Route,
    StoreConfig,
    SwitchConfig,
)
from symphony.config.security import api_config, check_metrics_listen
from symphony.model.params import (
    PARAM_NAMES,
    SHIPPED_POLICY,
    ParamError,
    QueueParams,
    check_overrides,
)
from symphony.p4names import ACK_CLASS
from symphony.sizes import (
    BMV2_ACK_PRIORITY,
    BMV2_PRIORITY_QUEUES_MAX,
    BMV2_PRIORITY_QUEUES_MIN,
    NAME_RE,
    PORT_MAX,
    QUEUE_DEPTH_LIMIT,
    ROUTE_TABLE_SIZE,
    TARGETS,
)


def load(path: str | Path) -> Config:
    """Read and check a config file; raise ConfigError naming the bad field."""
    path = Path(path)
    return parse(read_toml(path), base_dir=path.parent)


def parse(raw: Mapping[str, Any], base_dir: Path = Path(".")) -> Config:
    """Check a decoded config; relative paths are relative to ``base_dir`` (the file's folder)."""
    r = TableReader(raw, "", base_dir)
    r.only_keys(
        "database",
        "switches",
        "pipelines",
        "defaults",
        "queue_marking",
        "api",
        "metrics",
        "controller",
        "store",
        "links",
        "hosts",
    )
    ctl = r.table("controller")
    ctl.only_keys(
        "reconcile_interval_s",
        "install_timeout_s",
        "telemetry_interval_s",
        "backoff_initial_s",
        "backoff_max_s",
    )
    store_t = r.table("store")
    if "url" in store_t.raw and "database" in r.raw:
        raise ConfigError(
            "store.url", "give either database (SQLite, one controller) or store.url, not both"
        )
    database = r.path("database", required="url" not in store_t.raw)
    qm_defaults = _queue_marking(r.table("queue_marking"), DEFAULT_QUEUE_MARKING)
    pipelines = _pipelines(r.table("pipelines"))
    switches = _switches(r, qm_defaults, pipelines)
    fabric = _topology(r, switches)
    # [defaults] over the shipped policy (model.params.SHIPPED_POLICY)
    defaults = {**SHIPPED_POLICY, **_defaults(r.table("defaults"))}
    api = api_config(r.table("api"))
    store = _store(store_t, api)
    metrics = r.table("metrics")
    metrics.only_keys("listen")
    metrics_listen = check_metrics_listen(metrics.address("listen", "127.0.0.1:9464"), api)
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
        store=store,
        topology=fabric,
    )


def _store(r: TableReader, api: ApiConfig) -> StoreConfig | None:
    r.only_keys("url", "replica", "advertise", "lease_ttl_s")
    if not r.raw:
        return None
    url = r.string("url")
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise ConfigError(
            r.at("url"),
            f"must be a postgresql:// URL, got {url.split('://')[0]!r}:// (the embedded SQLite"
            " store is the top-level `database`)",
        )
    advertise = r.address("advertise", api.listen)
    if split_host_port(advertise)[0].strip("[]") in ("0.0.0.0", "::", ""):
        raise ConfigError(
            r.at("advertise"),
            f"clients cannot reach {advertise}: set the address they use for this replica",
        )
    return StoreConfig(
        url=url,
        replica=r.name("replica", socket.gethostname().split(".")[0] or "replica"),
        advertise=advertise,
        lease_ttl_s=r.number("lease_ttl_s", 3.0, lo=0.5, hi=600),
    )


def _queue_marking(r: TableReader, fallback: Mapping[str, Any]) -> QueueParams:
    k_min = r.integer("k_min", fallback["k_min"], lo=0, hi=QUEUE_DEPTH_LIMIT - 1)
    k_max = r.integer("k_max", fallback["k_max"], lo=0, hi=QUEUE_DEPTH_LIMIT - 1)
    p_max = r.number("p_max", fallback["p_max"], lo=0.0, hi=1.0)
    # The model's rules (it generates the entries): k_min < k_max, depths within 19 bits.
    try:
        return QueueParams(k_min, k_max, p_max).validate()
    except ValueError as exc:
        name, _, reason = str(exc).partition(": ")
        raise ConfigError(r.at(name), reason or str(exc)) from exc


def _pipelines(r: TableReader) -> dict[str, PipelineConfig]:
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
    r: TableReader, qm_defaults: QueueParams, pipelines: Mapping[str, PipelineConfig]
) -> tuple[SwitchConfig, ...]:
    items = r.array("switches", required=True)
    if not items:
        raise ConfigError("switches", "at least one switch is required")
    seen_names: set[str] = set()
    seen_targets: dict[tuple[str, int], str] = {}
    out = []
    for sw in items:
        for top in ("links", "hosts"):
            if top in sw.raw:
                raise ConfigError(
                    sw.at(top),
                    f"{top} is a top-level key: TOML put it in this switch's table because it"
                    " follows [[switches]]; move it above the first [table] or write"
                    f" [[{top}]] tables",
                )
        sw.only_keys(
            "name",
            "address",
            "device_id",
            "target",
            "thrift_port",
            "thrift_host",
            "ports",
            "routes",
            "ack_priority",
            "priority_queues",
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
        ack_priority, priority_queues = _ack_priority(sw, target, pipelines[target])
        ports: list[PortConfig] = []
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
        for idx, pc in enumerate(ports):
            if pc.peer is not None and pc.peer not in port_numbers:
                raise ConfigError(
                    f"{sw.prefix}.ports[{idx}].peer", f"port {pc.peer} is not in ports"
                )
        routes: list[Route] = []
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
                ack_priority=ack_priority,
                priority_queues=priority_queues,
            )
        )
    return tuple(out)


def _ack_priority(
    sw: TableReader, target: str, pipeline: PipelineConfig
) -> tuple[bool, int | None]:
    """A switch's `ack_priority` and `priority_queues` (docs/ack_priority.md), refused where the
    switch could not serve the class: a program without the `ack_class` table, or a bmv2 whose
    priority queues (as the config declares them) do not include the class's: bmv2 drops a frame
    whose priority is out of range, so the class would lose every ACK instead of speeding it."""
    on = sw.boolean("ack_priority", False)
    queues: int | None = None
    if target == "bmv2":
        queues = sw.integer("priority_queues", 1, lo=1, hi=BMV2_PRIORITY_QUEUES_MAX)
    elif "priority_queues" in sw.raw:
        raise ConfigError(
            sw.at("priority_queues"),
            f"priority_queues is bmv2's (simple_switch --priority-queues); a {target} switch's"
            " queues are its traffic manager's (docs/ack_priority.md)",
        )
    if not on:
        return False, queues
    if queues is not None and queues < BMV2_PRIORITY_QUEUES_MIN:
        raise ConfigError(
            sw.at("ack_priority"),
            f"bmv2 serves the ACK class from priority queue {BMV2_ACK_PRIORITY}, which exists"
            f" only when simple_switch runs with --priority-queues {BMV2_PRIORITY_QUEUES_MIN} or"
            f" more (it drops frames of a priority it does not have); priority_queues is"
            f" {queues}: start bmv2 with --priority-queues {BMV2_PRIORITY_QUEUES_MIN}"
            f" (bmv2_env/start.sh does) and set priority_queues = {BMV2_PRIORITY_QUEUES_MIN}",
        )
    if not _declares_table(pipeline.p4info, ACK_CLASS):
        raise ConfigError(
            sw.at("ack_priority"),
            f"the {target} program ({pipeline.p4info}) has no table {ACK_CLASS}: it cannot put"
            " ACKs in a priority queue; build one that has it (make build, make tofino2) or set"
            " ack_priority = false",
        )
    return True, queues


def _declares_table(p4info: Path, table: str) -> bool:
    """Whether a P4Info file (text or binary protobuf) declares `table`."""
    from finsy.proto.p4.config.v1 import p4info_pb2
    from google.protobuf import message, text_format

    data = p4info.read_bytes()
    info = p4info_pb2.P4Info()
    try:
        text_format.Parse(data.decode(), info)
    except (UnicodeDecodeError, text_format.ParseError):
        try:
            info.ParseFromString(data)
        except message.DecodeError:
            return False
    return any(t.preamble.name == table for t in info.tables)


def _topology(r: TableReader, switches: tuple[SwitchConfig, ...]) -> topology.Topology | None:
    """[[links]] and [[hosts]]: the fabric, checked (config/topology.py); None when neither is
    given (every switch routes by its explicit routes only)."""
    if "links" not in r.raw and "hosts" not in r.raw:
        _check_route_count(switches, {})
        return None
    links = []
    for lk in r.array("links"):
        lk.only_keys("a", "b")
        links.append(topology.Link(_port_ref(lk, "a"), _port_ref(lk, "b")))
    hosts = []
    for h in r.array("hosts"):
        h.only_keys("name", "address", "switch", "port")
        name = h.name("name")
        try:
            unicast_ipv4(name)
        except ValueError:
            pass
        else:
            raise ConfigError(h.at("name"), f"{name!r} is an IPv4 address; a host name is not")
        try:
            address = unicast_ipv4(h.string("address"))
        except ValueError as exc:
            raise ConfigError(h.at("address"), str(exc)) from None
        hosts.append(
            topology.Host(name, address, h.name("switch"), h.integer("port", lo=0, hi=PORT_MAX))
        )
    fabric = topology.Topology(tuple(sw.name for sw in switches), tuple(links), tuple(hosts))
    topology.check(fabric, {sw.name: frozenset(p.port for p in sw.ports) for sw in switches})
    fibs = topology.routes_for(fabric)
    for i, sw in enumerate(switches):
        derived = {nh.prefix: nh for nh in fibs[sw.name]}
        for j, rt in enumerate(sw.routes):
            if rt.prefix in derived:
                host = fabric.host(str(rt.prefix.network_address))
                raise ConfigError(
                    f"switches[{i}].routes[{j}].prefix",
                    f"{rt.prefix} is host {host.name if host else '?'}'s route, derived from the"
                    " topology; remove it here",
                )
    _check_route_count(switches, {name: len(fib) for name, fib in fibs.items()})
    return fabric


def _check_route_count(switches: tuple[SwitchConfig, ...], derived: Mapping[str, int]) -> None:
    for i, sw in enumerate(switches):
        n = len(sw.routes) + derived.get(sw.name, 0)
        if n > ROUTE_TABLE_SIZE:
            what = f"{len(sw.routes)} explicit + {derived.get(sw.name, 0)} host routes"
            raise ConfigError(
                f"switches[{i}].routes",
                f"{sw.name} needs {n} routes ({what}), more than forward.ipv4_lpm's"
                f" {ROUTE_TABLE_SIZE} entries",
            )


def _port_ref(r: TableReader, key: str) -> topology.Port:
    """``"switch:port"``, e.g. ``"leaf1:2"``."""
    text = r.string(key)
    name, sep, port = text.rpartition(":")
    if not sep or not NAME_RE.match(name) or not port.isascii() or not port.isdigit():
        raise ConfigError(r.at(key), f'{text!r} is not switch:port (e.g. "leaf1:2")')
    if int(port) > PORT_MAX:
        raise ConfigError(r.at(key), f"port {port} is not in 0..{PORT_MAX}")
    return topology.Port(name, int(port))


def _defaults(r: TableReader) -> dict[str, Any]:
    r.only_keys(*PARAM_NAMES)
    out = dict(r.raw)
    # The model's own check names the field; prefix it with the section.
    try:
        check_overrides(out)
    except ParamError as exc:
        raise ConfigError(f"defaults.{exc.field}", exc.reason) from exc
    return out
