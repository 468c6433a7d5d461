"""symphony.slurm without Slurm: its config file, a job's path, the request key and that a
broken config or an unreachable controller never fails the Slurm job (exit 0). The hooks in a
real Slurm: tests/integration/test_slurm.py."""

from __future__ import annotations

import pytest

from symphony import slurm
from symphony.config.schema import ConfigError


def write(tmp_path, body: str):
    p = tmp_path / "slurm.toml"
    p.write_text(body)
    return p


def test_config_and_path(tmp_path):
    cfg = slurm.load_config(
        write(
            tmp_path,
            'mode = "hosts"\n[switches]\n"*" = ["leaf1", "spine"]\ngpu02 = ["leaf2", "spine"]\n'
            '[hosts]\ngpu01 = "10.0.0.1"\ngpu02 = "10.0.0.2"\n',
        )
    )
    assert slurm.path_of(cfg, slurm.expand_nodes("gpu[01-02]")) == (
        ["leaf1", "spine", "leaf2"],
        ["10.0.0.1", "10.0.0.2"],
    )
    with pytest.raises(ValueError, match="gpu03"):
        slurm.path_of(cfg, ["gpu03"])


def test_without_switches_the_hosts_go_alone(tmp_path):
    """No [switches]: the controller derives the path from the job's hosts (its topology); a node
    is sent by its [hosts] entry, else by its name."""
    cfg = slurm.load_config(write(tmp_path, '[hosts]\ngpu01 = "10.0.0.1"\n'))
    assert slurm.path_of(cfg, ["gpu01", "gpu02"]) == ([], ["10.0.0.1", "gpu02"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('[switches]\nn1 = "s1"\n', "switches.n1"),
        ('api = 1\n[switches]\n"*" = ["s1"]\n', "api"),
        ('[switches]\n"*" = ["s1"]\nmode = "x"\n', "switches"),
        ('mode = "x"\n[switches]\n"*" = ["s1"]\n', "mode"),
        ('bogus = 1\n[switches]\n"*" = ["s1"]\n', "bogus"),
        ('[switches]\n"*" = ["s1"]\n[params]\ngate = 8\n', "gate"),
        ('[switches]\n"*" = ["s1"]\n[params]\ngate_depth = -1\n', "params.gate_depth"),
        ('[switches]\n"*" = ["s1"]\n[params]\nk = "x"\n', "params.k"),
    ],
)
def test_bad_config_names_the_field(tmp_path, body, field):
    with pytest.raises(ConfigError, match=field):
        slurm.load_config(write(tmp_path, body))


def test_job_params_from_the_config_and_the_job_comment(tmp_path, capsys):
    cfg = slurm.load_config(
        write(tmp_path, '[switches]\n"*" = ["s1"]\n[params]\ngate_depth = 8\nk = 0.001\n')
    )
    assert cfg.params == {"gate_depth": 8, "k": 0.001}
    assert slurm.job_params(cfg, {}) == cfg.params
    # the comment's words after "symphony:" win, spaces or commas between them
    env = {"SLURM_JOB_ID": "5", "SLURM_JOB_COMMENT": "resnet run; symphony: gate_depth=0,k=0.01"}
    assert slurm.job_params(cfg, env) == {"gate_depth": 0, "k": 0.01}
    assert slurm.comment_params("no tag here") == {}
    assert slurm.comment_params("symphony: psn_mode=absolute") == {"psn_mode": "absolute"}
    for bad, why in (
        ("symphony: gate=3", "gate: unknown parameter"),
        ("symphony: gate_depth", "expected NAME=VALUE"),
        ("symphony: k=fast", "k: 'fast' is not a number"),
        ("symphony: gate_depth=70000", "gate_depth"),
        ("symphony: n_warmup=1.5", "n_warmup"),
    ):
        with pytest.raises(ValueError, match=why):
            slurm.comment_params(bad)
        # a bad comment never loses the job its tracking: it gets the config's parameters
        assert slurm.job_params(cfg, {**env, "SLURM_JOB_COMMENT": bad}) == cfg.params
        assert "comment ignored" in capsys.readouterr().err


def test_request_key_is_the_slurm_job():
    env = {"SLURM_JOB_ID": "42", "SLURM_CLUSTER_NAME": "c1"}
    assert slurm.request_key(env) == "slurm:c1:42:0"
    assert slurm.request_key({**env, "SLURM_RESTART_COUNT": "2"}) == "slurm:c1:42:2"


def test_hooks_never_fail_the_job(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    assert slurm.main(["prolog", "--config", str(tmp_path / "missing.toml")]) == 0
    assert "cannot read" in capsys.readouterr().err
    # Nothing listens on port 1: the prolog gives up (job untracked), the epilog queues.
    cfg = write(
        tmp_path,
        f'api = "127.0.0.1:1"\ntimeout_s = 0.5\nstate_dir = "{tmp_path}/st"\n'
        '[switches]\n"*" = ["s1"]\n',
    )
    assert slurm.main(["prolog", "--config", str(cfg)]) == 0
    assert "job 7 runs untracked: UNAVAILABLE" in capsys.readouterr().err
    assert slurm.main(["epilog", "--config", str(cfg)]) == 0
    assert (tmp_path / "st/pending/slurm-7").exists()
    assert slurm.main(["flush", "--config", str(cfg)]) == 1  # still pending
