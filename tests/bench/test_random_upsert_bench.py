"""The random_upsert benchmark at the tiny size: both cases run, are judged (merge-on-read
against its bar, copy-on-write report-only), and each upsert's rows equal the full rewrite's."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_random_upsert_cases(spark, tmp_path):
    from bench import run_suite
    from bench.util import SIZES

    lines: list[str] = []
    doc = run_suite(["random_upsert"], size="tiny", repeat=1, warmup=0,
                    json_path=tmp_path / "o.json", spark=spark, workdir=tmp_path / "work",
                    out=lines.append)
    assert doc["summary"]["ERROR"] == 0, lines
    by = {r["name"]: r for r in doc["results"]}
    assert sorted(by) == ["random_upsert.cow", "random_upsert.cow_split", "random_upsert.mor"]
    cow, mor = by["random_upsert.cow"], by["random_upsert.mor"]
    split = by["random_upsert.cow_split"]
    assert split["status"] == "INFO" and split["evonb_median_s"] > 0
    assert split["baseline_median_s"] > 0
    assert cow["status"] == "INFO" and cow["bar"] == "report only"
    assert mor["status"] in ("PASS", "MISS") and mor["bar"] == "<= 0.15x"
    tiny = SIZES["tiny"]
    for r in (cow, mor):
        assert r["evonb_median_s"] > 0 and r["baseline_median_s"] > 0
        assert r["ratio"] == pytest.approx(r["evonb_median_s"] / r["baseline_median_s"])
        m = r["metrics"]
        assert m["equal_to_rewrite"] is True
        assert m["keys"] == tiny.rows // 100
        assert m["files"] == tiny.upsert_files
    # random keys land in every file: copy-on-write rewrites them all, merge-on-read none
    assert cow["metrics"]["files_rewritten"] == tiny.upsert_files
    assert cow["metrics"]["log_blocks"] == 0
    assert mor["metrics"]["files_rewritten"] == 0
    assert mor["metrics"]["log_blocks"] == tiny.upsert_files
