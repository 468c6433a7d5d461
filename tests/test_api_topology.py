"""A job's switches from its hosts, with a topology in the config: the API (in-process gRPC
server, manager, SQLite, no switches), the client library, symphonyctl and the Slurm hooks."""

from __future__ import annotations

import grpc
import pytest
from test_api_service import Server
from test_topology import leaf_spine
from test_topology import parse as parse_topology

from symphony import cli, p4names, slurm
from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.client import ApiError, Client
from symphony.switch import desired
from symphony.switch.session import SessionStatus
from symphony_tools.ports import free_port

FABRIC = ("leaf1", "leaf2", "leaf3", "spine1", "spine2")


@pytest.fixture
def srv(tmp_path):
    raw = leaf_spine(leaves=3)  # h10, h11 on leaf1 (10.0.1.1-2), h20, h21 on leaf2, ...
    raw["api"] = {"listen": f"127.0.0.1:{free_port()}"}
    s = Server(parse_topology(tmp_path, raw))
    yield s
    s.close()


@pytest.fixture
def stub(srv):
    channel = grpc.insecure_channel(srv.cfg.api.listen)
    yield pb_grpc.JobServiceStub(channel)
    channel.close()


def alloc(stub, **kw):
    req = dict(request_key=kw.get("name", "j"), name="j", mode="tag")
    req.update(kw)
    return stub.Allocate(pb.AllocateRequest(**req), timeout=10)


def test_tag_job_by_host_names_gets_every_switch_between_them(stub, srv):
    r = alloc(stub, hosts=["h10", "h30"])
    assert list(r.job.switches) == ["leaf1", "leaf3", "spine1", "spine2"]
    # The job keeps its members as addresses; a tag job installs no address classifier.
    assert list(r.job.hosts) == ["10.0.1.1", "10.0.3.1"]
    assert [s.switch for s in r.switches] == list(r.job.switches)
    job = srv.store.get(r.job.job_id)
    tables = {s.table for s in desired.job_entries(job, {})}
    assert p4names.JOB_BY_SRC not in tables and p4names.JOB_BY_TAG in tables


def test_hosts_on_one_leaf_need_that_leaf_only(stub):
    assert list(alloc(stub, hosts=["h10", "10.0.1.2"]).job.switches) == ["leaf1"]
    assert list(alloc(stub, name="one", hosts=["h21"]).job.switches) == ["leaf2"]


def test_hosts_mode_by_names_classifies_by_their_addresses(stub, srv):
    r = alloc(stub, mode="hosts", hosts=["h20", "h11"])
    assert list(r.job.hosts) == ["10.0.2.1", "10.0.1.2"]
    assert list(r.job.switches) == ["leaf1", "leaf2", "spine1", "spine2"]
    job = srv.store.get(r.job.job_id)
    srcs = [s.match["src_addr"] for s in desired.job_entries(job, {}) if "src_addr" in s.match]
    assert srcs == [0x0A000201, 0x0A000102]
    # Another hosts job on the same address clashes, whichever way it names it.
    with pytest.raises(grpc.RpcError) as err:
        alloc(stub, name="k", mode="hosts", hosts=["10.0.2.1"])
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_a_retry_naming_hosts_by_address_is_the_same_request(stub):
    first = alloc(stub, hosts=["h10", "h20"])
    again = alloc(stub, hosts=["10.0.2.1", "10.0.1.1"])
    assert not again.created and again.job.job_id == first.job.job_id


def test_an_explicit_switch_list_still_works(stub):
    r = alloc(stub, hosts=["h10", "h30"], switches=["spine2"])
    assert list(r.job.switches) == ["spine2"]
    # hosts mode with explicit switches: an address outside the topology is accepted
    r = alloc(stub, name="ext", mode="hosts", hosts=["192.168.7.7"], switches=["leaf1"])
    assert list(r.job.hosts) == ["192.168.7.7"]
    r = alloc(stub, name="bare", switches=["leaf2"])  # a tag job without hosts, as before
    assert list(r.job.switches) == ["leaf2"] and not r.job.hosts


INVALID = [
    ({"hosts": ["h10", "gpu99"]}, "hosts[1]", "unknown host 'gpu99'"),
    ({"hosts": ["h10", "192.168.7.7"]}, "hosts[1]", "192.168.7.7 is not a host of the topology"),
    ({"hosts": ["h10", "10.0.1.1"]}, "hosts[1]", "10.0.1.1 is listed twice"),
    ({"hosts": ["h10", "h10"]}, "hosts[1]", "h10 (10.0.1.1) is listed twice"),
    ({"hosts": ["10.0.1.01"]}, "hosts[0]", "not an IPv4 address"),
    ({}, "switches", "a job needs its switches, or its hosts"),
    ({"mode": "hosts"}, "hosts", "needs at least one"),
    ({"hosts": ["h10"], "switches": ["leaf9"]}, "switches[0]", "unknown switch"),
]


