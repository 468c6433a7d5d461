"""symphony-slurm: Slurm hooks that give each Slurm job a Symphony Job_ID while it runs.

    PrologSlurmctld=/etc/symphony/slurm-prolog     # exec symphony-slurm prolog --config ...
    EpilogSlurmctld=/etc/symphony/slurm-epilog     # exec symphony-slurm epilog --config ...
    TaskProlog=/etc/symphony/slurm-task-prolog     # exec symphony-slurm task-prolog --config ...

(docs/slurm.md has the full slurm.conf lines and the wrapper scripts.)

- ``prolog`` (on the slurmctld host, once per job): allocates a Job_ID named ``slurm-<id>`` for
  the switches on the paths of the job's nodes, with request key ``slurm:<cluster>:<id>:<restart>``
  so a rerun prolog (slurmctld restart, requeue) gets the same Job_ID. Without a ``[switches]``
  table it sends the job's hosts only (a node's ``[hosts]`` entry, else its name: a host name of
  the controller's topology) and the controller derives the switches.
- ``epilog`` (same host, once per job): releases it.
- ``task-prolog`` (on each node, per task): prints ``export SYMPHONY_JOB_ID=<n>`` so the job's
  processes (an NCCL wrapper) find the Job_ID to write into their packets' BTH.
- ``flush``: retries the releases still pending (for a timer; prolog and epilog do it too).

Symphony's per-job parameters (the marking policy among them) come from the config's
``[params]`` table for every job, and per job from ``sbatch --comment "symphony: gate_depth=8
k=0.001"`` (the words after ``symphony:``, ``name=value`` each), the comment's winning. A
comment the controller would refuse is named on stderr and the job gets the config's.

The controller being down never fails a Slurm job: every hook exits 0. The prolog then leaves
the job untracked (its packets get only queue-depth marking); an epilog that cannot reach the
controller writes the release to ``<state_dir>/pending/`` and the next hook run (any job's
prolog or epilog, or ``flush``) sends it. Releases are by name and tolerate "not found", so a
release that landed but whose reply was lost, or an untracked job, is simply done.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from symphony.client import ApiError, Client, Credentials, Retry
from symphony.config.reader import TableReader, read_toml
from symphony.config.schema import ConfigError
from symphony.model.params import PARAM_NAMES, ParamError, check_overrides, parse_assignment

DEFAULT_CONFIG = "/etc/symphony/slurm.toml"
# A prolog delays its job's start, so it tries briefly; pending releases wait for the next run.
HOOK_RETRY = Retry(attempts=3, first_delay_s=0.5, max_delay_s=2.0)


@dataclass(frozen=True)
class SlurmConfig:
    api: str = "127.0.0.1:50051"
    credentials: Credentials = field(default_factory=Credentials)
    mode: str = "tag"
    state_dir: Path = Path("/var/spool/symphony-slurm")
    timeout_s: float = 5.0
    # node name -> the switches on its path ("*": any node not listed); empty: the controller
    # derives the job's switches from its hosts (its config's topology)
    switches: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # node name -> its RoCE source address (or the controller topology's name for it); mode
    # "hosts" classifies by these; without [switches] a node not listed is sent by its name
    hosts: Mapping[str, str] = field(default_factory=dict)
    # Symphony's per-job parameters for every job the prolog allocates (overrides of the
    # controller's defaults; model/params.JobParams names them)
    params: Mapping[str, float | int | str] = field(default_factory=dict)

    def client(self) -> Client:
        # `api` may name several replicas ("a:1,b:1"): the client finds the leader.
        return Client(self.api, self.credentials, timeout_s=self.timeout_s, retry=HOOK_RETRY)


def load_config(path: Path) -> SlurmConfig:
    """The hooks' TOML file; ConfigError names the field at fault."""
    t = TableReader(read_toml(path), "", path.parent)
    t.only_keys(
        "api", "token_file", "tls_ca", "tls_cert", "tls_key", "mode", "state_dir",
        "timeout_s", "switches", "hosts", "params",
    )  # fmt: skip
    creds = Credentials.from_files(
        t.path("token_file", exists=True),
        t.path("tls_ca", exists=True),
        t.path("tls_cert", exists=True),
        t.path("tls_key", exists=True),
    )
    switches: dict[str, tuple[str, ...]] = {}
    for node, names in t.raw.get("switches", {}).items():
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"switches.{node}", "must be a non-empty list of switch names")
        switches[node] = tuple(names)
    hosts_t = t.table("hosts")
    hosts = {node: hosts_t.string(node) for node in hosts_t.raw}
    mode = t.choice("mode", ("tag", "hosts"), "tag")
    params_t = t.table("params")
    params_t.only_keys(*PARAM_NAMES)
    try:
        params = check_overrides(params_t.raw)
    except ParamError as exc:
        raise ConfigError(f"params.{exc.field}", exc.reason) from exc
    return SlurmConfig(
        api=_api(t),
        credentials=creds,
        mode=mode,
        state_dir=t.path("state_dir") or SlurmConfig.state_dir,
        timeout_s=t.number("timeout_s", 5.0, lo=0.1, hi=600.0),
        switches=switches,
        hosts=hosts,
        params=params,
    )


