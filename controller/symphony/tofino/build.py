"""`make tofino2`: compile the t2na program with p4c's open-source Tofino backend.

Writes the compiler output (tofino2.bin, context.json, bfrt.json), the P4Info and the resource
logs under build/tofino2/, then the resource summary (symphony.tofino.resources) next to them.
`--check-toolchain` only says whether the backend is installed (exit 0) or what is missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "p4src" / "t2na" / "symphony.p4"
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


def compile_tofino2(out: Path, max_jobs: int | None = None) -> Path:
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
        "--p4runtime-files", str(out / "symphony.p4info.txtpb"),
        "-o", str(out),
        str(SOURCE),
    ]  # fmt: skip
    if max_jobs is not None:
        cmd[1:1] = [f"-DMAX_JOBS={max_jobs}"]
    print("+", " ".join(cmd), flush=True)
    log = out / "p4c.log"
    with log.open("w") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), check=False)
    text = log.read_text()
    if proc.returncode != 0:
        sys.stderr.write(text)
        raise SystemExit(f"make tofino2: p4c failed (exit {proc.returncode}); log: {log}")
    return log


def sizes_max_jobs() -> int:
    """MAX_JOBS as p4src/shared/sizes.p4 defines it."""
    for line in (ROOT / "p4src" / "shared" / "sizes.p4").read_text().splitlines():
        parts = line.split()
        if parts[:2] == ["#define", "MAX_JOBS"]:
            return int(parts[2])
    raise RuntimeError("MAX_JOBS not found in p4src/shared/sizes.p4")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "tofino2")
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
    compile_tofino2(args.out, args.max_jobs)
    from symphony.tofino import resources

    report = resources.summarize(args.out, args.max_jobs or sizes_max_jobs())
    (args.out / "resources.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
