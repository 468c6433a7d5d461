"""Security end to end: mTLS on the real daemon and symphonyctl, the API token on every method,
and the token on /metrics (docs/robustness.md).

Certificates are made per run with the openssl command: a CA that signs the server's and a
client's certificate, and a second CA with its own client certificate (the wrong one).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from test_api_service import Server, free_port, make_config
from test_jobs_crash import start_daemon, write_config

from symphony.api import symphony_pb2 as pb
from symphony.api import symphony_pb2_grpc as pb_grpc
from symphony.config import ConfigError, parse

OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="openssl command not found")
TOKEN = "open-sesame-7f3a"
# One request per method: a token check runs before any of them is looked at.
METHODS = {
    "Allocate": pb.AllocateRequest(request_key="k", name="n", mode="tag", switches=["s1"]),
    "Release": pb.JobRef(job="n"),
    "List": pb.ListRequest(),
    "Get": pb.JobRef(job="n"),
    "SetParams": pb.SetParamsRequest(params=pb.Params(tau=0.5)),
    "SwitchStatus": pb.SwitchStatusRequest(),
}


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d: Path, name: str) -> None:
    openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN={name}",
        cwd=d,
    )  # fmt: skip


def make_cert(d: Path, name: str, ca: str, san: str | None = None) -> None:
    openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
        cwd=d,
    )  # fmt: skip
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "extendedKeyUsage=clientAuth\n")
    openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
        "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", ext.name,
        cwd=d,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pki")
    make_ca(d, "ca")
    make_ca(d, "wrong-ca")
    make_cert(d, "server", "ca", san="IP:127.0.0.1,DNS:localhost")
    make_cert(d, "client", "ca")
    make_cert(d, "stranger", "wrong-ca")
    return d


def write_daemon_config(tmp: Path, pki: Path, api_port: int, metrics_port: int) -> Path:
    """test_jobs_crash's daemon config (a switch that never answers) with mTLS and a token."""
    cfg = write_config(tmp, api_port, metrics_port)
    (tmp / "token").write_text(TOKEN + "\n")
    listen = f'[api]\nlisten = "127.0.0.1:{api_port}"\n'
    secured = (
        f'{listen}token_file = "token"\ntls_cert = "{pki}/server.pem"\n'
        f'tls_key = "{pki}/server.key"\ntls_client_ca = "{pki}/ca.pem"\n'
    )
    assert listen in cfg.read_text()
    cfg.write_text(cfg.read_text().replace(listen, secured))
    return cfg


def ctl(api: str, pki: Path, *args: str, ca="ca", cert="client", token=True):
    """symphonyctl against the daemon; ca/cert None leave the option out."""
    cmd = [sys.executable, "-m", "symphony.cli", "--api", api, "--json", "--timeout", "5"]
    if ca:
        cmd += ["--tls-ca", str(pki / f"{ca}.pem")]
    if cert:
        cmd += ["--tls-cert", str(pki / f"{cert}.pem"), "--tls-key", str(pki / f"{cert}.key")]
    if token:
        cmd += ["--token-file", str(pki.parent / "token")]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, pki):
    tmp = tmp_path_factory.mktemp("daemon")
    api_port, metrics_port = free_port(), free_port()
    api, metrics = f"127.0.0.1:{api_port}", f"127.0.0.1:{metrics_port}"
    cfg = write_daemon_config(tmp, pki, api_port, metrics_port)
    (pki.parent / "token").write_text(TOKEN + "\n")
    with open(tmp / "daemon.log", "wb") as log:
        proc = start_daemon(cfg, log)
        try:
            for _ in range(200):  # until it answers (a deadline, not a timing assertion)
                if proc.poll() is not None:
                    pytest.fail(f"daemon exited: {(tmp / 'daemon.log').read_text()}")
                if ctl(api, pki, "job", "list").returncode == 0:
                    break
                time.sleep(0.05)
            yield api, metrics
        finally:
            proc.terminate()
            proc.wait(10)


