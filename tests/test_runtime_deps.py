"""What an operator installs: the runtime distribution (the repository root's pyproject.toml)
holds the `symphony` package alone, and needs neither numpy nor scapy (they serve the test side,
conformance/, and the evaluation): every module of `symphony` and `symphony_tools` imports, and
the daemon's `--help` runs, in a Python where importing either fails. The repository's tooling,
`symphony_tools`, is a distribution of its own (symphony-tools), installed by `make setup`."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "controller" / "symphony"

PROBE = textwrap.dedent(
    """
    import importlib, pkgutil, sys

    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("numpy", "scapy"):
                raise ImportError(f"{name} is not a runtime dependency")
            return None

    sys.meta_path.insert(0, Blocked())
    import symphony, symphony_tools
    for pkg in (symphony, symphony_tools):
        for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            importlib.import_module(mod.name)
    from symphony import daemon
    try:
        daemon.main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0, exc.code
    print("imported", len(sys.modules))
    """
)


def test_runtime_imports_without_numpy_and_scapy() -> None:
    env = {"PYTHONPATH": str(ROOT / "controller"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage: symphony-controller" in out.stdout


def _fresh_clone(dest: Path) -> Path:
    """The working tree's files as a fresh clone of it has them (tracked or new, not ignored):
    none of the egg-info, build/ or caches a developer's checkout collects."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if not src.is_symlink() and not src.exists():
            continue  # deleted in the working tree, not yet in the index
        dst = dest / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)
    return dest


def _packages(names: list[str]) -> set[str]:
    """Dotted package names of the `__init__.py` files among `names` (paths with /)."""
    return {".".join(PurePosixPath(n).parent.parts) for n in names if n.endswith("/__init__.py")}


def test_the_runtime_wheel_holds_the_symphony_package_alone(tmp_path: Path) -> None:
    src = _fresh_clone(tmp_path / "clone")
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    out = subprocess.run(
        [*pip_wheel, "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith("symphony-"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [dist_info] = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
    top = {n.split("/")[0] for n in names} - {dist_info}
    assert top == {"symphony"}, f"the runtime wheel ships {sorted(top - {'symphony'})}"
    # Every package of controller/symphony/, and nothing else.
    source = [str(p.relative_to(RUNTIME.parent).as_posix()) for p in RUNTIME.rglob("__init__.py")]
    assert _packages(names) == _packages(source)
    # Its package data: the type marker, the published API and the example config (a link in
    # the repository, a file in the wheel).
    for data in ("py.typed", "api/symphony.proto", "config/example.toml"):
        assert f"symphony/{data}" in names, data
    # Its commands run the runtime only.
    targets = [line.split("=", 1)[1].strip() for line in entry_points.splitlines() if "=" in line]
    assert targets and all(t.startswith("symphony.") for t in targets), entry_points


def test_the_tooling_is_a_distribution_of_its_own() -> None:
    """`make setup` installs symphony-tools (controller/symphony_tools/pyproject.toml) beside
    the runtime: the development environment still imports `symphony_tools`."""
    tools = importlib.metadata.distribution("symphony-tools")
    assert (tools.read_text("top_level.txt") or "").split() == ["symphony_tools"]
    runtime = importlib.metadata.distribution("symphony")
    assert (runtime.read_text("top_level.txt") or "").split() == ["symphony"]
