"""Runs that survive a busy machine: a run the harness spoiled is redone with the same seed, and
every valid run is appended to its CSV as it finishes, so a stopped experiment resumes where it
stopped (docs/experiments.md, "Spoiled runs, reruns and resuming").

Pure bookkeeping, no switch: `judge` says whether a run's row is valid, `run_cell` redoes a run
until it is (a bounded number of times), `RunLog` is one CSV of valid runs keyed by what names a
run (variant, offset, seed...), `open_results` checks that an output folder's runs were made with
the settings of this invocation.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.hosts import calibration as cal

Row = dict[str, Any]
SETTINGS_FILE = "settings.json"
# A flow alone through the bottleneck may take this much longer than its line time (latency,
# the first packet's start); past it bmv2 fell behind its queue rate, and the emulated link was
# slower than stated (docs/experiments.md, "Spoiled runs").
LINK_STRETCH_LIMIT = 1.05


def judge(row: Row, lateness_limit_ms: float) -> str | None:
    """Why the harness spoiled this run, or None when its numbers stand. Frames lost in a switch
    queue are a result, never a reason: such a run is valid even when a flow could not complete
    (nothing is retransmitted)."""
    reasons = []
    harness = {
        k.removeprefix("lost_"): int(v)
        for k, v in row.items()
        if k.startswith("lost_") and k not in ("lost_queue", "lost_unattributed") and v
    }
    if harness:
        where = ", ".join(f"{n} {p}" for p, n in harness.items())
        reasons.append(f"frames lost by the harness: {where}")
    if row.get("lost_unattributed"):
        reasons.append(f"unattributed {row['lost_unattributed']} (the counters do not add up)")
    if row.get("send_errors"):
        reasons.append(f"sends refused by the kernel: {row['send_errors']}")
    stretch = float(row.get("link_stretch", 1.0))
    if stretch > LINK_STRETCH_LIMIT:
        reasons.append(
            f"switch behind its queue rate: a lone flow took {stretch:.2f} x its line time"
        )
    lag = float(row.get("max_lag_ms", 0.0))
    if lag > lateness_limit_ms:
        reasons.append(f"host lateness {lag:.1f} ms > {lateness_limit_ms:.1f} ms")
    if not _true(row.get("complete")) and not row.get("lost_queue"):
        reasons.append("incomplete with no frame lost in a switch queue")
    return "; ".join(reasons) or None


# What `judge` can say, each reason starting with its kind's words (the summary counts them).
REASON_KINDS = (
    "frames lost by the harness",
    "unattributed",
    "sends refused",
    "switch behind its queue rate",
    "host lateness",
    "incomplete",
)


def reason_kinds(reason: str) -> list[str]:
    return [k for part in reason.split("; ") for k in REASON_KINDS if part.startswith(k)]


def _true(v: object) -> bool:
    return v is True or v == "True"


@dataclass
class CellResult:
    row: Row | None  # the valid run, or None when every attempt was spoiled
    attempts: list[tuple[Row, str]]  # every spoiled attempt and why

    @property
    def reruns(self) -> int:
        return len(self.attempts) if self.row is not None else len(self.attempts) - 1


def run_cell(
    attempt: Callable[[int], Row],
    verdict: Callable[[Row], str | None],
    max_reruns: int | Callable[[], int],
    on_spoiled: Callable[[Row, str, int], None] | None = None,
) -> CellResult:
    """Run `attempt(n)` (n = 0, 1, ...: the same seed each time) until `verdict` passes it, at
    most 1 + `max_reruns` times (a callable is asked again after each spoiled attempt: the
    budget may grow as the spoiled fraction is measured). The valid row gets `reruns`."""
    spoiled: list[tuple[Row, str]] = []
    n = 0
    while True:
        row = attempt(n)
        why = verdict(row)
        if why is None:
            row["reruns"] = n
            return CellResult(row, spoiled)
        spoiled.append((row, why))
        if on_spoiled is not None:
            on_spoiled(row, why, n)
        n += 1
        if n > (max_reruns() if callable(max_reruns) else max_reruns):
            return CellResult(None, spoiled)


class RunLog:
    """One CSV of runs, appended as each finishes; `key` names the columns that identify a run
    (e.g. variant, offset_frac, seed) so a resumed experiment skips the runs already there."""

    def __init__(self, path: Path, key: Sequence[str]) -> None:
        self.path = path
        self.key = tuple(key)
        self.rows: list[Row] = read_rows(path)
        self._done = {self.key_of(r) for r in self.rows}

    def key_of(self, row: Row) -> tuple[str, ...]:
        return tuple(_norm(row[k]) for k in self.key)

    def done(self, **key: object) -> bool:
        return tuple(_norm(key[k]) for k in self.key) in self._done

    def append(self, row: Row) -> None:
        fields = list(self.rows[0]) if self.rows else []
        new = [k for k in row if k not in fields and not k.startswith("_")]
        clean = {k: v for k, v in row.items() if not k.startswith("_")}
        self.rows.append(clean)
        self._done.add(self.key_of(clean))
        if new and self.path.exists():
            self._rewrite(fields + new)  # a column no earlier run had: rewrite, header first
            return
        fields += new
        fresh = not self.path.exists()
        with self.path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            if fresh:
                w.writeheader()
            w.writerow(clean)
            f.flush()

    def _rewrite(self, fields: list[str]) -> None:
        for r in self.rows:
            for k in fields:
                r.setdefault(k, "")
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(self.rows)
        tmp.replace(self.path)


def read_rows(path: Path) -> list[Row]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _norm(v: object) -> str:
    """A key value as the CSV writes it, so 0.5 and "0.5", 3 and "3.0" name the same run."""
    try:
        x = float(str(v))
    except ValueError:
        return str(v)
    return repr(x) if not math.isnan(x) else "nan"


class SettingsChanged(RuntimeError):
    pass


def stored_settings(out: Path, files: Iterable[str]) -> dict[str, Any] | None:
    """The settings `out`'s runs were made with, when it holds any (a resumable folder)."""
    path = out / SETTINGS_FILE
    if not path.is_file() or not any((out / f).exists() for f in files):
        return None
    return json.loads(path.read_text())


