"""Resource summary of a Tofino2 compile, read from the compiler's own logs.

p4c's Tofino backend writes `resources.json` (per MAU stage: which table uses which SRAM, TCAM,
map RAM, gateway and stateful ALU) and `metrics.json` under `<out>/pipe/logs/` when run with
`-g --verbose 2`. This module only counts what those files say.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Tofino2: 20 MAU stages; per stage 80 SRAMs (128 Kbit), 24 TCAMs (44 x 512), 4 stateful ALUs.
STAGES = 20
SRAM_BITS = 128 * 1024

# Per-job state as declared in p4src/t2na/include/job_state.p4 (bytes of register per job).
T2NA_STATE_BYTES = {
    "win_start": 4,
    "step_min": 2,
    "psn_rec": 4,
    "cnt_total": 4,
    "cnt_op": 4,
    "tau_score": 4,
    "alpha_m1": 1,
}


@dataclass
class TableUse:
    stages: set[int] = field(default_factory=set)
    srams: int = 0
    tcams: int = 0
    map_rams: int = 0
    stateful_alus: int = 0
    gateways: int = 0


@dataclass
class Summary:
    stages_used: list[int]
    n_stages: int
    tables: dict[str, TableUse]


def _find(out: Path, name: str) -> Path | None:
    hits = sorted(out.rglob(name))
    return hits[0] if hits else None


def _users(unit: dict[str, Any]) -> set[str]:
    return {u.get("used_by", "?") for u in unit.get("usages", [])}


def parse_resources(path: Path) -> Summary:
    data = json.loads(path.read_text())
    mau = data.get("resources", data).get("mau", {})
    tables: dict[str, TableUse] = defaultdict(TableUse)
    used: set[int] = set()
    kinds = (
        ("rams", "srams", "srams"),
        ("tcams", "tcams", "tcams"),
        ("map_rams", "maprams", "map_rams"),
        ("meter_alus", "meters", "stateful_alus"),
        ("gateways", "gateways", "gateways"),
    )
    for stage in mau.get("mau_stages", []):
        n = stage.get("stage_number", -1)
        for section, key, attr in kinds:
            for unit in stage.get(section, {}).get(key, []):
                for user in _users(unit):
                    use = tables[user]
                    use.stages.add(n)
                    setattr(use, attr, getattr(use, attr) + 1)
                    used.add(n)
    return Summary(sorted(used), int(mau.get("nStages", STAGES)), dict(tables))


def summarize(out: Path, max_jobs: int | None = None) -> str:
    """Markdown report of one compile."""
    lines = [f"# Tofino2 resources (`{out}`)", ""]
    res = _find(out, "resources.json")
    if res is None:
        return "\n".join([*lines, "No resources.json found: compile with `-g --verbose 2`."]) + "\n"
    s = parse_resources(res)
    stage_list = ", ".join(map(str, s.stages_used))
    lines += [
        f"Stages used: **{len(s.stages_used)} of {s.n_stages}** ({stage_list})",
        "",
        "| table / register | stages | SRAM | TCAM | map RAM | stateful ALU | gateway |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, u in sorted(s.tables.items(), key=lambda kv: (min(kv[1].stages), kv[0])):
        stages = ",".join(map(str, sorted(u.stages)))
        lines.append(
            f"| `{name}` | {stages} | {u.srams} | {u.tcams} | {u.map_rams} | {u.stateful_alus}"
            f" | {u.gateways} |"
        )
    total = TableUse()
    for u in s.tables.values():
        total.srams += u.srams
        total.tcams += u.tcams
        total.map_rams += u.map_rams
        total.stateful_alus += u.stateful_alus
    lines += [
        f"| **total** | | {total.srams} | {total.tcams} | {total.map_rams} |"
        f" {total.stateful_alus} | |",
        "",
    ]
    per_job = sum(T2NA_STATE_BYTES.values())
    lines.append(
        f"Per-job state: {per_job} bytes of registers "
        f"({', '.join(f'{k} {v}' for k, v in T2NA_STATE_BYTES.items())}) plus three 32-bit "
        "packet counters (packets, Symphony marks, queue marks)."
    )
    if max_jobs:
        lines.append(
            f"Compiled with MAX_JOBS = {max_jobs}: {max_jobs - 1} jobs fit "
            f"({max_jobs * per_job // 1024} KiB of per-job registers)."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-jobs", type=int)
    args = parser.parse_args()
    print(summarize(args.out, args.max_jobs))


if __name__ == "__main__":
    main()
