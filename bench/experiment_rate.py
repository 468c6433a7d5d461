"""The highest emulated link rate the closed-loop testbed sustains on this machine, against the
rate `make experiment` uses: the headroom docs/experiments.md states.

At each link rate R (packets/s) it runs, on the experiment's own testbed (bmv2 + controller +
the emulated hosts, evaluation/hosts/), the two runs that load it most per unit of link rate: one
flow alone through the bottleneck (2 s of packets at R) and the two-flow test with both flows
starting together (up to 2R into bmv2 until DCQCN cuts them). A rate is sustained when, in every
repetition, no frame was lost anywhere but a switch queue (evaluation/hosts/losses.py), the
hosts' worst lateness stayed under the experiment's limit at that rate (half the shortest scaled
DCQCN period: it shrinks as R grows) and the lone flow finished within 5 % of R's line time.

    python bench/experiment_rate.py --rates 4000,8000,12000,16000 --reps 2

Needs root, simple_switch_grpc and `make build`; uses the experiment's ports (veth40-47,
P4Runtime 9759, Thrift 9290), so not while `make experiment` runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.hosts import experiments as ex  # noqa: E402
from evaluation.hosts import runs  # noqa: E402
from evaluation.hosts.testbed import Testbed  # noqa: E402

# What each experiment of `make experiment` offers bmv2 at most, packets/s: two NICs at 4000
# (experiment 1), four NICs at 2500 (experiment 2). The two-flow trial at rate R offers 2R.
USED = {"experiment 1 (2 x 4000)": 8000.0, "experiment 2 (4 x 2500)": 10000.0}


def trial(tb: Testbed, rate: float, seed: int) -> dict:
    setup = ex.Setup(line_pps=rate)
    packets = int(2 * rate)
    name = f"{rate:.0f}-{seed}"
    alone = ex.run_alone(tb, setup, packets=packets, seed=seed, name=f"rate-alone-{name}")
    pair = ex.run_pair(
        tb,
        setup,
        ex.BASELINE,
        offset=0.0,
        packets=packets,
        seed=seed,
        name=f"rate-pair-{name}",
    )
    limit = setup.lateness_limit_ms()
    # runs.judge: a loss outside a queue, lateness over the limit, a lone flow 5 % slow...
    why = [w for w in (runs.judge(alone, limit), runs.judge(pair, limit)) if w]
    return {
        "rate": rate,
        "seed": seed,
        "alone_stretch": alone["link_stretch"],
        "lag_ms": max(alone["max_lag_ms"], pair["max_lag_ms"]),
        "limit_ms": limit,
        "harness_lost": sum(
            r[f"lost_{p}"]
            for r in (alone, pair)
            for p in ("veth", "capture", "pipeline", "output", "socket")
        ),
        "queue_lost": alone["lost_queue"] + pair["lost_queue"],
        "ok": not why,
        "why": "; ".join(why),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="4000,8000,12000,16000")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Testbed(Path(tmp)) as tb:
        for rate in rates:
            for seed in range(args.reps):
                r = trial(tb, rate, seed)
                rows.append(r)
                print(
                    f"{rate:7.0f} pkt/s seed {seed}: lone flow {r['alone_stretch']:.3f} x line"
                    f" time, worst lateness {r['lag_ms']:.2f} ms (limit {r['limit_ms']:.2f}),"
                    f" frames lost by the harness {r['harness_lost']}, in queues"
                    f" {r['queue_lost']}: {'ok' if r['ok'] else r['why']}",
                    flush=True,
                )
    ok = [rate for rate in rates if all(r["ok"] for r in rows if r["rate"] == rate)]
    best = max(ok, default=0.0)
    print(
        f"highest link rate sustained in every repetition: {best:.0f} packets/s"
        f" ({2 * best:.0f} packets/s offered to bmv2)"
    )
    for what, used in USED.items():
        print(f"  {what}: headroom x{2 * best / used:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
