"""``python -m bench.ddl_flushes`` runs end to end at a tiny size: the three sides are timed, an
evonb ALTER flushes its files (``os.fsync``), the diagnostic side's flushes are skipped only
while it runs, and every side's table has the columns added."""

from __future__ import annotations

import os

from bench.ddl_flushes import SIDES, counted_fsyncs, run


def test_ddl_flushes_bench_reports() -> None:
    real = os.fsync
    lines: list[str] = []
    results = run(alters=3, rounds=2, out=lines.append)
    assert os.fsync is real
    assert set(results) == set(SIDES)
    assert all(r["wall"] > 0 and r["cpu"] >= 0 for r in results.values())
    # the requested, layout, schema and completed files and their folders
    assert results["evonb"]["fsyncs"] >= 4
    assert results["evonb, fsync skipped"]["fsyncs"] == results["evonb"]["fsyncs"]
    assert results["delta-rs"]["fsyncs"] == 0  # none through Python's os.fsync
    assert len(lines) == 4 and "x delta-rs" in lines[1]


def test_counted_fsyncs_counts_and_skips(tmp_path) -> None:
    path = tmp_path / "f"
    with open(path, "wb") as fh, counted_fsyncs(skip=True) as count:
        fh.write(b"x")
        os.fsync(fh.fileno())
        os.fsync(fh.fileno())
    assert count == [2]
    with open(path, "rb") as fh, counted_fsyncs() as count:
        os.fsync(fh.fileno())
    assert count == [1]
