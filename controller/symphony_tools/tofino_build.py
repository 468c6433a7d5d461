"""`make tofino2`: compile the t2na programs with p4c's open-source Tofino backend.

Writes the compiler output (tofino2.bin, context.json, bfrt.json), the P4Info and the resource
logs under build/tofino2/, then the resource summary (symphony_tools.tofino_resources) next to them.
`--program fabric_demo` compiles the coexistence program (Symphony beside L2, routing with ECMP
and an ACL) instead, by default into build/tofino2-fabric_demo/.
`--check-toolchain` only says whether the backend is installed (exit 0) or what is missing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from symphony.sizes import MAX_JOBS
from symphony_tools import tofino_resources

ROOT = Path(__file__).resolve().parents[2]  # the repository (controller/symphony_tools/)
PROGRAMS = ("symphony", "fabric_demo")  # p4src/t2na/<name>.p4
EXTRA_PATH = "/opt/p4/bin"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = env.get("PATH", "") + os.pathsep + EXTRA_PATH
    return env


def missing_toolchain() -> str | None:
    """None when p4c can target tofino2, else what is missing."""
    path = _env()["PATH"]
    if shutil.which("p4c", path=path) is None:
        return "p4c not found"
    if shutil.which("p4c-barefoot", path=path) is None:
        return "p4c's Tofino backend (p4c-barefoot) not found on PATH or in /opt/p4/bin"
    return None


def compile_tofino2(out: Path, max_jobs: int | None = None, program: str = "symphony") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        "p4c",
        "--target", "tofino2",
        "--arch", "t2na",
        "--std", "p4-16",
        "-I", str(ROOT / "p4src"),
        "-g", "--verbose", "2",
        # The assembler can stop at "No length for clot" on tofino2 without it.
        "-Xp4c=--no-clot",
        # Standard P4Runtime counters and registers, as Tofino P4Runtime servers (stratum_bf,
        # bf_switchd --p4rt-server) and the controller expect.
        "--p4runtime-force-std-externs",
        "--p4runtime-files", str(out / "symphony.p4info.txtpb"),
        "-o", str(out),
        str(ROOT / "p4src" / "t2na" / f"{program}.p4"),
    ]  # fmt: skip
    if max_jobs is not None:
        cmd[1:1] = [f"-DMAX_JOBS={max_jobs}"]
    print("+", " ".join(cmd), flush=True)
    # Captured, then written: the driver deletes every *.log under -o when it starts.
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), check=False
    )
    text = proc.stdout
    log = out / "p4c.log"
    log.write_text(text)
    if proc.returncode != 0:
        sys.stderr.write(text)
        raise SystemExit(f"make tofino2: p4c failed (exit {proc.returncode}); log: {log}")
    warned = compiler_warnings(text)
    if warned:
        sys.stderr.write("\n".join(warned) + "\n")
        raise SystemExit(f"make tofino2: the compiler warned (as for bmv2, that fails); log: {log}")
    return log


# With --p4runtime-force-std-externs the Hash units (flow slot, flow signature, window clock)
# have no standard P4Info form and are left out of it; they are fixed in the program and the
# controller never configures them, so that warning is expected.
EXPECTED_WARNINGS = ("No known conversion to standard P4Info for 'DynHash' extern type",)


def compiler_warnings(log: str) -> list[str]:
    """The compiler's own warnings. The assembler's notes on the generated .bfa (parser states it
    splits, hash groups it merges) are about its input, not about the P4 source, and stay in
    the log."""
    return [
        line
        for line in log.splitlines()
        if re.search(r"warning:|\[--Wwarn", line)
        and not re.search(r"\.bfa:\d+: warning", line)
        and not any(expected in line for expected in EXPECTED_WARNINGS)
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", choices=PROGRAMS, default="symphony")
    parser.add_argument("--out", type=Path, help="default: build/tofino2[-<program>]")
    parser.add_argument("--max-jobs", type=int, default=None, help="override MAX_JOBS")
    parser.add_argument("--check-toolchain", action="store_true")
    args = parser.parse_args(argv)
    missing = missing_toolchain()
    if args.check_toolchain:
        if missing:
            raise SystemExit(missing)
        print("tofino2 toolchain: ok")
        return
    if missing:
        raise SystemExit(f"make tofino2: {missing}")
    out = args.out or ROOT / "build" / (
        "tofino2" if args.program == "symphony" else f"tofino2-{args.program}"
    )
    compile_tofino2(out, args.max_jobs, args.program)
    report = tofino_resources.summarize(out, args.max_jobs or MAX_JOBS)
    (out / "resources.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
