"""evaluation.fabric.compare: old and new runs of the same cells, and which shifts are outside
the seeds' spread."""

from __future__ import annotations

from pathlib import Path

from evaluation.fabric import compare


def _csv(path: Path, rows: list[tuple[str, str, int, float]]) -> Path:
    lines = ["scenario,variant,param,seed,cct_us,error"]
    lines += [f"{sc},{var},,{seed},{ms * 1000},0" for sc, var, seed, ms in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_shift_inside_and_one_outside_the_spread(tmp_path: Path) -> None:
    old = [("s", "baseline", k, 100.0 + k) for k in range(8)]
    old += [("s", "symphony", k, 80.0 + k) for k in range(8)]
    new = [("s", "baseline", k, 101.0 + k) for k in range(8)]  # within the old quartiles
    new += [("s", "symphony", k, 60.0 + k) for k in range(8)]  # far below them
    new += [("s", "symphony", 99, 1.0)]  # a seed only one set ran: left out
    rows = compare.compare(
        compare.load(_csv(tmp_path / "old.csv", old)), compare.load(_csv(tmp_path / "new.csv", new))
    )
    by = {r.cell[1]: r for r in rows}
    assert not by["baseline"].outside
    assert by["symphony"].outside
    assert by["symphony"].seeds == 8
    assert abs(by["symphony"].old_vs_base - (83.5 / 103.5 - 1)) < 1e-12
    assert "**yes**" in compare.markdown(rows)


def test_wide_shows_each_variant_against_its_baseline(tmp_path: Path) -> None:
    old = [("s", "baseline", k, 100.0) for k in range(4)] + [("s", "pq", k, 90.0) for k in range(4)]
    new = [("s", "baseline", k, 100.0) for k in range(4)] + [("s", "pq", k, 80.0) for k in range(4)]
    rows = compare.compare(
        compare.load(_csv(tmp_path / "old.csv", old)), compare.load(_csv(tmp_path / "new.csv", new))
    )
    line = compare.wide(rows).splitlines()[2]
    assert line == "| s |  | 4 | 100.0 -> 100.0 | -10.0 % -> -20.0 %* |"