COMMENT_TAG = "symphony:"


def comment_params(comment: str) -> dict[str, float | int | str]:
    """The parameters a job's comment asks for: ``symphony: name=value ...`` (anywhere in the
    comment, to its end; words split on spaces or commas). ValueError names what is wrong."""
    _, tag, rest = comment.partition(COMMENT_TAG)
    if not tag:
        return {}
    # a ParamError (a ValueError) names the word or the field at fault
    return check_overrides(dict(parse_assignment(w) for w in rest.replace(",", " ").split()))


def job_params(cfg: SlurmConfig, env: Mapping[str, str]) -> dict[str, float | int | str]:
    """The config's parameters under the job comment's; a bad comment is said and ignored."""
    try:
        mine = comment_params(env.get("SLURM_JOB_COMMENT", ""))
    except ValueError as exc:
        _say(f"job {env.get('SLURM_JOB_ID')}: comment ignored ({exc})")
        return dict(cfg.params)
    try:
        return check_overrides({**cfg.params, **mine})  # valid alone, not always together
    except ParamError as exc:
        _say(f"job {env.get('SLURM_JOB_ID')}: comment ignored ({exc.field}: {exc.reason})")
        return dict(cfg.params)


def _api(t: TableReader) -> str:
    """``api``: one address, or the replicas' (a list, or one string with commas), joined with
    commas as symphony.client takes them."""
    raw = t.raw.get("api", "127.0.0.1:50051")
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items:
        raise ConfigError("api", f"must be an address or a list of addresses, got {raw!r}")
    out = []
    for i, item in enumerate(items):
        one = TableReader({"api": item.strip() if isinstance(item, str) else item}, "", t.base_dir)
        try:
            out.append(one.address("api"))
        except ConfigError as exc:
            raise ConfigError(f"api[{i}]", str(exc).split(": ", 2)[-1]) from None
    return ",".join(out)


def job_name(slurm_job_id: str) -> str:
    return f"slurm-{slurm_job_id}"


def request_key(env: Mapping[str, str]) -> str:
    cluster = env.get("SLURM_CLUSTER_NAME", "cluster")
    return f"slurm:{cluster}:{env['SLURM_JOB_ID']}:{env.get('SLURM_RESTART_COUNT', '0')}"


def expand_nodes(nodelist: str) -> list[str]:
    """Slurm's compressed host list (``gpu[01-03,07],login1``, ``r[1-2]n[1-2]``) as names, as
    ``scontrol show hostnames`` prints them (tests compare the two). Done here because a hook's
    environment need not find scontrol or slurm.conf."""
    names: list[str] = []
    depth = 0
    part = ""
    for ch in nodelist + ",":
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            if part:
                names += _expand_one(part)
            part = ""
        else:
            part += ch
    if depth:
        raise ValueError(f"unbalanced brackets in node list {nodelist!r}")
    return names


def _expand_one(pattern: str) -> list[str]:
    head, bracket, rest = pattern.partition("[")
    if not bracket:
        return [pattern]
    body, _, tail = rest.partition("]")
    out = []
    for item in body.split(","):
        lo, dash, hi = item.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError(f"bad range {item!r} in node list {pattern!r}")
        width = len(lo)
        for n in range(int(lo), int(hi if dash else lo) + 1):
            out += [f"{head}{n:0{width}d}{t}" for t in _expand_one(tail)]
    return out


