"""One kernel run's inputs as the files of our ns-3 driver (docs/evaluation.md, "Cross-validation
against ns-3"): the same flows, start dependencies, topology, NIC constants and Symphony tables,
so that ns-3 runs exactly what the kernel runs. ns-3 and the driver are built by hand outside
the repository; only these writers and ns-3's numbers (`crossval_regimes.NS3`) are committed.

Files (whitespace separated, `#` comments):
- workload: `flow <id> <src> <dst> <bytes> <sport> <job> <step> <psn0> <slot> <sig> <start_ps>`
  (start_ps -1: the flow starts when the last of its predecessors is delivered, last byte in
  order at the receiver's NIC) and `edge <pred> <succ>`;
- topology: HPCC's format (`nodes switches links`, the switch ids, `a b rate delay error`), node
  ids as the kernel's ns-3 ECMP hash numbers them (`topology.Fabric.node_id`);
- config: HPCC's `mix/config.txt` keys (CC_MODE 1), every NIC value from the profile (`Dcqcn`),
  RED and the buffer from the FabricConfig, plus `SWITCH_ACK_HIGH_PRIO` (the switches'
  `AckHighPrio` attribute: ACKs/NACKs to the strict-priority queue 0, outside PFC's
  accounting, as the kernel's `ack_queue="control"`);
- symphony: the golden model's tables and each job's action data (`symphony_kernel`), the rows
  the kernel installs.

    python -m evaluation.fabric.ns3_export --scenario table1 --seed 100 --out DIR
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.fabric import kernel_state, topology
from evaluation.fabric import symphony_kernel as sk
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.sim import TICK_NS, prepare
from evaluation.fabric.topology import (
    CustomFlows,
    Workload,
    build_fabric,
)

KB = 1000  # HPCC's KMIN/KMAX maps count kilobytes of 1000 bytes


def whole_ns_transmissions(set_attr: Callable[[Any, str, Any], None] = setattr) -> None:
    """Give the kernel ns-3's time arithmetic for transmissions: every frame's transmission
    time in whole ns (`DataRate::CalculateBytesTxTime`, Time(int64x64).Round()), data and ACK
    alike, by patching how the kernel's port rows are built. For the packet-level comparisons
    only (the kernel's own runs keep exact ps); `set_attr` is pytest's monkeypatch.setattr in
    tests, so the patch is undone after them."""
    set_attr(topology, "_gbps_ser", lambda cfg, gbps: round(cfg.mtu * 8 / gbps) * 1000)
    rows_of = kernel_state.port_rows

    def port_rows(topo: topology.Topology, nic: Any) -> np.ndarray:
        rows = rows_of(topo, nic)
        exact = topo.port_ser * nic.ack_bytes / nic.mtu
        rows[:, kernel_state.PT_ACK_SER] = np.round(exact / 1000).astype(np.int64) * 1000
        return rows

    set_attr(kernel_state, "port_rows", port_rows)


def workload_text(cfg: FabricConfig, wl: Workload) -> str:
    """The workload file: every flow with its sender's source port (ns-3 hashes it for ECMP) and
    Symphony's per-flow facts, then the start dependencies."""
    nf = wl.f_src.shape[0]
    sport = wl.f_sport if wl.f_sport.shape[0] == nf else None
    if sport is None:
        raise ValueError("the workload has no source ports: run it with ecmp='ns3'")
    lines = [
        "# flow id src dst bytes sport job step psn0 slot sig start_ps",
        f"# {nf} flows, payload {cfg.payload_bytes} B per packet",
    ]
    for f in range(nf):
        lines.append(
            f"flow {f} {wl.f_src[f]} {wl.f_dst[f]} {wl.f_npk[f] * cfg.payload_bytes}"
            f" {sport[f]} {wl.f_job[f]} {wl.f_step[f]} {wl.f_psn0[f]} {wl.f_slot[f]}"
            f" {wl.f_sig[f]} {wl.f_start_ps[f]}"
        )
    for f in range(nf):
        for s in wl.dag.succ_idx[wl.dag.succ_ptr[f] : wl.dag.succ_ptr[f + 1]]:
            lines.append(f"edge {f} {s}")
    return "\n".join(lines) + "\n"


def topology_text(cfg: FabricConfig) -> str:
    """HPCC's topology file for a two-tier fabric: hosts 0..H-1, then the ToRs, then the
    spines, every ToR linked to every spine."""
    if cfg.fabric != "2tier":
        raise ValueError(f"only the 2tier fabric is exported, not {cfg.fabric!r}")
    fab = build_fabric(cfg)
    per_tor = cfg.hosts // cfg.tors
    tors = [fab.node_id(t) for t in range(cfg.tors)]
    spines = [fab.node_id(cfg.tors + s) for s in range(cfg.spines)]
    rate = f"{cfg.link_gbps:g}Gbps"
    delay = f"{cfg.prop_ns / 1000:g}us"
    links = [(h, tors[h // per_tor]) for h in range(cfg.hosts)]
    links += [(t, s) for t in tors for s in spines]
    out = [f"{cfg.hosts + len(tors) + len(spines)} {len(tors) + len(spines)} {len(links)}"]
    out.append(" ".join(str(n) for n in tors + spines))
    out += [f"{a} {b} {rate} {delay} 0" for a, b in links]
    return "\n".join(out) + "\n"


def config_text(cfg: FabricConfig) -> str:
    """HPCC's config keys with the profile's values (CC_MODE 1: DCQCN, Mellanox's rules)."""
    d = cfg.cc
    if d.rules != "mellanox":
        raise ValueError(f"ns-3 runs HPCC's Mellanox rules, not {d.rules!r} ({d.name})")
    if d.ack_queue == "control-bmv2":
        raise ValueError("ack_queue 'control-bmv2' models bmv2's per-queue rates; ns-3 has none")
    bps = round(cfg.link_gbps * 1e9)
    # HPCC's maps count KB of the egress queue's bytes; the kernel's RED whole frames of `mtu`
    # bytes, rounded down from them (config.HPCC_RED): the smallest KB that many frames reach.
    kmin, kmax = (math.ceil(k * cfg.mtu / KB) for k in (cfg.red.k_min, cfg.red.k_max))
    values: dict[str, object] = {
        "ENABLE_QCN": 1,
        "USE_DYNAMIC_PFC_THRESHOLD": int(cfg.pfc),
        "PACKET_PAYLOAD_SIZE": cfg.payload_bytes,
        "CC_MODE": 1,
        "ALPHA_RESUME_INTERVAL": f"{d.t_alpha_us:g}",
        "RATE_DECREASE_INTERVAL": f"{d.t_dec_us:g}",
        "CLAMP_TARGET_RATE": int(d.clamp_target_rate),
        "RP_TIMER": f"{d.t_inc_us:g}",
        "EWMA_GAIN": f"{d.g:.10g}",
        "FAST_RECOVERY_TIMES": d.fast_recovery,
        "RATE_AI": f"{d.ai_gbps * 1000:g}Mb/s",
        "RATE_HAI": f"{d.hai_gbps * 1000:g}Mb/s",
        "MIN_RATE": f"{d.min_gbps * 1000:g}Mb/s",
        "DCTCP_RATE_AI": "1000Mb/s",
        "ERROR_RATE_PER_LINK": "0.0000",
        "L2_CHUNK_SIZE": 4000,
        "L2_ACK_INTERVAL": 1,
        "L2_BACK_TO_ZERO": 0,
        "HAS_WIN": int(d.has_win),
        "GLOBAL_T": int(d.global_t),
        "VAR_WIN": int(d.var_win),
        "FAST_REACT": 1,
        "U_TARGET": 0.95,
        "MI_THRESH": 0,
        "INT_MULTI": 1,
        "MULTI_RATE": 0,
        "SAMPLE_FEEDBACK": 0,
        "PINT_LOG_BASE": 1.05,
        "PINT_PROB": 1.0,
        "RATE_BOUND": 1,
        "ACK_HIGH_PRIO": int(d.ack_high_prio),
        "SWITCH_ACK_HIGH_PRIO": int(d.ack_queue == "control"),
        "KMAX_MAP": f"1 {bps} {kmax}",
        "KMIN_MAP": f"1 {bps} {kmin}",
        "PMAX_MAP": f"1 {bps} {cfg.red.p_max:g}",
        "BUFFER_SIZE": round(cfg.switch_buffer_pkts * cfg.mtu / (1 << 20)),
    }
    return "".join(f"{k} {v}\n" for k, v in values.items())


def symphony_text(cfg: FabricConfig, n_jobs: int) -> str:
    """The golden model's tables and the jobs' action data, as the kernel installs them (the
    paper's policy unless cfg.symphony says otherwise; k = 0 for a baseline run)."""
    log_tab, alpha_tab, thr_tab = sk.golden_tables()
    params = cfg.symphony if cfg.mode == "symphony" else cfg.symphony.merged({"k": 0.0})
    row = sk.action_row(params.to_action_params(TICK_NS))
    out = ["symphony v1"]
    for name, tab in (("logtab", log_tab), ("alphatab", alpha_tab), ("thrtab", thr_tab)):
        out.append(f"{name} {tab.shape[0]} " + " ".join(str(int(v)) for v in tab))
    out += [f"job {j} " + " ".join(str(int(v)) for v in row) for j in range(1, n_jobs + 1)]
    out.append(f"late_start_ps {round(cfg.late_start_us * 1e6)}")
    return "\n".join(out) + "\n"


def workload(cfg: FabricConfig, seed: int, flows: CustomFlows | None = None) -> Workload:
    """The workload `sim.simulate(cfg, seed, flows)` runs (the same draws in the same order)."""
    return prepare(cfg, seed, flows)[2]


def write(cfg: FabricConfig, seed: int, out: Path, flows: CustomFlows | None = None) -> Workload:
    """The four files of one run in `out` (created): workload.txt, topology.txt, config.txt,
    symphony.txt."""
    if cfg.ecmp != "ns3":
        cfg = replace(cfg, ecmp="ns3")
    wl = workload(cfg, seed, flows)
    out.mkdir(parents=True, exist_ok=True)
    (out / "workload.txt").write_text(workload_text(cfg, wl))
    (out / "topology.txt").write_text(topology_text(cfg))
    (out / "config.txt").write_text(config_text(cfg))
    (out / "symphony.txt").write_text(symphony_text(cfg, wl.n_jobs))
    return wl


def main(argv: list[str] | None = None) -> None:
    from evaluation.fabric.crossval_regimes import SCENARIOS, scenario_config

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    wl = write(scenario_config(args.scenario), args.seed, args.out)
    print(f"{args.out}: {wl.f_src.shape[0]} flows")


if __name__ == "__main__":
    main()
