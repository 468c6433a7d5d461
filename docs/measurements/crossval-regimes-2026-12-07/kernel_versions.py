"""kernel-versions.md: every cross-validation cell's median CCT over the kernel's seeds 100-139
in each kernel version the sweep store holds (it keys runs on RESULTS_VERSION).

    python docs/measurements/crossval-regimes-2026-12-07/kernel_versions.py \
        build/crossval/runs.jsonl > docs/measurements/crossval-regimes-2026-12-07/kernel-versions.md
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

NOTES = {
    3: "before the NIC's round robin",
    4: "with it",
    5: "with the tie order as well",
    6: "with the ACK in its arrival as well",
}


def main() -> None:
    cct: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for line in Path(sys.argv[1]).read_text().splitlines():
        d = json.loads(line)
        scenario, variant, _, seed, _, version = d["key"].split("|")
        if scenario.startswith("xval-") and 100 <= int(seed) < 140:
            cct[(scenario.removeprefix("xval-"), variant, int(version[1:]))].append(
                d["row"]["cct_us"] / 1e3
            )
    complete = {k: v for k, v in cct.items() if len(v) == 40}
    versions = sorted({v for _, _, v in complete})
    cells = sorted({(s, var) for s, var, _ in complete})
    first, last = versions[0], versions[-1]
    print(f"# The cross-validation's cells in kernel versions {', '.join(map(str, versions))}")
    print()
    print("Median CCT (ms) over the kernel's seeds 100-139 of every cell of `crossval --part")
    print("regimes`; " + "; ".join(f"version {v} {NOTES.get(v, '')}" for v in versions) + ".")
    print('(docs/evaluation.md, "Cross-validation in every regime"). Read from the sweep store,')
    print("which keys runs on the version (`kernel_versions.py`).")
    print()
    prev = versions[-2] if len(versions) > 1 else last
    heads = [f"v{v}" for v in versions] + [f"v{first} -> v{last}", f"v{prev} -> v{last}"]
    print("| cell | variant | " + " | ".join(heads) + " |")
    print("|---|---|" + "---:|" * len(heads))
    for s, var in cells:
        med = {
            v: statistics.median(complete[(s, var, v)]) for v in versions if (s, var, v) in complete
        }
        vals = [f"{med[v]:.1f}" if v in med else "" for v in versions]
        for a, b in ((first, last), (prev, last)):
            vals.append(f"{med[b] / med[a] * 100 - 100:+.1f} %" if a in med and b in med else "")
        print(f"| {s} | {var} | " + " | ".join(vals) + " |")


if __name__ == "__main__":
    main()
