"""symphony.client against the real gRPC server (manager + SQLite, no switches): every method,
sync and asyncio, retries that stay idempotent on the request key, token and mTLS."""

from __future__ import annotations

import asyncio
import subprocess

import grpc
import pytest
from test_api_service import Server, free_port, make_config

from symphony.api import server as api_server
from symphony.client import NO_RETRY, ApiError, AsyncClient, Client, Credentials, Retry

FAST = Retry(attempts=4, first_delay_s=0.01, max_delay_s=0.05)


@pytest.fixture
def srv(tmp_path):
    s = Server(make_config(tmp_path))
    yield s
    s.close()


def test_every_method_sync(srv):
    with Client(srv.cfg.api.listen, timeout_s=10) as c:
        prm = {"k": 0.05, "n_sample": 8}
        r = c.allocate("k1", "bert", switches=["s1"], params=prm)
        assert r.created and r.job.job_id > 0
        again = c.allocate("k1", "bert", switches=["s1"], params=prm)
        assert not again.created and again.job.job_id == r.job.job_id
        with pytest.raises(ApiError) as err:  # the same key for a different request
            c.allocate("k1", "bert", switches=["s1"])
        assert err.value.code == grpc.StatusCode.ALREADY_EXISTS
        assert [j.name for j in c.list()] == ["bert"]
        got = c.get("bert")
        assert got.job.job_id == r.job.job_id and got.live[0].switch == "s1"
        assert got.job.params.k == pytest.approx(0.05) and got.job.params.n_sample == 8
        assert c.set_params({"tau": 0.25}, job="bert").job.params.tau == 0.25
        # Every configured switch; this server runs no switch sessions.
        status = c.switch_status()
        assert [(s.name, s.state) for s in status] == [("s1", "unmanaged"), ("s2", "unmanaged")]
        assert c.release(r.job.job_id).job.state in ("releasing", "released")
        with pytest.raises(ApiError) as err:
            c.get("nope")
        assert err.value.code == grpc.StatusCode.NOT_FOUND
        assert c.release("nope", missing_ok=True).job.state == "released"


def test_bad_input_is_refused_before_sending(srv):
    with Client(srv.cfg.api.listen) as c:
        with pytest.raises(ValueError, match="request_key"):
            c.allocate("", "bert", switches=["s1"])
        with pytest.raises(ValueError, match="unknown parameter"):
            c.set_params({"kk": 1})
        with pytest.raises(ApiError) as err:
            c.allocate("k2", "bad name", switches=["s1"])
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert c.list() == []


def test_every_method_async(srv):
    async def run() -> None:
        async with AsyncClient(srv.cfg.api.listen, timeout_s=10) as c:
            r = await c.allocate("k1", "gpt", switches=["s1", "s2"], mode="tag")
            assert (await c.allocate("k1", "gpt", switches=["s1", "s2"])).created is False
            assert [j.job_id for j in await c.list()] == [r.job.job_id]
            assert [s.switch for s in (await c.get("gpt")).live] == ["s1", "s2"]
            reply = await c.set_params({"alpha_max": 4})
            assert getattr(reply, "global").alpha_max == 4
            assert [s.state for s in await c.switch_status()] == ["unmanaged"] * 2
            assert (await c.release("gpt")).job.state == "releasing"  # its switches are down
            assert (await c.release("gone", missing_ok=True)).job.state == "released"
            with pytest.raises(ApiError):
                await c.release("gone")

    asyncio.run(run())


class LostReplies(grpc.aio.ServerInterceptor):
    """Let the first `n` calls run on the server, then drop their replies as UNAVAILABLE: what a
    client sees when the network fails after the controller committed."""

    def __init__(self, n: int) -> None:
        self.left = n

    async def intercept_service(self, continuation, details):
        handler = await continuation(details)
        inner = handler.unary_unary

        async def lossy(request, context):
            reply = await inner(request, context)
            if self.left > 0:
                self.left -= 1
                await context.abort(grpc.StatusCode.UNAVAILABLE, "reply lost")
            return reply

        return grpc.unary_unary_rpc_method_handler(
            lossy, handler.request_deserializer, handler.response_serializer
        )


