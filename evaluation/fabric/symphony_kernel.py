"""The golden model's per-packet algorithm (`symphony.model.switch_model.SwitchModel.process`, bmv2
target) as numba code over integer arrays, so the fabric simulator can run it at every switch
for every packet.

Nothing here computes a table: the log2, log2(alpha) and threshold tables are read from
`symphony.model.tables.lut_entries()`, the entries the controller installs on the switch, the
opcode classes from `symphony.model.switch_model`, and the integer steps mirror
`switch_model.py` line by line. The conformance suite (`conformance/`, its kernel adapter;
`tests/test_conformance.py` and `python -m conformance`, 1 M packets) feeds the same traces to
both and requires identical decisions, JobState and flow table.

State layout, one row per (switch, job), derived from the model so that a new register or
parameter fails here, at import, rather than drifting:
  `js[switch, job, :]`: one column per `JobState` field, in its order (`JS`, `JS_*`);
  `flows[switch, slot]`: the 64-bit flow_base register (sig:16 | step:16 | base:24);
  `prm[job, :]`: P_INSTALLED, then the job's action data in `JobParams.to_action_params`'s
  order (`ACTION_KEYS`, `P_*`), all zero for an uninstalled job.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from numba import njit

from evaluation.fabric.bits import bit_length
from symphony import p4names as p4n
from symphony.model import arithmetic as ar
from symphony.model import tables as tb
from symphony.model.params import JobParams
from symphony.model.switch_model import JobState, is_first, is_last, is_tracked_opcode


def _columns(names: tuple[str, ...], handled: str, what: str, first: int = 0) -> dict[str, int]:
    """name -> column (from `first`); raise when the model declares names other than the ones
    the kernel handles (space-separated, in order): the kernel must be extended, not silently
    keep a zero column or miss a parameter."""
    if names != tuple(handled.split()):
        raise ImportError(
            f"symphony_kernel handles {what} {handled.split()}, the model declares {names}:"
            " extend the kernel (and its conformance adapter) to match"
        )
    return {name: first + i for i, name in enumerate(names)}


JS = _columns(
    tuple(f.name for f in fields(JobState)),
    "step_min psn_rec step_max alpha window_packets window_ahead_packets win_start"
    " packets marks queue_marks",
    "the JobState fields",
)
(
    JS_STEP_MIN,
    JS_PSN_REC,
    JS_STEP_MAX,
    JS_ALPHA,
    JS_WINDOW_PACKETS,
    JS_WINDOW_AHEAD,
    JS_WIN_START,
    JS_PACKETS,
    JS_MARKS,
    JS_QUEUE_MARKS,
) = JS.values()
JS_FIELDS = len(JS)

ACTION_KEYS: tuple[str, ...] = tuple(JobParams().to_action_params())
P_INSTALLED = 0  # column 0; the action data follows
P = _columns(
    ACTION_KEYS,
    "mark_enable k_log tau_q8 t_win n_warmup n_sample alpha_max psn_absolute sym_gate",
    "the set_params action data",
    first=P_INSTALLED + 1,
)
(
    P_MARK_ENABLE,
    P_K_LOG,
    P_TAU_Q8,
    P_T_WIN,
    P_N_WARMUP,
    P_N_SAMPLE,
    P_ALPHA_MAX,
    P_PSN_ABSOLUTE,
    P_SYM_GATE,
) = P.values()
P_FIELDS = 1 + len(P)

# Opcode classes, one per 8-bit BTH opcode, from the model's: 0 untracked, else
# 1 + 2*is_first + 4*is_last.
OPCODE_KIND = np.array(
    [(1 + 2 * is_first(op) + 4 * is_last(op)) if is_tracked_opcode(op) else 0 for op in range(256)],
    dtype=np.int64,
)

STEP_MASK = ar.STEP_MASK
STEP_HALF = ar.STEP_HALF
PSN_MASK = ar.PSN_MASK
COIN_RANGE = ar.COIN_RANGE
TAU_ONE = ar.TAU_ONE
MASK32 = (1 << 32) - 1
M_BITS = ar.LOG_MANTISSA_BITS
DIRECT = 1 << (M_BITS + 1)  # x below this has its own log entry
PROB_TABLE_SIZE = ar.PROB_TABLE_SIZE


def log_index(x: int) -> int:
    """Index into the flat log table for the LPM bucket of x (the njit `_log_index` in Python)."""
    e = x.bit_length() - 1
    if e <= M_BITS:
        return x
    drop = e - M_BITS
    return DIRECT + (e - M_BITS - 1) * (1 << M_BITS) + ((x >> drop) - (1 << M_BITS))


def golden_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log2 table over the LPM buckets, log2 alpha table, coin threshold table), read from the
    entries `symphony.model.tables` generates for the switch."""
    size = DIRECT + (ar.PSN_BITS - M_BITS - 1) * (1 << M_BITS)
    log_p = np.full(size, -(1 << 30), dtype=np.int64)
    log_rec = np.full(size, -(1 << 30), dtype=np.int64)
    log_alpha = np.zeros(ar.ALPHA_LIMIT + 1, dtype=np.int64)
    thr = np.full(PROB_TABLE_SIZE, -1, dtype=np.int64)
    default_thr = -1
    for e in tb.lut_entries():
        if e.table in (p4n.LOG_P, p4n.LOG_PSN_REC):
            (lo, plen) = next(iter(e.match.values()))
            (log_p if e.table == p4n.LOG_P else log_rec)[log_index(lo)] = e.params["value"]
            assert ar.log_bucket(lo) == (lo, plen)
        elif e.table == p4n.LOG_ALPHA:
            log_alpha[e.match["alpha"]] = e.params["value"]
        elif e.table == p4n.PROB_THRESHOLD:
            if e.is_default:
                default_thr = e.params["threshold"]
            else:
                thr[e.match["d"]] = e.params["threshold"]
    # One log table serves p and psn_rec: the switch installs the same values in both.
    assert np.array_equal(log_p, log_rec) and (log_p[1:] > -(1 << 30)).all()
    assert (thr >= 0).all() and default_thr == COIN_RANGE
    return log_p, log_alpha, thr


