"""The controller's configuration, as the rest of the controller sees it: frozen dataclasses.

config/load.py fills them from the TOML file, after every check.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from symphony.config.addresses import is_loopback_host, split_host_port
from symphony.config.errors import ConfigError as ConfigError  # re-exported: its old home
from symphony.config.topology import Topology
from symphony.model.params import SHIPPED_POLICY, QueueParams

# The paper's RED/DCQCN marking (its section 4.7), declared once in model/params.py: K_min and
# K_max in the target's depth unit (packets on bmv2), P_max.
DEFAULT_QUEUE_MARKING: dict[str, Any] = asdict(QueueParams())


@dataclass(frozen=True)
class PortConfig:
    port: int
    marking: QueueParams  # the model's type: the entries are generated from it
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
    # The ACK class (docs/ack_priority.md): RoCEv2 ACKs, ATOMIC ACKs and CNPs to a priority egress
    # queue. Off by default: Symphony's evidence was measured with ACKs queued behind data.
    ack_priority: bool = False
    # bmv2 only: simple_switch's --priority-queues (bmv2_env/start.sh: 2), which the controller
    # cannot read from the switch; the ACK class needs more than sizes.BMV2_ACK_PRIORITY.
    priority_queues: int | None = None


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
class StoreConfig:
    """The shared PostgreSQL store of replicated controllers ([store] in the file)."""

    url: str
    # This replica's name (in the lease row, logs and error messages).
    replica: str
    # The API address clients reach this replica at (followers name the leader by it).
    advertise: str
    # How long a lease lasts unrenewed: a paused or cut-off leader is replaced after this.
    lease_ttl_s: float = 3.0


@dataclass(frozen=True)
class Config:
    # The embedded SQLite store (one controller), or None with `store` (replicas on PostgreSQL).
    database: Path | None
    switches: tuple[SwitchConfig, ...]
    pipelines: Mapping[str, PipelineConfig]
    # per-job parameters under every job's own: [defaults] over model.params.SHIPPED_POLICY
    defaults: Mapping[str, Any] = field(default_factory=lambda: dict(SHIPPED_POLICY))
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
    store: StoreConfig | None = None
    # The fabric ([[links]], [[hosts]]): routes and a job's switches are derived from it. None:
    # every switch has its explicit routes only, and a job names its switches.
    topology: Topology | None = None

    @property
    def replicated(self) -> bool:
        return self.store is not None

    def switch(self, name: str) -> SwitchConfig:
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(name)

    @property
    def switch_names(self) -> tuple[str, ...]:
        return tuple(sw.name for sw in self.switches)
