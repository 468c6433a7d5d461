"""Speed of the fabric simulator's kernel (evaluation/fabric) against the event loop of git
revision 113030d (before issue 22's speed work, read out of git at bench time:
bench/reference_kernel_113030d.py), run behind today's glue, side by side in one run here.

    python bench/fabric_speed.py                   # Table 1 default (table1), 3 seeds
    python bench/fabric_speed.py --preset v1 --seeds 5 --chunk-kb 2048
    python bench/fabric_speed.py --only-128        # the 128-node 10-pass Symphony run alone

Per mode (baseline, Symphony) the two kernels run the same (config, seed) in turn, one process,
one core, JIT compile excluded (one warm-up run each first). Times are the kernel call's thread
CPU time (the machine is shared: a wall clock would count the other processes' share of the
core). The two are not the same run event for event: today's kernel pops events of equal time
in push order (ns-3's rule), the reference in its binary heap's order, so each row also shows
both kernels' events and collective completion times (they differ by the seed-to-seed kind of
amount, not more). Reported: the speedup (reference time / today's, and per event), today's
switch hops/s and events/s per core. `--with-128` adds the preset's 128-node, 10-pass Symphony
run (today's kernel; `--reference`: the reference's instead, to run beside it on the other core
for the ratio; `--revision REV`: the whole simulator of git revision REV): minutes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.reference_kernel_113030d import REVISION, ROOT, run_reference
from evaluation.fabric import sim as today
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.scenarios import PRESETS
from evaluation.fabric.sim import simulate

# The glue times the kernel call with time.perf_counter: thread CPU time instead.
today.time.perf_counter = time.thread_time  # type: ignore[attr-defined]


def compare(cfg: FabricConfig, seeds: int) -> str:
    warm = replace(cfg, chunk_bytes=16 << 10, passes=1)
    simulate(warm, 0, kernel=run_reference), simulate(warm, 0)
    t_ref = t_new = 0.0
    hops = events = ev_ref = 0
    cct_ref: list[float] = []
    cct_new: list[float] = []
    for seed in range(seeds):
        a = simulate(cfg, seed, kernel=run_reference)
        b = simulate(cfg, seed)
        for name, r in (("reference", a), ("today", b)):
            if r.stats["error"]:
                raise SystemExit(f"{cfg.mode} seed {seed}: {name}'s run failed ({r.stats})")
        t_ref += a.wall_s
        t_new += b.wall_s
        hops += b.stats["switch_hops"]
        events += b.stats["events"]
        ev_ref += a.stats["events"]
        cct_ref.append(a.cct_max_us / 1000)
        cct_new.append(b.cct_max_us / 1000)
    per_event = (t_ref / ev_ref) / (t_new / events)
    return (
        f"fabric {cfg.mode:9s}: {cfg.hosts} nodes, {seeds} seeds, "
        f"{events / seeds / 1e6:.1f} M events per seed (reference {ev_ref / seeds / 1e6:.1f} M); "
        f"reference {t_ref:.2f} s, today {t_new:.2f} s of one core: {t_ref / t_new:.2f}x "
        f"({per_event:.2f}x per event); today {hops / t_new / 1e6:.1f} M switch hops/s and "
        f"{events / t_new / 1e6:.1f} M events/s per core; CCT ms reference "
        f"{', '.join(f'{c:.1f}' for c in cct_ref)}, today {', '.join(f'{c:.1f}' for c in cct_new)}"
    )


# The 128-node run and its warm-up (the JIT compile, excluded from the time), as overrides of
# the preset; declared once for this process and for the child of `run_128_at`. Ten passes take
# ten times the simulated time: the time limit (max_ms) is scaled by `passes` where it is applied.
RUN_128: dict[str, Any] = {"hosts": 128, "passes": 10, "mode": "symphony"}
WARM_UP: dict[str, Any] = {"hosts": 16, "passes": 1, "chunk_bytes": 16 << 10}


def _label() -> str:
    return f"{RUN_128['hosts']} nodes, {RUN_128['passes']} passes, Symphony, seed 0"


def run_128(base: FabricConfig, preset: str, reference: bool = False) -> str:
    cfg = replace(base, **RUN_128, max_ms=base.max_ms * RUN_128["passes"])
    kernel = run_reference if reference else today.run_kernel
    simulate(replace(cfg, **WARM_UP), 0, kernel=kernel)
    r = simulate(cfg, 0, kernel=kernel)
    assert r.stats["error"] == 0, r.stats["error"]
    who = f"the {REVISION} reference" if reference else "today's kernel"
    return (
        f"{preset}, {_label()}, {who}: {r.wall_s:.0f} s of one core "
        f"({r.stats['events'] / 1e9:.2f} G events, {r.stats['switch_hops'] / 1e6:.0f} M switch "
        f"hops, {r.stats['switch_hops'] / r.wall_s / 1e6:.1f} M/s; simulated CCT "
        f"{r.cct_max_us / 1000:.0f} ms)"
    )


# The 128-node run in a child process whose `evaluation` and `symphony` packages are those of
# another revision (argv: its tree, the preset, RUN_128 and WARM_UP as JSON): the whole
# simulator as it was, glue included. It cannot import this module beside the old packages.
_RUN_128_AT = """
import json, sys, time
from dataclasses import replace
sys.path.insert(0, sys.argv[1])
from evaluation.fabric import sim
sim.time.perf_counter = time.thread_time
from evaluation.fabric.scenarios import PRESETS
base = PRESETS[sys.argv[2]]
run, warm = json.loads(sys.argv[3]), json.loads(sys.argv[4])
cfg = replace(base, **run, max_ms=base.max_ms * run["passes"])
sim.simulate(replace(cfg, **warm), 0)
r = sim.simulate(cfg, 0)
assert r.stats["error"] == 0, r.stats["error"]
print(f"{r.wall_s:.0f} s of one core ({r.stats['events'] / 1e9:.2f} G events; simulated CCT "
      f"{r.cct_max_us / 1000:.0f} ms)")
