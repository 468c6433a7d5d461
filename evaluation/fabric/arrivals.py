"""Jobs arriving at random on one cluster (the paper's Fig. 7c): ring all-reduce jobs of 16, 32
and 64 nodes, of 4, 16 and 32 MB, repeated for a number of passes, 3-4 at once, each on its own
nodes and with its own Job_ID, started at random times; per job its completion time (JCT: from
its arrival to its last NPU's last pass).

The paper: "a continuous stream of jobs (Ring AllReduce operations) with varying scales (16, 32,
and 64 nodes), workload sizes (4, 16, and 32MB), and durations (controlled by varying the
number of operation passes from 16 to 128). The arrival times are randomized ... maintaining a
maximum concurrency of 3-4 jobs." What it leaves open, and our choices (docs/training.md):
one wave of 3 or 4 jobs per run (not a stream), whose sizes fit the cluster; each job on
nodes drawn at random (a busy cluster's scheduler places a job where nodes are free), one 1D
ring over them in host order; arrivals uniform in the first `ARRIVAL_WINDOW_MS`; passes back
to back per NPU (pass p + 1 when the NPU finished pass p, as `collectives.build_sends`).
`PASSES` is the paper's 16-128 scaled down by `PASS_SCALE` (a run of 128 passes of 32 MB on
64 nodes is billions of events; docs/training.md has the cost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.fabric.config import FabricConfig
from evaluation.fabric.training import IterationGraph, Scales
from evaluation.fabric.workload_text import Comm

MB = 1 << 20
JOB_NODES = (16, 32, 64)
JOB_BYTES = (4 * MB, 16 * MB, 32 * MB)
PASS_SCALE = 8  # the paper's 16-128 passes / 8
PASSES = (16 // PASS_SCALE, 128 // PASS_SCALE)
ARRIVAL_WINDOW_MS = 20.0
STREAM = 7_000  # the jobs' own random stream (the run's draws are untouched by them)
ARRIVALS_VERSION = 1  # bump when the draws or the jobs' rules change (training_eval's keys)


@dataclass(frozen=True)
class ArrivingJob:
    job: int  # Job_ID, 1..
    hosts: tuple[int, ...]
    size_bytes: int
    passes: int
    arrival_ns: int


def draw_jobs(hosts: int, seed: int) -> list[ArrivingJob]:
    """A run's jobs: 3 or 4 of them, their sizes drawn until they fit `hosts` nodes."""
    rng = np.random.default_rng([seed, STREAM])
    count = int(rng.integers(3, 5))
    while True:
        sizes = [int(rng.choice(JOB_NODES)) for _ in range(count)]
        if sum(sizes) <= hosts:
            break
    order = rng.permutation(hosts)
    jobs, used = [], 0
    for j, n in enumerate(sizes, start=1):
        nodes = tuple(sorted(int(h) for h in order[used : used + n]))
        used += n
        jobs.append(
            ArrivingJob(
                job=j,
                hosts=nodes,
                size_bytes=int(rng.choice(JOB_BYTES)),
                passes=int(rng.integers(PASSES[0], PASSES[1] + 1)),
                arrival_ns=int(rng.uniform(0, ARRIVAL_WINDOW_MS * 1e6)),
            )
        )
    return jobs


def arrivals_graph(cfg: FabricConfig, jobs: list[ArrivingJob]) -> tuple[IterationGraph, dict]:
    """The jobs as one graph; also each job's arrival node ids (its NPUs start there)."""
    g = IterationGraph(cfg.hosts, cfg.active_chunks, cfg.splits, Scales())
    starts = {}
    for jb in jobs:
        members = np.array(jb.hosts, dtype=np.int64)
        g.use_job(jb.job, members)
        prev = g.compute(jb.arrival_ns, [])  # 1 cycle = 1 ns: the job arrives after this
        starts[jb.job] = prev
        ring = members.reshape(1, -1)
        for _ in range(jb.passes):
            prev = g.collective(Comm("ALLREDUCE", jb.size_bytes), [ring], [0], prev)
    return g, starts
