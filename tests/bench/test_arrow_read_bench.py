"""``python -m bench.arrow_read`` runs end to end at a tiny size and reports both readers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_arrow_read_bench_reports(spark):
    from bench.arrow_read import run

    lines: list[str] = []
    results = run(rows=2000, repeat=1, out=lines.append)
    assert set(results) == {"cow", "mor"}
    assert all(v > 0 for r in results.values() for v in r.values())
    assert any("Spark/Arrow" in line for line in lines)
