"""symphonyctl: the operator's and scheduler's command line for the job API.

    symphonyctl job allocate --name NAME --hosts h1,h3 [--param k=0.02]   # topology: derived path
    symphonyctl job allocate --name NAME --mode tag --switch s1 [--param k=0.02]
    symphonyctl job allocate --name NAME --mode hosts --host 10.0.0.1 --host 10.0.0.2 --switch s1
    symphonyctl job release JOB        # JOB = Job_ID or name
    symphonyctl job list [--all]
    symphonyctl job show JOB           # live state read from each switch
    symphonyctl switch status
    symphonyctl params set [--job JOB] k=0.02 tau=0.375 ...

Every command takes --json for machine-readable output. The API address comes from --api or
$SYMPHONY_API (default 127.0.0.1:50051; replicated controllers: all their addresses, separated
by commas, and the client finds the leader); a token from --token-file or $SYMPHONY_TOKEN_FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format

from symphony.api import symphony_pb2 as pb
from symphony.client import ApiError, Client, Credentials, Retry
from symphony.model.params import ParamError, parse_assignment


def parse_param(text: str) -> tuple[str, Any]:
    try:
        return parse_assignment(text)
    except ParamError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _names(text: str) -> list[str]:
    """``a,b`` -> [a, b] (a repeated option adds to the list)."""
    return [x.strip() for x in text.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="symphonyctl", description="Symphony controller CLI")
    p.add_argument(
        "--api",
        default=os.environ.get("SYMPHONY_API", "127.0.0.1:50051"),
        help="the API address; replicas: every replica's, separated by commas (finds the leader)",
    )
    p.add_argument("--token-file", default=os.environ.get("SYMPHONY_TOKEN_FILE"))
    p.add_argument("--tls-ca", help="CA that signed the controller's certificate (enables TLS)")
    p.add_argument("--tls-cert", help="client certificate (mTLS)")
    p.add_argument("--tls-key", help="client key (mTLS)")
    p.add_argument("--timeout", type=float, default=30.0, help="per attempt, seconds")
    p.add_argument(
        "--retries", type=int, default=5, help="attempts on UNAVAILABLE / DEADLINE_EXCEEDED"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    sub = p.add_subparsers(dest="group", required=True)

    job = sub.add_parser("job").add_subparsers(dest="cmd", required=True)
    a = job.add_parser("allocate", help="allocate a Job_ID and program the job's switches")
    a.add_argument("--name", required=True)
    a.add_argument(
        "--mode",
        choices=("tag", "hosts"),
        default="tag",
        help="classify the job's packets by the BTH tag (default) or by its hosts' addresses",
    )
    a.add_argument(
        "--host",
        "--hosts",
        dest="host",
        action="extend",
        type=_names,
        default=[],
        metavar="HOST[,HOST...]",
        help="the job's hosts: IPv4 addresses or the topology's host names (repeatable)",
    )
    a.add_argument(
        "--switch",
        "--switches",
        dest="switch",
        action="extend",
        type=_names,
        default=[],
        metavar="SWITCH[,SWITCH...]",
        help="the job's switches (default with a topology: derived from its hosts)",
    )
    a.add_argument("--param", action="append", default=[], type=parse_param, metavar="NAME=VALUE")
    a.add_argument(
        "--request-key", help="idempotency key (default: ctl:<name>, so re-running is safe)"
    )
    r = job.add_parser("release")
    r.add_argument("job")
    ls = job.add_parser("list")
    ls.add_argument("--all", action="store_true", help="include released jobs")
    sh = job.add_parser("show")
    sh.add_argument("job")

    sw = sub.add_parser("switch").add_subparsers(dest="cmd", required=True)
    sw.add_parser("status")

    prm = sub.add_parser("params").add_subparsers(dest="cmd", required=True)
    ps = prm.add_parser("set")
    ps.add_argument("--job", default="", help="Job_ID or name (default: global)")
    ps.add_argument("values", nargs="+", type=parse_param, metavar="NAME=VALUE")
    return p


def client(args: argparse.Namespace) -> Client:
    creds = Credentials.from_files(args.token_file, args.tls_ca, args.tls_cert, args.tls_key)
    return Client(args.api, creds, timeout_s=args.timeout, retry=Retry(attempts=args.retries))


def call(args: argparse.Namespace, c: Client) -> Any:
    """One command through the client library (which retries transient failures)."""
    params = dict(getattr(args, "param", None) or getattr(args, "values", None) or [])
    match args.group, args.cmd:
        case "job", "allocate":
            return c.allocate(
                args.request_key or f"ctl:{args.name}",
                args.name,
                mode=args.mode,
                hosts=args.host,
                switches=args.switch,
                params=params,
            )
        case "job", "release":
            return c.release(args.job)
        case "job", "list":
            return pb.ListReply(jobs=c.list(include_released=args.all))
        case "job", "show":
            return c.get(args.job)
        case "switch", "status":
            return pb.SwitchStatusReply(switches=c.switch_status())
        case "params", "set":
            return c.set_params(params, job=args.job)
    raise AssertionError((args.group, args.cmd))


# ---- human output --------------------------------------------------------------------------


def _params(p: pb.Params) -> str:
    d = json_format.MessageToDict(p, preserving_proto_field_name=True)
    return " ".join(f"{k}={v}" for k, v in d.items()) or "-"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def render_job(job: pb.Job) -> list[str]:
    lines = [
        f"job {job.job_id} {job.name!r}: {job.state}, mode {job.mode}",
        f"  switches: {', '.join(job.switches)}",
    ]
    if job.hosts:
        lines.append(f"  hosts:    {', '.join(job.hosts)}")
    lines.append(f"  params:   {_params(job.params)}")
    if job.HasField("effective"):
        lines.append(f"  running:  {_params(job.effective)}")
    if job.pending:
        lines.append(f"  pending release on: {', '.join(job.pending)}")
    lines.append(f"  created:  {_when(job.created_at)}  key {job.request_key}")
    return lines


def render(args: argparse.Namespace, reply: Any) -> str:
    c = args.cmd
    out: list[str] = []
    if isinstance(reply, pb.JobReply):
        verb = {
            "allocate": "allocated" if reply.created else "already allocated (same key)",
            "release": "released" if reply.job.state == "released" else "releasing",
        }[c]
        out.append(f"{verb}: Job_ID {reply.job.job_id}")
        out += render_job(reply.job)
        out += [f"  {s.switch}: {s.status}" for s in reply.switches]
    elif isinstance(reply, pb.ListReply):
        out.append(f"{'JOB_ID':>6}  {'NAME':<24} {'MODE':<5} {'STATE':<9} SWITCHES")
        for j in reply.jobs:
            out.append(
                f"{j.job_id:>6}  {j.name:<24} {j.mode:<5} {j.state:<9} {','.join(j.switches)}"
            )
    elif isinstance(reply, pb.GetReply):
        out += render_job(reply.job)
        out.append(
            f"  {'SWITCH':<12} {'STEP_MIN':>8} {'STEP_MAX':>8} {'OVERLAP':>7} {'PSN_REC':>8} "
            f"{'ALPHA':>5} "
            f"{'WIN_PKTS':>8} {'WIN_AHEAD':>9} {'PACKETS':>9} {'MARKS':>7} {'Q_MARKS':>7}"
        )
        for s in reply.live:
            if not s.available:
                out.append(f"  {s.switch:<12} {s.error}")
                continue
            out.append(
                f"  {s.switch:<12} {s.step_min:>8} {s.step_max:>8} {s.step_overlap:>7} "
                f"{s.psn_rec:>8} {s.alpha:>5} "
                f"{s.window_packets:>8} {s.window_ahead_packets:>9} {s.packets:>9} {s.marks:>7} "
                f"{s.queue_marks:>7}"
            )
    elif isinstance(reply, pb.SwitchStatusReply):
        out.append(
            f"{'SWITCH':<12} {'TARGET':<8} {'STATE':<12} {'ENTRIES':>7} {'JOBS':>5} "
            f"{'CONNECTS':>8}  ADDRESS / LAST ERROR"
        )
        for sw in reply.switches:
            out.append(
                f"{sw.name:<12} {sw.target:<8} {sw.state:<12} {sw.entries:>7} {sw.jobs:>5} "
                f"{sw.connects:>8}  {sw.address}"
                + (f"  ({sw.last_error})" if sw.last_error and sw.state != "ready" else "")
            )
            if sw.neighbours:  # a topology: what is plugged where, and the routes now
                facts = [f"{sw.ports} ports"]
                if sw.state != "unmanaged":
                    facts.append(f"{sw.routes} routes")
                    facts.append(f"{sw.ecmp_groups} ECMP group{'s' * (sw.ecmp_groups != 1)}")
                out.append(f"  {', '.join(facts)}; {' '.join(sw.neighbours)}")
    elif isinstance(reply, pb.SetParamsReply):
        if reply.HasField("job"):
            out.append("job parameters set")
            out += render_job(reply.job)
            out += [f"  {s.switch}: {s.status}" for s in reply.switches]
        else:
            out.append(f"global parameters: {_params(getattr(reply, 'global'))}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with client(args) as c:
            reply = call(args, c)
    except (ApiError, ValueError, OSError) as exc:
        code, detail = (exc.code.name, exc.message) if isinstance(exc, ApiError) else ("", str(exc))
        if args.json:
            print(json.dumps({"error": code or "INVALID_ARGUMENT", "message": detail}))
        else:
            print(f"symphonyctl: {code + ': ' if code else ''}{detail}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json_format.MessageToJson(
                reply, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        )
    else:
        print(render(args, reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())
