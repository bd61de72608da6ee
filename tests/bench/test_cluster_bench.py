"""The cluster benchmark at the tiny size: its three cases run, are judged against their bars,
and the clustering they time replaced the small files."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_cluster_cases_run_against_their_bars(spark, tmp_path):
    from bench import run_suite
    from bench.clustering import WRITES

    lines: list[str] = []
    doc = run_suite(["cluster"], size="tiny", repeat=1, warmup=0, json_path=tmp_path / "o.json",
                    spark=spark, workdir=tmp_path / "work", out=lines.append)
    assert doc["summary"]["ERROR"] == 0, lines
    by = {r["name"]: r for r in doc["results"]}
    assert sorted(by) == ["cluster.filter", "cluster.full_scan", "cluster.rewrite",
                          "cluster.zorder_filter"]
    assert by.pop("cluster.zorder_filter")["status"] == "INFO"  # report only
    assert by["cluster.full_scan"]["bar"] == by["cluster.filter"]["bar"] == "<= 0.333x"
    assert by["cluster.rewrite"]["bar"] == "<= 1.3x"
    for r in by.values():
        assert r["status"] in ("PASS", "MISS"), r
        assert r["evonb_median_s"] > 0 and r["baseline_median_s"] > 0
        assert r["ratio"] == pytest.approx(r["evonb_median_s"] / r["baseline_median_s"])
    assert f"in {WRITES['tiny']} small writes" in by["cluster.filter"]["notes"][0]
    assert any(f"{WRITES['tiny']} files replaced by 1," in n
               for n in by["cluster.rewrite"]["notes"]), by["cluster.rewrite"]["notes"]
