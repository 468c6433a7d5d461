"""The Slurm hooks in a real single-node Slurm (Debian's slurm-wlm and munge, started here): a job
submitted with sbatch or srun gets a Symphony Job_ID while it runs and loses it after; with the
controller down the job runs untracked, and a release the epilog could not send is sent by the
next hook run.

Needs root and the Debian packages that scripts/install_test_deps.sh installs (the test command
runs it); skips naming what is missing otherwise, which fails a CI run."""

from __future__ import annotations

import sys

import pytest
from services import Controller, SlurmCluster, missing_tools, wait_for

from symphony.api.convert import params_from_pb
from symphony.client import Client
from symphony.slurm import expand_nodes

_why = missing_tools("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol")
pytestmark = pytest.mark.skipif(_why is not None, reason=f"Slurm test skipped: {_why}")


def hook_script(path, hook: str, config) -> str:
    """What an operator puts in /etc/symphony (docs/slurm.md): slurm.conf names a path, not a
    command line, so a two-line wrapper passes the config."""
    path.write_text(
        f"#!/bin/sh\nexec {sys.executable} -m symphony.slurm {hook} --config {config}\n"
    )
    path.chmod(0o755)
    return str(path)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("slurm")
    ctl = Controller(tmp_path_factory.mktemp("controller"))
    hooks = tmp / "symphony"
    hooks.mkdir()
    cfg = hooks / "slurm.toml"
    cfg.write_text(
        f'api = "{ctl.api}"\nstate_dir = "{hooks}/state"\ntimeout_s = 2\n[switches]\n"*" = ["s1"]\n'
        "[params]\nk = 0.001\n"
    )
    conf = "\n".join(
        f"{key}={hook_script(hooks / hook, hook, cfg)}"
        for key, hook in (
            ("PrologSlurmctld", "prolog"),
            ("EpilogSlurmctld", "epilog"),
            ("TaskProlog", "task-prolog"),
        )
    )
    slurm = SlurmCluster(tmp, conf)
    try:
        ctl.start()
        slurm.start()
        yield slurm, ctl, hooks / "state" / "pending"
    finally:
        slurm.stop()
        ctl.stop()


def active(ctl: Controller) -> dict[str, int]:
    with Client(ctl.api, timeout_s=5) as c:
        return {j.name: j.job_id for j in c.list() if j.state == "active"}


def submit_waiting_job(slurm: SlurmCluster, tag: str, *sbatch: str) -> tuple[str, object]:
    """An sbatch job that records its SYMPHONY_JOB_ID and runs until the test lets it end."""
    flag = slurm.tmp / f"{tag}.done"
    out = slurm.tmp / f"{tag}.out"
    script = slurm.tmp / f"{tag}.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "SYMPHONY_JOB_ID=${{SYMPHONY_JOB_ID:-none}}" > {out}.tmp && mv {out}.tmp {out}\n'
        f"while [ ! -e {flag} ]; do sleep 0.1; done\n"
    )
    slurm_id = slurm.run(
        "sbatch", "--parsable", "-o", "/dev/null", *sbatch, str(script)
    ).stdout.strip()
    seen = wait_for(f"job {slurm_id} running", lambda: (out.exists() and out.read_text()) or None)
    return slurm_id, (seen.strip(), flag)


def finish(slurm: SlurmCluster, slurm_id: str, flag) -> None:
    flag.touch()
    wait_for(f"job {slurm_id} completed", lambda: slurm.job_state(slurm_id) == "COMPLETED" or None)


def test_sbatch_job_gets_a_job_id_while_it_runs(cluster):
    slurm, ctl, _ = cluster
    slurm_id, (seen, flag) = submit_waiting_job(slurm, "a")
    name = f"slurm-{slurm_id}"
    live = active(ctl)
    assert name in live, live
    # The task saw the same Job_ID the controller gave the Slurm job.
    assert seen == f"SYMPHONY_JOB_ID={live[name]}"
    print(f"sbatch job {slurm_id}: Job_ID {live[name]} while running")  # the closing note
    finish(slurm, slurm_id, flag)
    wait_for(f"{name} released", lambda: name not in active(ctl) or None)
    with Client(ctl.api) as c:
        (job,) = [j for j in c.list(include_released=True) if j.name == name]
    # Released by the epilog (its switch is down here, so the controller keeps it releasing
    # until the switch confirms; the Job_ID is not reused before that).
    assert job.state in ("releasing", "released")
    print(f"sbatch job {slurm_id}: Job_ID {job.job_id} {job.state} after it ended")


def test_job_parameters_from_the_config_and_the_job_comment(cluster):
    slurm, ctl, _ = cluster
    slurm_id, (_seen, flag) = submit_waiting_job(slurm, "p", "--comment", "symphony: gate_depth=8")
    with Client(ctl.api) as c:
        job = c.get(f"slurm-{slurm_id}").job
    # k from slurm.toml's [params], gate_depth from the job's comment, both the job's own
    assert params_from_pb(job.params) == {"k": 0.001, "gate_depth": 8}
    assert job.effective.gate_depth == 8
    finish(slurm, slurm_id, flag)
    print(f"sbatch --comment job {slurm_id}: params {params_from_pb(job.params)}")


def test_srun_job_sees_its_job_id_and_loses_it_after(cluster):
    slurm, ctl, _ = cluster
    out = slurm.run("srun", "sh", "-c", 'echo "$SLURM_JOB_ID ${SYMPHONY_JOB_ID:-none}"')
    slurm_id, job_id = out.stdout.split()
    assert job_id != "none", out
    with Client(ctl.api) as c:
        (job,) = [j for j in c.list(include_released=True) if j.name == f"slurm-{slurm_id}"]
    assert str(job.job_id) == job_id
    wait_for("srun job released", lambda: f"slurm-{slurm_id}" not in active(ctl) or None)
    print(f"srun job {slurm_id}: SYMPHONY_JOB_ID={job_id} in the task, released after")


def test_controller_down_job_runs_untracked_and_release_is_retried(cluster):
    slurm, ctl, pending = cluster
    # Down at the prolog: the job runs all the same, without a Job_ID.
    ctl.stop()
    out = slurm.run("srun", "sh", "-c", 'echo "${SYMPHONY_JOB_ID:-none}"')
    assert out.stdout.strip() == "none"
    ctl.start()
    assert not any(n.startswith("slurm-") for n in active(ctl))

    # Up at the prolog, down at the epilog: the release waits in the pending directory...
    slurm_id, (seen, flag) = submit_waiting_job(slurm, "b")
    name = f"slurm-{slurm_id}"
    assert name in active(ctl) and seen != "SYMPHONY_JOB_ID=none"
    ctl.stop()
    finish(slurm, slurm_id, flag)
    wait_for("the epilog's pending release", lambda: (pending / name).exists() or None)
    ctl.start()
    assert name in active(ctl)  # the controller restarted with the job still live

    # ...and the next job's prolog sends it.
    out = slurm.run("srun", "sh", "-c", 'echo "${SYMPHONY_JOB_ID:-none}"')
    assert out.stdout.strip() != "none"
    assert name not in active(ctl)
    assert not (pending / name).exists()
    print(f"controller down: job ran untracked; {name}'s release was pending, then sent")


@pytest.mark.parametrize(
    "nodelist", ["vm", "gpu[01-03,07],login1", "n[1-2],login", "a[8-11],b[001-002]"]
)
def test_node_list_expanded_as_scontrol_does(cluster, nodelist):
    slurm, _, _ = cluster
    expected = slurm.run("scontrol", "show", "hostnames", nodelist).stdout.split()
    assert expand_nodes(nodelist) == expected
