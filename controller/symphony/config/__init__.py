"""The controller's configuration: `load` a TOML file into a checked, frozen `Config`.

- schema.py: the dataclasses the rest of the controller reads;
- reader.py: a generic typed TOML reader whose errors name the field;
- security.py: the API's security policy (who may connect, and how);
- topology.py: the fabric (switches, links, hosts) and what follows from it: every switch's
  routes and ECMP groups, a job's switches, the refusals;
- load.py: the sections of the file, checked field by field;
- example.toml: examples/bmv2.toml (a link), printed by ``symphony-controller --example-config``.
"""

from __future__ import annotations

from importlib import resources

from symphony.config.addresses import is_loopback_host, split_host_port
from symphony.config.load import load, parse
from symphony.config.schema import (
    ApiConfig,
    Config,
    ConfigError,
    PipelineConfig,
    PortConfig,
    Route,
    StoreConfig,
    SwitchConfig,
)
from symphony.config.topology import Topology


def example() -> str:
    """The example config (examples/bmv2.toml): one bmv2 switch from bmv2_env/; its paths are
    relative to the examples/ folder."""
    return resources.files(__name__).joinpath("example.toml").read_text()


__all__ = [
    "ApiConfig",
    "Config",
    "ConfigError",
    "PipelineConfig",
    "PortConfig",
    "Route",
    "StoreConfig",
    "SwitchConfig",
    "Topology",
    "example",
    "is_loopback_host",
    "load",
    "parse",
    "split_host_port",
]