def action_row(action: dict[str, int]) -> np.ndarray:
    """One `prm` row from `JobParams.to_action_params(...)`."""
    row = np.zeros(P_FIELDS, dtype=np.int64)
    row[P_INSTALLED] = 1
    for key, col in P.items():
        row[col] = action[key]
    return row


@njit(cache=True, inline="always")
def _log_index(x: int) -> int:
    e = bit_length(x) - 1  # floor(log2 x) for x >= 1
    if e <= M_BITS:
        return x
    drop = e - M_BITS
    return DIRECT + (e - M_BITS - 1) * (1 << M_BITS) + ((x >> drop) - (1 << M_BITS))


@njit(cache=True, inline="always")
def step_later(s: int, ref: int) -> bool:
    d = (s - ref) & STEP_MASK
    return 0 < d < STEP_HALF


@njit(cache=True, inline="always")
def step_earlier(s: int, ref: int) -> bool:
    return ((s - ref) & STEP_MASK) >= STEP_HALF


@njit(cache=True, inline="always")
def opcode_kind(opcode: int) -> int:
    """0 untracked, else 1 + 2*is_first + 4*is_last (`OPCODE_KIND`, from the model)."""
    return OPCODE_KIND[opcode & 0xFF]


def _process(
    js: np.ndarray,
    flows: np.ndarray,
    prm: np.ndarray,
    sw: int,
    job: int,
    slot: int,
    sig: int,
    step: int,
    opcode: int,
    psn: int,
    now: int,
    log_tab: np.ndarray,
    alpha_tab: np.ndarray,
    thr_tab: np.ndarray,
) -> tuple[int, int, bool]:
    """`SwitchModel.process` for a packet already classified to `job` (> 0, installed) at switch
    `sw`; `slot`/`sig` are `switch_model.flow_slot(src, dqpn)`. Returns (p or -1, threshold,
    outpacing). The caller draws the coin when 0 < threshold < 2^24 and calls `count_mark`."""
    kind = opcode_kind(opcode)
    st = js[sw, job]
    s = step
    # SPEC 2: progress in step.
    if kind & 2:
        flows[sw, slot] = (sig << 40) | (s << 24) | psn
        p = 0
    else:
        v = flows[sw, slot]
        if ((v >> 40) & 0xFFFF) == sig and ((v >> 24) & 0xFFFF) == s:
            p = (psn - (v & PSN_MASK)) & PSN_MASK
        else:
            p = -1
    if prm[job, P_PSN_ABSOLUTE]:
        p = psn

    # 1. Window rollover (bmv2: unsigned 32-bit difference).
    if ((now - st[JS_WIN_START]) & MASK32) >= prm[job, P_T_WIN]:
        if st[JS_WINDOW_PACKETS] >= prm[job, P_N_SAMPLE]:
            if st[JS_WINDOW_AHEAD] * TAU_ONE >= prm[job, P_TAU_Q8] * st[JS_WINDOW_PACKETS]:
                st[JS_ALPHA] = min(prm[job, P_ALPHA_MAX], st[JS_ALPHA] + 1)
            else:
                st[JS_ALPHA] = max(1, st[JS_ALPHA] - 1)
        st[JS_WINDOW_PACKETS] = 0
        st[JS_WINDOW_AHEAD] = 0
        st[JS_PSN_REC] = 0
        st[JS_WIN_START] = now & MASK32

    # 2. Traffic stats against step_min before this packet's update. The window's first packet
    #    (none counted yet: a fresh job or a window just closed) sets step_max.
    later = step_later(s, st[JS_STEP_MIN])
    if st[JS_WINDOW_PACKETS] == 0 or step_later(s, st[JS_STEP_MAX]):
        st[JS_STEP_MAX] = s
    st[JS_WINDOW_PACKETS] = (st[JS_WINDOW_PACKETS] + 1) & MASK32
    if later:
        st[JS_WINDOW_AHEAD] = (st[JS_WINDOW_AHEAD] + 1) & MASK32

    # 3. Progress.
    if kind & 4:
        st[JS_STEP_MIN] = (s + 1) & STEP_MASK
        st[JS_PSN_REC] = 0
    elif step_earlier(s, st[JS_STEP_MIN]):
        st[JS_STEP_MIN] = s
        st[JS_PSN_REC] = p if p > 0 else 0
    elif s == st[JS_STEP_MIN] and p >= 0:
        st[JS_PSN_REC] = max(st[JS_PSN_REC], p)

    # 4. Decision: d = log p + log alpha + k_log - log psn_rec, then the threshold table.
    threshold = 0
    outpacing = step_later(s, st[JS_STEP_MIN])
    if (
        prm[job, P_MARK_ENABLE]
        and outpacing
        and st[JS_PSN_REC] > prm[job, P_N_WARMUP]
        and p > 0  # p = 0 gives threshold 0 (mark_threshold), p = -1 is unknown
    ):
        d = (
            log_tab[_log_index(p)]
            + alpha_tab[st[JS_ALPHA]]
            + prm[job, P_K_LOG]
            - log_tab[_log_index(st[JS_PSN_REC])]
        )
        if d < 0:
            threshold = 0
        elif d >= PROB_TABLE_SIZE:
            threshold = COIN_RANGE
        else:
            threshold = thr_tab[d]
    st[JS_PACKETS] = (st[JS_PACKETS] + 1) & MASK32
    return p, threshold, outpacing


