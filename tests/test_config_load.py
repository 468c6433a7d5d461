"""Config loading: a good file parses; every bad one is refused naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from symphony import config
from symphony.config import ConfigError
from symphony.model.params import QueueParams


def write_example(tmp_path: Path, edit=None) -> Path:
    """The shipped example config (examples/bmv2.toml, with its pipeline files present), as
    tmp_path/examples/controller.toml, optionally edited."""
    (tmp_path / "build/bmv2").mkdir(parents=True)
    (tmp_path / "build/bmv2/symphony.p4info.txtpb").write_text("")
    (tmp_path / "build/bmv2/symphony.json").write_text("{}")
    (tmp_path / "examples").mkdir()
    raw = tomllib.loads(config.example())
    if edit is not None:
        edit(raw)
    path = tmp_path / "examples" / "controller.toml"
    path.write_text(_dump(raw))
    return path


def test_example_is_the_file_in_examples():
    assert config.example() == (Path(__file__).parents[1] / "examples/bmv2.toml").read_text()


def _dump(value, prefix=""):
    """Minimal TOML writer (tables, arrays of tables, inline values) for the tests."""
    lines, tables = [], []
    for k, v in value.items():
        if isinstance(v, dict) or (k == "switches" and isinstance(v, list) and v):
            tables.append((k, v))
        else:
            lines.append(f"{k} = {_inline(v)}")
    out = "\n".join(lines) + "\n"
    for k, v in tables:
        name = f"{prefix}{k}"
        if isinstance(v, list):
            for item in v:
                out += f"\n[[{name}]]\n" + _dump(item, name + ".")
        else:
            out += f"\n[{name}]\n" + _dump(v, name + ".")
    return out


def _inline(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_inline(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _override_port_3(raw):
    raw["switches"][0]["ports"][3].update(k_min=20, k_max=80)


def test_example_config_loads(tmp_path):
    cfg = config.load(write_example(tmp_path, _override_port_3))
    assert cfg.switch_names == ("s1",)
    s1 = cfg.switch("s1")
    assert (s1.device_id, s1.target, s1.thrift_port, s1.thrift_host) == (
        0,
        "bmv2",
        9090,
        "127.0.0.1",
    )
    assert [str(r.prefix) for r in s1.routes] == [f"10.0.{i}.0/24" for i in range(4)]
    assert [(p.port, p.peer) for p in s1.ports] == [(0, 1), (1, 0), (2, None), (3, None)]
    # Port 3 overrides k_min/k_max and inherits p_max from [queue_marking].
    p3 = s1.ports[3]
    assert (p3.marking.k_min, p3.marking.k_max, p3.marking.p_max) == (20, 80, 0.2)
    assert s1.ports[0].marking == QueueParams(50, 100, 0.2)
    assert cfg.database == tmp_path / "examples/../run/symphony.db"
    assert cfg.api.is_loopback
    # [defaults] over the shipped policy
    assert cfg.defaults == {"k": 0.001, "gate_depth": 8, "tau": 0.25, "t_win_us": 100.0}


def sw(raw):
    return raw["switches"][0]


BAD = [
    ("database", lambda r: r.pop("database"), "is required"),
    ("colour", lambda r: r.__setitem__("colour", 1), "unknown key"),
    ("switches", lambda r: r.__setitem__("switches", []), "at least one switch"),
    ("switches[0].address", lambda r: sw(r).__setitem__("address", "nohost"), "host:port"),
    ("switches[0].address", lambda r: sw(r).__setitem__("address", "h:99999"), "TCP port"),
    ("switches[0].name", lambda r: sw(r).__setitem__("name", "bad name!"), "is not a name"),
    (
        "switches[1].name",
        lambda r: r["switches"].append(dict(sw(r), address="127.0.0.1:9560")),
        "duplicate switch name",
    ),
    (
        "switches[1].address",
        lambda r: r["switches"].append(dict(sw(r), name="s2")),
        "is already switch",
    ),
    ("switches[0].target", lambda r: sw(r).__setitem__("target", "tofino9"), "must be one of"),
    ("switches[0].target", lambda r: sw(r).__setitem__("target", "tofino2"), "no [pipelines"),
    ("switches[0].device_id", lambda r: sw(r).__setitem__("device_id", -1), "must be in"),
    ("switches[0].device_id", lambda r: sw(r).__setitem__("device_id", "0"), "integer"),
    (
        "switches[0].ports[1].port",
        lambda r: sw(r)["ports"][1].__setitem__("port", 0),
        "duplicate port",
    ),
    (
        "switches[0].ports[0].peer",
        lambda r: sw(r)["ports"][0].__setitem__("peer", 7),
        "not in ports",
    ),
    ("switches[0].ports[1].k_max", lambda r: sw(r)["ports"][1].__setitem__("k_max", 10), "k_max"),
    (
        "switches[0].ports[0].p_max",
        lambda r: sw(r)["ports"][0].__setitem__("p_max", 1.5),
        "must be in",
    ),
    (
        "switches[0].routes[0].prefix",
        lambda r: sw(r)["routes"][0].__setitem__("prefix", "10.0.1.1/24"),
        "not an IPv4 prefix",
    ),
    (
        "switches[0].routes[1].port",
        lambda r: sw(r)["routes"][1].__setitem__("port", 9),
        "not in ports",
    ),
    (
        "switches[0].routes[1].prefix",
        lambda r: sw(r)["routes"][1].__setitem__("prefix", "10.0.0.0/24"),
        "duplicate route",
    ),
    ("defaults.k", lambda r: r["defaults"].__setitem__("k", -1.0), "k"),
    ("defaults.alpha_max", lambda r: r["defaults"].__setitem__("alpha_max", 999), "alpha_max"),
    ("defaults.bogus", lambda r: r["defaults"].__setitem__("bogus", 1), "unknown key"),
    ("defaults.n_warmup", lambda r: r["defaults"].__setitem__("n_warmup", 1.5), "wrong type"),
    (
        "api.listen",
        lambda r: r["api"].__setitem__("listen", "0.0.0.0:50051"),
        "not a loopback address",
    ),
    (
        "api.token_file",
        lambda r: r["api"].__setitem__("token_file", "missing.token"),
        "does not exist",
    ),
    ("api.tls_key", lambda r: r["api"].__setitem__("tls_cert", "x.pem"), "go together"),
    (
        "pipelines.bmv2.p4info",
        lambda r: r["pipelines"]["bmv2"].__setitem__("p4info", "no.txt"),
        "does not exist",
    ),
    (
        "controller.backoff_max_s",
        lambda r: r["controller"].__setitem__("backoff_max_s", 0.01),
        "must be in",
    ),
    (
        "queue_marking.k_max",
        lambda r: r["queue_marking"].__setitem__("k_max", 1 << 20),
        "must be in",
    ),
]


@pytest.mark.parametrize(("field", "edit", "words"), BAD, ids=[b[0] + ":" + b[2] for b in BAD])
def test_bad_config_names_the_field(tmp_path, field, edit, words):
    path = write_example(tmp_path, edit)
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert err.value.field == field
    assert words in str(err.value)
    assert str(err.value).startswith(f"config error: {field}: ")


def test_non_loopback_listen_accepted_with_token(tmp_path):
    (tmp_path / "api.token").write_text("s3cret\n")

    def edit(r):
        r["api"]["listen"] = "0.0.0.0:50051"
        r["api"]["token_file"] = "../api.token"

    cfg = config.load(write_example(tmp_path, edit))
    assert not cfg.api.is_loopback
    assert cfg.api.token_file == tmp_path / "examples/../api.token"


def test_empty_token_file_refused(tmp_path):
    (tmp_path / "api.token").write_text("\n")

    def edit(r):
        r["api"]["token_file"] = "../api.token"

    with pytest.raises(ConfigError, match=r"api\.token_file: .* is empty"):
        config.load(write_example(tmp_path, edit))


def test_not_toml(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[[[")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config.load(p)


def test_daemon_stops_on_bad_config_with_field_name(tmp_path, capsys):
    from symphony import daemon

    path = write_example(tmp_path, lambda r: sw(r).__setitem__("target", "tofino9"))
    assert daemon.main(["--config", str(path)]) == 2
    assert "switches[0].target" in capsys.readouterr().err


def test_daemon_check_ok(tmp_path, capsys):
    from symphony import daemon

    assert daemon.main(["--config", str(write_example(tmp_path)), "--check"]) == 0
    assert "config OK" in capsys.readouterr().out
