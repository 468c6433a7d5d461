"""The per-job parameter declaration (model.params.JobParams) against everything derived from it
and against the API's Params message, which keeps its own fields (the proto is a published
interface) and must agree with the declaration field for field."""

from __future__ import annotations

from dataclasses import fields

from google.protobuf.descriptor import FieldDescriptor

from symphony import cli
from symphony.api import convert
from symphony.api import symphony_pb2 as pb
from symphony.config import parse
from symphony.model.params import PARAM_KINDS, PARAM_NAMES, PARAM_TYPES, JobParams

PROTO_TYPE = {
    float: FieldDescriptor.TYPE_DOUBLE,
    int: FieldDescriptor.TYPE_INT64,
    str: FieldDescriptor.TYPE_STRING,
}


def test_names_are_the_dataclass_fields_in_order() -> None:
    assert tuple(f.name for f in fields(JobParams)) == PARAM_NAMES
    assert set(PARAM_TYPES) == set(PARAM_KINDS) == set(PARAM_NAMES)


def test_proto_params_has_one_optional_field_per_parameter_of_its_kind() -> None:
    proto = pb.Params.DESCRIPTOR.fields
    assert tuple(f.name for f in proto) == PARAM_NAMES
    for f in proto:
        assert f.has_presence, f"{f.name}: must be optional (unset = not overridden)"
        assert f.type == PROTO_TYPE[PARAM_KINDS[f.name]], f.name


def test_api_conversion_round_trips_every_parameter() -> None:
    values = JobParams(k=0.5, n_warmup=3, psn_mode="absolute").to_dict()
    assert convert.params_from_pb(convert.params_to_pb(values)) == values


def test_config_defaults_accept_every_parameter(tmp_path) -> None:
    raw = {
        "database": str(tmp_path / "j.db"),
        "switches": [{"name": "s1", "address": "127.0.0.1:9559", "device_id": 0}],
        "defaults": JobParams().to_dict(),
    }
    raw["switches"][0]["target"] = "bmv2"
    (tmp_path / "p4info").write_text("")
    (tmp_path / "json").write_text("")
    raw["pipelines"] = {"bmv2": {"p4info": "p4info", "device_config": "json"}}
    assert parse(raw, base_dir=tmp_path).defaults == JobParams().to_dict()


def test_cli_parses_every_parameter() -> None:
    for name, value in JobParams().to_dict().items():
        assert cli.parse_param(f"{name}={value}") == (name, value)
