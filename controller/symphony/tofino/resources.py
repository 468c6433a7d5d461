"""Resource summary of a Tofino2 compile, from the compiler's own logs (pipe/logs/)."""

from __future__ import annotations

import json
from pathlib import Path


def _find(out: Path, name: str) -> Path | None:
    hits = sorted(out.rglob(name))
    return hits[0] if hits else None


def summarize(out: Path) -> str:
    """Markdown: stages used, per-table memories, stateful ALUs, as the compiler reports them."""
    lines = [f"# Tofino2 resources ({out})", ""]
    metrics = _find(out, "metrics.json")
    if metrics:
        lines += [
            "## metrics.json",
            "```",
            json.dumps(json.loads(metrics.read_text()), indent=1)[:4000],
            "```",
        ]
    return "\n".join(lines) + "\n"