@pytest.fixture
def lossy_srv(tmp_path, monkeypatch):
    lost = LostReplies(2)
    real = api_server.grpc.aio.server
    monkeypatch.setattr(
        api_server.grpc.aio, "server", lambda interceptors=(): real(interceptors=[lost])
    )
    s = Server(make_config(tmp_path))
    yield s, lost
    s.close()


def test_allocate_retried_after_lost_replies_is_one_job(lossy_srv):
    srv, lost = lossy_srv
    with Client(srv.cfg.api.listen, retry=FAST) as c:
        r = c.allocate("slurm:7", "slurm-7", switches=["s1"])
        assert lost.left == 0  # two replies were lost, the third attempt got the answer
        assert r.created is False  # the first attempt had created it
        assert [(j.name, j.job_id) for j in c.list()] == [("slurm-7", r.job.job_id)]


def test_release_retried_after_a_lost_reply(lossy_srv):
    srv, lost = lossy_srv
    with Client(srv.cfg.api.listen, retry=FAST) as c:
        lost.left = 0
        c.allocate("k", "j", switches=["s1"])
        lost.left = 1
        # The release landed, its reply was lost; the retry finds the job releasing (its switch
        # is down here) and releasing it again changes nothing.
        r = c.release("j")
        assert lost.left == 0 and r.job.state == "releasing"
        assert [j.state for j in c.list()] == ["releasing"]


def test_no_retry_and_unreachable():
    port = free_port()  # nothing listens there
    with Client(f"127.0.0.1:{port}", retry=NO_RETRY, timeout_s=2) as c:
        with pytest.raises(ApiError) as err:
            c.list()
        assert err.value.code == grpc.StatusCode.UNAVAILABLE


def test_token(tmp_path):
    (tmp_path / "tok").write_text("sesame\n")
    cfg = make_config(tmp_path, api={"listen": f"127.0.0.1:{free_port()}", "token_file": "tok"})
    srv = Server(cfg)
    try:
        with Client(cfg.api.listen) as c:
            with pytest.raises(ApiError) as err:
                c.list()  # not retried: UNAUTHENTICATED is not transient
            assert err.value.code == grpc.StatusCode.UNAUTHENTICATED
        with Client(cfg.api.listen, Credentials.from_files(tmp_path / "tok")) as c:
            assert c.list() == []
    finally:
        srv.close()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by it."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=ca",
        "-keyout",
        str(d / "ca.key"),
        "-out",
        str(d / "ca.crt"),
    )
    exts = {"server": "subjectAltName=IP:127.0.0.1", "client": "extendedKeyUsage=clientAuth"}
    for name, ext in exts.items():
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN={name}",
            "-keyout",
            str(d / f"{name}.key"),
            "-out",
            str(d / f"{name}.csr"),
        )
        (d / f"{name}.ext").write_text(ext + "\n")
        _openssl(
            "x509",
            "-req",
            "-in",
            str(d / f"{name}.csr"),
            "-CA",
            str(d / "ca.crt"),
            "-CAkey",
            str(d / "ca.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            str(d / f"{name}.ext"),
            "-out",
            str(d / f"{name}.crt"),
        )


def test_mtls(tmp_path):
    make_pki(tmp_path)
    api = {
        "listen": f"127.0.0.1:{free_port()}",
        "tls_cert": "server.crt",
        "tls_key": "server.key",
        "tls_client_ca": "ca.crt",
    }
    srv = Server(make_config(tmp_path, api=api))
    try:
        good = Credentials.from_files(
            tls_ca=tmp_path / "ca.crt",
            tls_cert=tmp_path / "client.crt",
            tls_key=tmp_path / "client.key",
        )
        with Client(srv.cfg.api.listen, good, timeout_s=10) as c:
            assert c.allocate("k", "tls-job", switches=["s1"]).created
        # Without a client certificate the TLS handshake is refused.
        no_cert = Credentials.from_files(tls_ca=tmp_path / "ca.crt")
        with Client(srv.cfg.api.listen, no_cert, retry=NO_RETRY, timeout_s=10) as c:
            with pytest.raises(ApiError) as err:
                c.list()
            assert err.value.code == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(ValueError, match="both"):
            Credentials.from_files(tls_ca=tmp_path / "ca.crt", tls_cert=tmp_path / "client.crt")
    finally:
        srv.close()