def test_mtls_right_client_works(daemon, pki):
    api, _ = daemon
    out = ctl(api, pki, "job", "allocate", "--name", "secure", "--mode", "tag", "--switch", "s1")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["job"]["name"] == "secure"
    listing = json.loads(ctl(api, pki, "job", "list").stdout)
    assert [j["name"] for j in listing["jobs"]] == ["secure"]


@pytest.mark.parametrize(
    ("ca", "cert", "why"),
    [
        ("ca", None, "no client certificate"),
        ("ca", "stranger", "a client certificate from another CA"),
        ("wrong-ca", "client", "the client does not trust the server's CA"),
        (None, None, "plaintext"),
    ],
)
def test_mtls_refuses(daemon, pki, ca, cert, why):
    api, _ = daemon
    before = json.loads(ctl(api, pki, "job", "list").stdout)
    out = ctl(api, pki, "job", "allocate", "--name", "intruder", "--mode", "tag",
              "--switch", "s1", ca=ca, cert=cert)  # fmt: skip
    assert out.returncode != 0, f"{why}: accepted"
    assert "UNAVAILABLE" in out.stdout + out.stderr, f"{why}: {out.stdout} {out.stderr}"
    assert json.loads(ctl(api, pki, "job", "list").stdout) == before, f"{why}: changed the store"


def test_mtls_without_token_is_unauthenticated(daemon, pki):
    """The right certificate alone is not enough when a token is configured too."""
    api, _ = daemon
    out = ctl(api, pki, "job", "list", token=False)
    assert out.returncode != 0 and "UNAUTHENTICATED" in out.stdout + out.stderr, out


def test_metrics_asks_for_the_token(daemon):
    _, metrics = daemon
    url = f"http://{metrics}/metrics"
    for header in (None, "Bearer wrong", f"Basic {TOKEN}", TOKEN):
        req = urllib.request.Request(url, headers={"Authorization": header} if header else {})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 401, header
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
        assert b"symphony_" in resp.read()


@pytest.fixture
def token_api(tmp_path):
    (tmp_path / "tok").write_text(TOKEN + "\n")
    cfg = make_config(tmp_path, api={"listen": f"127.0.0.1:{free_port()}", "token_file": "tok"})
    srv = Server(cfg)
    channel = grpc.insecure_channel(cfg.api.listen)
    yield pb_grpc.JobServiceStub(channel), srv
    channel.close()
    srv.close()


@pytest.mark.parametrize("method", sorted(METHODS))
def test_token_on_every_method(token_api, method):
    stub, srv = token_api
    call = getattr(stub, method)
    for md in ([], [("authorization", "Bearer wrong")], [("authorization", TOKEN)],
               [("authorization", f"Bearer {TOKEN}x")], [("x-token", TOKEN)]):  # fmt: skip
        with pytest.raises(grpc.RpcError) as err:
            call(METHODS[method], metadata=md, timeout=10)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED, md
    assert srv.store.list(include_released=True) == []
    assert srv.store.global_params() == {}
    # With the token the method runs (and may refuse the request on its merits).
    try:
        call(METHODS[method], metadata=[("authorization", f"Bearer {TOKEN}")], timeout=10)
    except grpc.RpcError as exc:
        assert exc.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT), exc


def test_metrics_off_loopback_needs_the_token(tmp_path):
    (tmp_path / "p4info.txtpb").write_text("")
    (tmp_path / "bmv2.json").write_text("{}")
    (tmp_path / "tok").write_text(TOKEN)
    raw = {
        "database": "jobs.db",
        "pipelines": {"bmv2": {"p4info": "p4info.txtpb", "device_config": "bmv2.json"}},
        "switches": [{"name": "s1", "address": "127.0.0.1:1", "device_id": 0, "target": "bmv2"}],
        "metrics": {"listen": "0.0.0.0:9464"},
    }
    with pytest.raises(ConfigError, match=r"metrics\.listen"):
        parse(raw, base_dir=tmp_path)
    parse({**raw, "api": {"listen": "127.0.0.1:50051", "token_file": "tok"}}, base_dir=tmp_path)