@pytest.mark.parametrize(
    ("fields", "field", "words"), INVALID, ids=[i[1] + ":" + i[2] for i in INVALID]
)
def test_bad_hosts_are_invalid_argument_and_change_nothing(stub, srv, fields, field, words):
    with pytest.raises(grpc.RpcError) as err:
        alloc(stub, **fields)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details().startswith(f"{field}: ")
    assert words in err.value.details()
    assert srv.store.list(include_released=True) == []


def test_client_allocates_by_hosts_without_switches(srv):
    with Client(srv.cfg.api.listen, timeout_s=10) as c:
        r = c.allocate("c1", "by-hosts", hosts=["h10", "h21"])
        assert list(r.job.switches) == ["leaf1", "leaf2", "spine1", "spine2"]
        with pytest.raises(ApiError) as err:
            c.allocate("c2", "nope", hosts=["nohost"])
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_symphonyctl_allocate_by_hosts(srv, capsys):
    base = ["--api", srv.cfg.api.listen]
    assert cli.main([*base, "job", "allocate", "--name", "ring", "--hosts", "h10,h30"]) == 0
    out = capsys.readouterr().out
    assert "switches: leaf1, leaf3, spine1, spine2" in out and "mode tag" in out
    argv = [*base, "job", "allocate", "--name", "r2", "--mode", "hosts", "--host", "h20"]
    assert cli.main([*argv, "--host", "10.0.2.2"]) == 0
    assert "hosts:    10.0.2.1, 10.0.2.2" in capsys.readouterr().out
    assert cli.main([*base, "job", "allocate", "--name", "r3", "--switches", "leaf1,spine1"]) == 0
    assert "switches: leaf1, spine1" in capsys.readouterr().out


def test_slurm_prolog_sends_hosts_only_without_a_switch_table(srv, tmp_path, capsys):
    conf = tmp_path / "slurm.toml"
    conf.write_text(f'api = "{srv.cfg.api.listen}"\nstate_dir = "state"\n[hosts]\ngpu1 = "h10"\n')
    cfg = slurm.load_config(conf)
    # gpu1 through [hosts]; h30 is its own name in the controller's topology
    assert slurm.path_of(cfg, ["gpu1", "h30"]) == ([], ["h10", "h30"])
    env = {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "gpu1,h30"}
    assert slurm.prolog(cfg, env) == 0
    assert "on leaf1, leaf3, spine1, spine2" in capsys.readouterr().err
    job = srv.store.get_by_name("slurm-77")
    assert job.switches == ("leaf1", "leaf3", "spine1", "spine2") and job.mode == "tag"


class ReadySession:
    """What the API reads of a session: its status."""

    def __init__(self, name: str) -> None:
        self.is_ready = True
        self.status = SessionStatus(
            name, "127.0.0.1:9561", "bmv2", state="ready", entries=7000, routes=6, ecmp_groups=1
        )


def test_switch_status_shows_every_switch_with_its_neighbours(srv, stub, capsys):
    srv.manager.sessions["leaf1"] = ReadySession("leaf1")
    got = {s.name: s for s in stub.SwitchStatus(pb.SwitchStatusRequest(), timeout=10).switches}
    assert list(got) == list(FABRIC)
    leaf1 = got["leaf1"]
    assert (leaf1.state, leaf1.ports, leaf1.routes, leaf1.ecmp_groups) == ("ready", 4, 6, 1)
    assert list(leaf1.neighbours) == ["0=h10", "1=h11", "2=spine1:0", "3=spine2:0"]
    spine2 = got["spine2"]
    assert spine2.state == "unmanaged" and spine2.last_error == "no session on this controller"
    assert list(spine2.neighbours) == ["0=leaf1:3", "1=leaf2:3", "2=leaf3:3"]
    assert cli.main(["--api", srv.cfg.api.listen, "switch", "status"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["leaf1", "bmv2", "ready"]
    assert lines[2] == "  4 ports, 6 routes, 1 ECMP group; 0=h10 1=h11 2=spine1:0 3=spine2:0"
    assert lines[-1] == "  3 ports; 0=leaf1:3 1=leaf2:3 2=leaf3:3"