def open_results(out: Path, settings: dict[str, Any], *, fresh: bool, files: Iterable[str]) -> str:
    """Prepare `out` for this invocation's runs. The runs already there are kept and skipped
    only if they were made with the same `settings` (everything that changes one run's result;
    the lists of variants, offsets and seeds may differ: each run is keyed on its own). With
    `fresh`, or when `out` holds no runs, the old `files` are removed. Returns what was done,
    for the log; raises SettingsChanged, naming each setting that differs, otherwise."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / SETTINGS_FILE
    stored = json.loads(path.read_text()) if path.is_file() else None
    existing = [out / f for f in files if (out / f).exists()]
    canon = json.loads(json.dumps(settings, sort_keys=True, default=str))
    if existing and not fresh:
        if stored == canon:
            return f"resuming: {len(existing)} result file(s) in {out} made with these settings"
        what = (
            f"other settings ({_diff(stored, canon)})"
            if stored is not None
            else f"settings it did not record (no {SETTINGS_FILE})"
        )
        raise SettingsChanged(
            f"{out} holds runs made with {what}; rerun with --fresh to discard them, or choose"
            " another --out"
        )
    for f in existing:
        shutil.rmtree(f) if f.is_dir() else f.unlink()
    path.write_text(json.dumps(canon, indent=2, sort_keys=True))
    return "starting fresh" + (f": removed {len(existing)} old result file(s)" if existing else "")


def open_or_explain(
    out: Path, settings: dict[str, Any], *, fresh: bool, files: Iterable[str], prog: str
) -> bool:
    """`open_results`, its note or its refusal printed as `prog`'s; False when refused."""
    try:
        note = open_results(out, settings, fresh=fresh, files=files)
    except SettingsChanged as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return False
    print(f"{prog}: {note}", file=sys.stderr)
    return True


def _diff(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> str:
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k, "<none>"), new.get(k, "<none>")
        if isinstance(a, dict) and isinstance(b, dict):
            sub = _diff(a, b, f"{prefix}{k}.")
            if sub:
                out.append(sub)
        elif a != b:
            out.append(f"{prefix}{k}: {a} -> {b}")
    return ", ".join(out)


class TooManySpoiled(RuntimeError):
    """The attempts made so far spoil too often for any budget of attempts per cell."""


