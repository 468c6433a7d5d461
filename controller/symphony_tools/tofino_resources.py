"""Resource summary of a Tofino2 compile, read from the compiler's own logs.

p4c's Tofino backend writes `resources.json` (per MAU stage: which table uses which SRAM, TCAM,
map RAM, gateway and stateful ALU) and `metrics.json` under `<out>/pipe/logs/` when run with
`-g --verbose 2`. This module only counts what those files say.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from symphony.p4names import JOB_COUNTERS, JOB_REGISTERS, TOFINO_JOB_REGISTERS

# Tofino2: 20 MAU stages; per stage 80 SRAMs (128 Kbit), 24 TCAMs (44 x 512), 4 stateful ALUs.
STAGES = 20
SRAM_BITS = 128 * 1024


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
    hash_bits: int = 0  # hash-unit output bits in use, summed over the stages

    @property
    def depth(self) -> int:
        """Stages the pipeline runs through: the last used stage + 1 (gaps still count)."""
        return max(self.stages_used) + 1 if self.stages_used else 0

    def part_stages(self) -> dict[str, list[int]]:
        """The stages holding Symphony's tables and those holding the rest of the program."""
        parts: dict[str, set[int]] = {"symphony": set(), "program": set(), "unnamed": set()}
        for name, use in self.tables.items():
            parts[part_of(name)] |= use.stages
        return {part: sorted(stages) for part, stages in parts.items()}


# The library's P4 files: the compiler names the helper tables it makes for their statements
# tbl_<file><line> (and their gateways <table>-gateway).
_LIBRARY_FILES = (
    "classify",
    "psn",
    "job_state",
    "throttle",
    "queue_mark",
    "ecn_mark",
    "symphony_lib",
)


def part_of(table: str) -> str:
    """Which part a table belongs to. "symphony": the library's absolute P4Runtime names
    (SymphonyIngress.*, SymphonyEgress.*) and the helper tables the compiler makes for statements
    in the library's files; "unnamed": the compiler's free-standing gateways (cond-N), which
    name no source; "program": the rest, our tops' `forward` included."""
    if ".forward." in table:
        return "program"
    if table.startswith("cond-"):
        return "unnamed"
    if "symphony" in table.lower():
        return "symphony"
    base = table.removeprefix("tbl_").split("-")[0].rstrip("0123456789_")
    return "symphony" if table.startswith("tbl_") and base in _LIBRARY_FILES else "program"


@dataclass(frozen=True)
class PerIndexArray:
    """A register (stateful table) or counter (statistics table) from context.json."""

    name: str
    kind: str  # "register" | "counter"
    size: int
    bits: int  # per index


def per_index_arrays(context: Path) -> list[PerIndexArray]:
    """Registers and counters with their size and width per index, as the compiler placed them."""
    out: list[PerIndexArray] = []
    for t in json.loads(context.read_text()).get("tables", []):
        if t.get("table_type") == "stateful":
            bits = int(t["alu_width"]) * (2 if t.get("dual_width_mode") else 1)
            out.append(PerIndexArray(t["name"], "register", int(t["size"]), bits))
        elif t.get("table_type") == "statistics":
            bits = int(t.get("packet_counter_resolution", 0)) + int(
                t.get("byte_counter_resolution", 0)
            )
            out.append(PerIndexArray(t["name"], "counter", int(t["size"]), bits))
    return out


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
    hash_bits = sum(
        len(stage.get("hash_bits", {}).get("bits", [])) for stage in mau.get("mau_stages", [])
    )
    return Summary(sorted(used), int(mau.get("nStages", STAGES)), dict(tables), hash_bits)


def summarize(out: Path, max_jobs: int | None = None) -> str:
    """Markdown report of one compile."""
    lines = [f"# Tofino2 resources (`{out}`)", ""]
    res = _find(out, "resources.json")
    if res is None:
        return "\n".join([*lines, "No resources.json found: compile with `-g --verbose 2`."]) + "\n"
    s = parse_resources(res)
    stage_list = ", ".join(map(str, s.stages_used))
    parts = s.part_stages()
    lines += [
        f"Pipeline depth: **{s.depth} of {s.n_stages} stages**; stages holding tables: "
        f"{len(s.stages_used)} ({stage_list})",
        "",
        f"Symphony's tables: stages {_span(parts['symphony'])}; the program's own tables: "
        f"stages {_span(parts['program'])}; the compiler's unnamed gateways (cond-N): "
        f"stages {_span(parts['unnamed'])}.",
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
        f"Hash bits in use (all stages): {s.hash_bits}.",
        "",
    ]
    lines += _per_job(out, max_jobs)
    return "\n".join(lines) + "\n"


def _span(stages: list[int]) -> str:
    if not stages:
        return "none"
    return f"{min(stages)}-{max(stages)} ({len(stages)} stages hold tables)"


def _per_job(out: Path, max_jobs: int | None) -> list[str]:
    """State bytes per job and the jobs that fit, from the arrays indexed by Job_ID."""
    context = _find(out, "context.json")
    if context is None or not max_jobs:
        return []
    # Job state is what the golden model calls so; the flow slots are indexed by a hash.
    job_arrays = {*JOB_REGISTERS.values(), *TOFINO_JOB_REGISTERS.values(), *JOB_COUNTERS.values()}
    arrays = [a for a in per_index_arrays(context) if a.name in job_arrays]
    regs = [a for a in arrays if a.kind == "register"]
    counters = [a for a in arrays if a.kind == "counter"]
    reg_bytes = sum(a.bits for a in regs) // 8
    cnt_bytes = sum(a.bits for a in counters) // 8
    lines = [
        "Per-job state (arrays indexed by Job_ID, from context.json):",
        "",
        "| array | kind | bits per job |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{a.name}` | {a.kind} | {a.bits} |" for a in sorted(arrays, key=lambda a: a.name)]
    others = [a for a in per_index_arrays(context) if a.name not in job_arrays]
    lines += [
        "",
        f"State bytes per job: **{reg_bytes} bytes of registers** + {cnt_bytes} bytes of "
        f"counters. Compiled with MAX_JOBS = {max_jobs}: **{max_jobs - 1} jobs fit** "
        f"(Job_ID 0 means untracked); {max_jobs * reg_bytes // 1024} KiB of per-job registers.",
    ]
    lines += [
        f"Also: `{a.name}` ({a.kind}, {a.size} x {a.bits} bits, not per job)." for a in others
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-jobs", type=int)
    args = parser.parse_args()
    print(summarize(args.out, args.max_jobs))


if __name__ == "__main__":
    main()