# Compiled twice from the one body: `process` a function of its own (callers outside the event
# loop: `run_trace`, and the 113030d kernel the speed bench compares with, as it was then),
# `process_inlined` copied into its caller by numba (the event loop: a call passed six arrays,
# ~50 words, per packet at a switch). The same code either way: the conformance suite runs
# the first, the 45 recorded reference runs (tests/test_fabric_reference.py) the second.
process = njit(cache=True, _nrt=False)(_process)
process_inlined = njit(cache=True, _nrt=False, inline="always")(_process)


@njit(cache=True, inline="always")
def decide(threshold: int, coin: int) -> bool:
    """The mark for a threshold and a 24-bit coin (Decision.mark with the coin known)."""
    if threshold == 0:
        return False
    if threshold >= COIN_RANGE:
        return True
    return coin < threshold


@njit(cache=True, inline="always")
def symphony_ce(mark: bool, enq_depth: int, gate_depth: int) -> bool:
    """`model.switch_model.symphony_ce`: the backlog gate lets a mark decision leave as CE only from
    a queue at least `gate_depth` deep when the packet joined it (tests/test_fabric_sim.py
    compares the two)."""
    return mark and enq_depth >= gate_depth


@njit(cache=True)
def run_trace(
    js: np.ndarray,
    flows: np.ndarray,
    prm: np.ndarray,
    job_by_tag: np.ndarray,
    tag: np.ndarray,
    src_job: np.ndarray,
    slot: np.ndarray,
    sig: np.ndarray,
    step: np.ndarray,
    opcode: np.ndarray,
    psn: np.ndarray,
    now: np.ndarray,
    coin: np.ndarray,
    out: np.ndarray,
    log_tab: np.ndarray,
    alpha_tab: np.ndarray,
    thr_tab: np.ndarray,
) -> None:
    """A trace through one switch (index 0), classified as `SwitchModel.classify` does it: a
    tracked opcode, then a non-zero tag's entry (`job_by_tag`), else the source's entry
    (`src_job[i]`: the hosts table's job for packet i's source, 0 for none).
    out[i] = (job or 0, p or -1, threshold, mark)."""
    for i in range(tag.shape[0]):
        job = 0
        if opcode_kind(opcode[i]):
            if tag[i] > 0:
                job = job_by_tag[tag[i]]
            if job == 0:
                job = src_job[i]
        if job == 0 or not prm[job, P_INSTALLED]:
            out[i, 0] = 0
            out[i, 1] = -1
            out[i, 2] = 0
            out[i, 3] = 0
            continue
        p, thr, _ = process(
            js,
            flows,
            prm,
            0,
            job,
            slot[i],
            sig[i],
            step[i],
            opcode[i],
            psn[i],
            now[i],
            log_tab,
            alpha_tab,
            thr_tab,
        )
        mark = decide(thr, coin[i])
        if mark:
            js[0, job, JS_MARKS] += 1
        out[i, 0] = job
        out[i, 1] = p
        out[i, 2] = thr
        out[i, 3] = 1 if mark else 0