class Cells:
    """Runs each cell (one variant, offset, seed) until it is valid, logs every spoiled attempt
    and collects the cells that could not be made valid.

    The attempts per cell: `max_reruns` + 1 when given; otherwise planned from the measured
    spoiled fraction (calibration.py) of each experiment, starting from the calibration's
    forecast (`expect`) and moving to what this invocation's attempts show, so a machine worse
    than its calibration said gets more attempts (up to calibration.MAX_ATTEMPTS)."""

    # How many attempts the forecast weighs, against the ones measured.
    FORECAST_WEIGHT = 4

    def __init__(self, out: Path, max_reruns: int | None) -> None:
        self.max_reruns = max_reruns
        self.spoiled = RunLog(out / "spoiled_runs.csv", key=("experiment", "cell", "attempt"))
        self.unresolved: list[str] = []
        self.plans: dict[str, tuple[int, float]] = {}  # experiment -> (cells, forecast)
        self.tally: dict[str, list[int]] = {}  # experiment -> [attempts, spoiled, cells done]

    def expect(self, experiment: str, cells: int, spoiled: float) -> None:
        """`experiment` has `cells` cells to run; the calibration forecast `spoiled`."""
        self.plans[experiment] = (cells, spoiled)

    # The invocation stops (TooManySpoiled) when, after at least this many attempts of an
    # experiment, even the lower end of the spoiled fraction's 95 % confidence interval would
    # need more than calibration.MAX_ATTEMPTS per cell. Stalls come in bursts: with 10 attempts
    # and the point estimate, two runs stopped on bursts (6 of their first 10 attempts spoiled)
    # on a machine that passes whole runs.
    EVIDENCE = 30

    def spoiled_fraction(self, experiment: str) -> float:
        """The forecast, moved towards the spoiled fraction of the attempts made so far."""
        _cells, forecast = self.plans.get(experiment, (1, 0.0))
        made, spoiled, _done = self.tally.get(experiment, [0, 0, 0])
        w = self.FORECAST_WEIGHT
        return (spoiled + w * forecast) / (made + w)

    def needed(self, experiment: str, *, lower: bool = False) -> int:
        """The attempts per cell the rest of `experiment` needs at its spoiled fraction (with
        `lower`, at the lower end of the measured fraction's confidence interval)."""
        cells, _forecast = self.plans.get(experiment, (1, 0.0))
        made, spoiled, done = self.tally.get(experiment, [0, 0, 0])
        p = (
            cal.binomial_lower(spoiled, made, cal.REFUSE_CONFIDENCE)
            if lower
            else self.spoiled_fraction(experiment)
        )
        return cal.attempts_for([(p, max(1, cells - done))])

    def attempts(self, experiment: str) -> int:
        """The attempts a cell of `experiment` may take now."""
        if self.max_reruns is not None:
            return 1 + self.max_reruns
        return min(cal.MAX_ATTEMPTS, self.needed(experiment))

    def run(
        self,
        experiment: str,
        cell: str,
        attempt: Callable[[int], dict],
        lateness_limit_ms: float,
    ) -> dict | None:
        tally = self.tally.setdefault(experiment, [0, 0, 0])

        def log(row: dict, why: str, n: int) -> None:
            tally[1] += 1
            print(f"spoiled: {experiment} {cell} attempt {n}: {why}", file=sys.stderr)
            self.spoiled.append(
                {"experiment": experiment, "cell": cell, "attempt": n, "reason": why, **row}
            )
            if (
                self.max_reruns is None
                and tally[0] >= self.EVIDENCE
                and self.needed(experiment, lower=True) > cal.MAX_ATTEMPTS
            ):
                low = cal.binomial_lower(tally[1], tally[0], cal.REFUSE_CONFIDENCE)
                raise TooManySpoiled(
                    f"{experiment}: {tally[1]} of {tally[0]} attempts spoiled (at least"
                    f" {low:.0%} with {cal.REFUSE_CONFIDENCE:.0%} confidence), which would need"
                    f" {self.needed(experiment, lower=True)} or more attempts per cell (at most"
                    f" {cal.MAX_ATTEMPTS}): the machine stalls the hosts more than its"
                    " calibration saw; stopped early (the valid runs are kept: run the same"
                    " command again to resume on a quieter machine)"
                )

        def counted(n: int) -> dict:
            tally[0] += 1
            return attempt(n)

        res = run_cell(
            counted,
            lambda r: judge(r, lateness_limit_ms),
            lambda: self.attempts(experiment) - 1,
            log,
        )
        tally[2] += 1
        self.unresolved = [u for u in self.unresolved if not u.startswith(f"{experiment} {cell}:")]
        if res.row is None:
            self.unresolved.append(
                f"{experiment} {cell}: no valid run in {len(res.attempts)} attempts;"
                f" last: {res.attempts[-1][1]}"
            )
        return res.row
