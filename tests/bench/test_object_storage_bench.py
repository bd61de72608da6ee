"""``python -m bench.object_storage`` runs end to end and reports latency and request counts."""

from __future__ import annotations


def test_object_storage_bench_reports() -> None:
    from bench.object_storage import run

    lines: list[str] = []
    results = run(repeat=1, out=lines.append)
    assert set(results["median_s"]) == {"s3", "local"}
    assert all(v > 0 for v in results["median_s"].values())
    alter = results["requests"]["alter (ADD COLUMN)"]
    assert alter["PutObject"] >= 2 and alter["DeleteObject"] >= 1  # the commit and the lease
    assert results["requests"]["open_table"]["ListObjectsV2"] >= 1
    assert lines[0].startswith("DDL commit: loopback S3")
