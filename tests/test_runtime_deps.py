"""The runtime package needs neither numpy nor scapy (they serve the test side, conformance/,
and the evaluation): every module of `symphony` and `symphony_tools` imports, and the daemon's
`--help` runs, in a Python where importing either fails."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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
