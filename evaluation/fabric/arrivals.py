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

`draw_stream` is the stream itself (training_eval's part `fig7c-stream`): ten jobs of the
paper's 16-128 passes each, admitted 3 or 4 at a time; its rules in its docstring.
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
# the stream (`draw_stream`): the paper's passes, jobs enough for the cap to pace them
STREAM_JOBS = 10
STREAM_PASSES = (16, 128)
STREAM_ARRIVAL_MS = 200.0  # well inside a job's 0.1-6 s: the concurrency cap paces the stream
STREAM_VERSION = 1


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


def draw_stream(
    hosts: int, seed: int, jobs: int = STREAM_JOBS, passes: tuple[int, int] = STREAM_PASSES
) -> tuple[list[ArrivingJob], dict[int, tuple[int, ...]]]:
    """A stream of `jobs` jobs (the paper's Fig. 7c as it describes it): sizes, bytes and
    passes (the paper's 16-128) drawn per job, arrivals uniform in the first
    `STREAM_ARRIVAL_MS`, a concurrency cap of 3 or 4 per run. Job j starts once it has arrived
    and jobs 1..j-cap have finished (a scheduler that admits at most `cap` jobs, in arrival
    order) and the jobs that last held its nodes have finished; its nodes are those freed
    longest ago (random among equals: a busy cluster's scheduler places a job where nodes are
    free). Returns the jobs and, per job, the jobs it waits for."""
    rng = np.random.default_rng([seed, STREAM, 2])
    cap = int(rng.integers(3, 5))
    arrivals = np.sort(rng.uniform(0, STREAM_ARRIVAL_MS * 1e6, size=jobs)).astype(np.int64)
    holder = np.zeros(hosts, dtype=np.int64)  # the job that last held each node (0: none)
    out, waits = [], {}
    for j in range(1, jobs + 1):
        n = int(rng.choice(JOB_NODES))
        order = np.lexsort((rng.random(hosts), holder))
        nodes = np.sort(order[:n])
        held = {int(k) for k in holder[nodes]} - {0}
        waits[j] = tuple(sorted(held | set(range(1, j - cap + 1))))
        holder[nodes] = j
        out.append(
            ArrivingJob(
                job=j,
                hosts=tuple(int(h) for h in nodes),
                size_bytes=int(rng.choice(JOB_BYTES)),
                passes=int(rng.integers(passes[0], passes[1] + 1)),
                arrival_ns=int(arrivals[j - 1]),
            )
        )
    return out, waits


def arrivals_graph(
    cfg: FabricConfig,
    jobs: list[ArrivingJob],
    waits: dict[int, tuple[int, ...]] | None = None,
) -> tuple[IterationGraph, dict]:
    """The jobs as one graph; also each job's start node ids (its NPUs start there: when it
    has arrived and, in a stream, the jobs it waits for have finished on all their NPUs)."""
    g = IterationGraph(cfg.hosts, cfg.active_chunks, cfg.splits, Scales())
    starts, last = {}, {}
    for jb in jobs:
        members = np.array(jb.hosts, dtype=np.int64)
        g.use_job(jb.job, members)
        prev = g.compute(jb.arrival_ns, [])  # 1 cycle = 1 ns: the job arrives after this
        before = (waits or {}).get(jb.job, ())
        if before:
            prev = g.compute(0, [prev])
            for k in before:  # every NPU of job k finished before any of this job starts
                g.edges.append(
                    np.stack(
                        [np.repeat(last[k], prev.shape[0]), np.tile(prev, last[k].shape[0])], 1
                    )
                )
        starts[jb.job] = prev
        ring = members.reshape(1, -1)
        for _ in range(jb.passes):
            prev = g.collective(Comm("ALLREDUCE", jb.size_bytes), [ring], [0], prev)
        last[jb.job] = prev
    return g, starts
