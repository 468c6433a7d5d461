"""The speed reference: the event loop of git revision 113030d (before issue 22's speed work),
read out of the repository's history at bench time, behind today's inputs:
`sim.simulate(cfg, seed, kernel=run_reference)` runs everything of today's glue but the event
loop, so the two kernels see the same arrays whatever the glue has become since.

The file is `git show 113030d:evaluation/fabric/kernel.py`, written under build/bench/ (numba
caches its compiled code beside it) and imported from there; it calls today's
`evaluation.fabric.symphony_kernel` (the golden arithmetic, whose signature it shares)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from evaluation.fabric.kernel_io import Background, Flows, Limits, Nic, Outputs, Symphony, Topology

REVISION = "113030d"
ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{REVISION}:evaluation/fabric/kernel.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        raise SystemExit(
            f"bench: the reference kernel is read from git revision {REVISION}, which this "
            f"checkout cannot show (a clone with its history is needed): {detail.strip()}"
        ) from e
    path = ROOT / "build" / "bench" / f"reference_kernel_{REVISION}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"reference_kernel_{REVISION}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # registered before it runs: numba's cache finds a cached kernel's module by its name
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ref = _load()


def run_reference(
    seed: int,
    mode: int,
    topo: Topology,
    flows: Flows,
    sym: Symphony,
    nic: Nic,
    bg: Background,
    lim: Limits,
    out: Outputs,
) -> int:
    """113030d's `kernel.run`, its ~80 positional arguments in their order."""
    return ref.run(
        seed,
        mode,
        topo.port_ser,
        topo.port_switch,
        topo.prop_ps,
        topo.buffer_pkts,
        topo.qthr,
        topo.pfc,
        topo.sw_buf,
        topo.sw_free0,
        topo.pfc_shift,
        topo.resume_pkts,
        flows.src,
        flows.dst,
        flows.job,
        flows.step,
        flows.npk,
        flows.path,
        flows.plen,
        flows.slot,
        flows.sig,
        flows.psn0,
        flows.succ_ptr,
        flows.succ_idx,
        flows.npred,
        flows.rpath,
        flows.rplen,
        flows.start,
        topo.n_hosts,
        flows.n_jobs,
        flows.n_steps,
        sym.prm,
        topo.n_switches,
        sym.late_start_ps,
        sym.log_tab,
        sym.alpha_tab,
        sym.thr_tab,
        nic.line_gbps,
        nic.mtu,
        nic.g,
        nic.t_alpha,
        nic.t_dec,
        nic.t_inc,
        nic.fast_recovery,
        nic.ai,
        nic.hai,
        nic.min_rate,
        nic.clamp_tgt,
        nic.rate_first_cnp,
        flows.win,
        nic.var_win,
        nic.ack_bytes,
        nic.ack_ctrl,
        nic.ack_hi_nic,
        nic.nack_ps,
        nic.cnp_int_ps,
        nic.rto_ps,
        flows.ce_psn,
        bg.port,
        bg.t0,
        bg.t1,
        bg.gap,
        lim.sample_ps,
        lim.max_samples,
        lim.max_ps,
        lim.pool_size,
        out.f_done,
        out.f_begin,
        out.job_end,
        out.ov_series,
        out.rx_series,
        out.job_maxov,
        out.stats,
        out.js,
        out.cc_trace,
    )