"""


def run_128_at(revision: str, preset: str) -> str:
    """The 128-node 10-pass run with the simulator of git `revision` (its own glue and kernel,
    extracted with `git archive` under build/bench/): e.g. the kernel an issue's minutes were
    measured with, beside today's on the same machine."""
    tree = ROOT / "build" / "bench" / f"rev-{revision}"
    if not (tree / "evaluation").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=False
        )
        if archive.returncode != 0:
            raise SystemExit(f"bench: git cannot show revision {revision}: {archive.stderr!r}")
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUN_128_AT,
            str(tree),
            preset,
            *map(json.dumps, (RUN_128, WARM_UP)),
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise SystemExit(f"bench: the run at {revision} failed:\n{child.stderr}")
    result = child.stdout.strip()
    return f"{preset}, {_label()}, revision {revision}: {result}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="table1",
        help="the configuration (scenarios.PRESETS; table1: the paper's stack, 2D ring)",
    )
    ap.add_argument("--chunk-kb", type=int, help="chunk size (default: the preset's)")
    ap.add_argument("--with-128", action="store_true", help="also the 128-node 10-pass run")
    ap.add_argument("--only-128", action="store_true", help="only the 128-node 10-pass run")
    ap.add_argument(
        "--reference",
        action="store_true",
        help="the 128-node run with the reference kernel instead (3x as long: 5696 s against "
        "1913 s at 6858bce; run it beside today's on the other core for the ratio)",
    )
    ap.add_argument(
        "--revision",
        metavar="REV",
        help="the 128-node run with the whole simulator of git revision REV instead (e.g. "
        "34f0be5, the kernel issue 32's '35 minutes' were measured with)",
    )
    args = ap.parse_args()
    if (args.reference or args.revision) and not (args.only_128 or args.with_128):
        ap.error(
            "--reference and --revision choose the 128-node run's kernel: add --only-128 "
            "or --with-128"
        )
    if args.reference and args.revision:
        ap.error("--reference and --revision are two kernels for one run: choose one")
    if args.revision and args.chunk_kb:
        ap.error("--revision runs the preset as that revision defines it: no --chunk-kb")
    base = PRESETS[args.preset]
    if args.chunk_kb:
        base = replace(base, chunk_bytes=args.chunk_kb << 10)
    if not args.only_128:
        for mode in ("baseline", "symphony"):
            print(compare(replace(base, mode=mode), args.seeds), flush=True)
    if args.with_128 or args.only_128:
        if args.revision:
            print(run_128_at(args.revision, args.preset), flush=True)
        else:
            print(run_128(base, args.preset, args.reference), flush=True)


if __name__ == "__main__":
    main()