def path_of(cfg: SlurmConfig, nodes: Sequence[str]) -> tuple[list[str], list[str]]:
    """(switches, hosts) of a job on these nodes: the union of the nodes' switches, in order.
    Without [switches]: no switches (the controller derives them) and every node as a host."""
    if not cfg.switches:
        return [], [cfg.hosts.get(node, node) for node in nodes]
    switches: list[str] = []
    hosts: list[str] = []
    for node in nodes:
        names = cfg.switches.get(node, cfg.switches.get("*"))
        if names is None:
            raise ValueError(f"node {node!r} has no switches in the config (nor '*')")
        switches += [s for s in names if s not in switches]
        if cfg.mode == "hosts":
            if node not in cfg.hosts:
                raise ValueError(f"mode hosts: node {node!r} has no address under [hosts]")
            hosts.append(cfg.hosts[node])
    return switches, hosts


def _say(msg: str) -> None:
    # slurmctld logs a PrologSlurmctld's stderr.
    print(f"symphony-slurm: {msg}", file=sys.stderr)


def _pending_dir(cfg: SlurmConfig) -> Path:
    return cfg.state_dir / "pending"


def flush(cfg: SlurmConfig, client: Client) -> int:
    """Send the releases that failed before; returns how many are still pending."""
    left = 0
    pending = _pending_dir(cfg)
    for f in sorted(pending.glob("*")) if pending.is_dir() else []:
        try:
            client.release(f.name, missing_ok=True)
        except ApiError as exc:
            _say(f"release of {f.name} still pending: {exc}")
            left += 1
            continue
        f.unlink(missing_ok=True)
        _say(f"pending release of {f.name} done")
    return left


def prolog(cfg: SlurmConfig, env: Mapping[str, str]) -> int:
    slurm_id = env["SLURM_JOB_ID"]
    name = job_name(slurm_id)
    try:
        switches, hosts = path_of(cfg, expand_nodes(env["SLURM_JOB_NODELIST"]))
    except (KeyError, ValueError) as exc:
        _say(f"job {slurm_id} runs untracked: {exc}")
        return 0
    with cfg.client() as c:
        flush(cfg, c)
        try:
            reply = c.allocate(
                request_key(env),
                name,
                switches=switches,
                mode=cfg.mode,
                hosts=hosts,
                params=job_params(cfg, env),
            )
        except ApiError as exc:
            _say(f"job {slurm_id} runs untracked: {exc}")
            return 0
    _say(f"job {slurm_id}: Job_ID {reply.job.job_id} ({name}) on {', '.join(reply.job.switches)}")
    return 0


def epilog(cfg: SlurmConfig, env: Mapping[str, str]) -> int:
    name = job_name(env["SLURM_JOB_ID"])
    with cfg.client() as c:
        flush(cfg, c)
        try:
            c.release(name, missing_ok=True)
        except ApiError as exc:
            pending = _pending_dir(cfg)
            pending.mkdir(parents=True, exist_ok=True)
            (pending / name).touch()
            _say(f"release of {name} pending ({exc}); the next hook run retries it")
            return 0
    _say(f"released {name}")
    return 0


def task_prolog(cfg: SlurmConfig, env: Mapping[str, str]) -> int:
    """Slurm reads ``export NAME=value`` lines from a TaskProlog's stdout into the task's env."""
    name = job_name(env["SLURM_JOB_ID"])
    retry_once = Client(cfg.api, cfg.credentials, timeout_s=cfg.timeout_s, retry=Retry(2))
    with retry_once as c:
        try:
            jobs = [j for j in c.list() if j.name == name and j.state == "active"]
        except ApiError as exc:
            _say(f"{name}: no Job_ID for the task ({exc})")
            return 0
    if jobs:
        print(f"export SYMPHONY_JOB_ID={jobs[0].job_id}")
    return 0


HOOKS = {"prolog": prolog, "epilog": epilog, "task-prolog": task_prolog}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="symphony-slurm", description=__doc__.split("\n")[0])
    p.add_argument("hook", choices=[*HOOKS, "flush"])
    p.add_argument("--config", default=os.environ.get("SYMPHONY_SLURM_CONFIG", DEFAULT_CONFIG))
    args = p.parse_args(argv)
    try:
        cfg = load_config(Path(args.config))
    except (ConfigError, ValueError) as exc:
        # Even a broken config must not fail the Slurm job: say why and run it untracked.
        _say(f"config {args.config}: {exc}")
        return 0
    if args.hook == "flush":
        with cfg.client() as c:
            return 1 if flush(cfg, c) else 0
    if "SLURM_JOB_ID" not in os.environ:
        _say("SLURM_JOB_ID is not set: run me from slurm.conf")
        return 0
    return HOOKS[args.hook](cfg, os.environ)


if __name__ == "__main__":
    sys.exit(main())
