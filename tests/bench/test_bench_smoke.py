"""The benchmark harness runs end to end at a tiny size (correctness of the harness, not speed).

Every benchmark of the suite must report, for each of its comparisons, both sides measured and
a ratio, or a skip for a stated reason (pyiceberg not installed, merge-on-read not available).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

STATUSES = {"PASS", "MISS", "INFO", "SKIP"}
OWN_TESTS = ("peers", "cluster", "random_upsert")
"""Groups run at the tiny size by a test file of their own (test_<group>_bench.py), which
checks their cases in more detail: not run a second time here."""
COUNTED = {"object_storage.requests_by_history", "object_storage.planning_vs_listing",
           "object_storage.open_archived"}
"""Comparisons of request counts, not times: no samples, the counts in their metrics."""


def _requests(found: object) -> list[int]:
    """Every request count in a (nested) metrics document."""
    if isinstance(found, dict):
        return [n for v in found.values() for n in _requests(v)]
    return [found] if isinstance(found, int) and not isinstance(found, bool) else []


def _selected() -> list[str]:
    from bench import BENCHMARKS

    return [name for name in BENCHMARKS if name not in OWN_TESTS]


@pytest.fixture(scope="module")
def results(spark, tmp_path_factory):
    """The results document of one tiny run of the whole suite (in this process and session)."""
    from bench import run_suite

    folder = tmp_path_factory.mktemp("bench")
    out = folder / "results.json"
    lines: list[str] = []
    payload = run_suite(_selected(), size="tiny", repeat=1, warmup=0, json_path=out, spark=spark,
                        workdir=folder / "work", out=lines.append)
    on_disk = json.loads(out.read_text())
    assert on_disk["results"] == json.loads(json.dumps(payload["results"], default=str))
    return on_disk, lines


def test_every_benchmark_reports(results):
    from bench import BENCHMARKS

    doc, lines = results
    assert doc["size"] == "tiny" and doc["environment"]["cores"] >= 1
    assert doc["benchmarks"] == _selected()
    assert all((Path(__file__).parent / f"test_{name}_bench.py").exists() for name in OWN_TESTS)
    by_benchmark = {r["benchmark"] for r in doc["results"]}
    assert by_benchmark == set(BENCHMARKS) - set(OWN_TESTS), lines
    assert {r["name"] for r in doc["results"]} >= COUNTED | {
        "object_storage.mor_upsert_blocks", "object_storage.mor_upsert_blocks_latency"}
    for r in doc["results"]:
        assert r["status"] in STATUSES, (r["name"], r["status"], r["notes"])
        # pyiceberg is in the test extra and merge-on-read exists: nothing may be skipped
        assert r["status"] != "SKIP", r
        if r["name"] in COUNTED:
            counts = _requests(r["metrics"])
            assert counts and all(n > 0 for n in counts), r
            assert r["status"] in ("PASS", "MISS") and r["bar"], r
            continue
        assert r["evonb_median_s"] > 0 and r["baseline_median_s"] > 0, r
        assert r["ratio"] == pytest.approx(r["evonb_median_s"] / r["baseline_median_s"])
        assert len(r["evonb_samples_s"]) == len(r["baseline_samples_s"]) == 1
        assert r["bar"], r
    # every case is printed on a line of its own that ends with its status
    lines = "\n".join(lines).splitlines()
    for r in doc["results"]:
        assert any(line.startswith(r["name"]) and line.rstrip().endswith(r["status"])
                   for line in lines), r["name"]


def test_expected_cases(results):
    doc, _ = results
    names = {r["name"]: r for r in doc["results"]}
    expected = {"evolved_read.scan", "evolved_read.filter", "evolved_read.arrow_vs_pyiceberg",
                "evolved_read.to_arrow_vs_pyiceberg",
                "ddl.scale", "ddl.history", "ddl.vs_pyiceberg", "time_travel", "planning",
                "cow_upsert",
                "mor_compaction", "mor_read", "mor_read.parquet",
                "notebook_alter", "first_rows.fresh_process",
                "iceberg_export.upsert", "iceberg_export.write", "iceberg_export.pyiceberg_read",
                "time_range.to_arrow", "time_range.spark", "time_range.full_scan",
                "time_range.write"}
    assert expected <= set(names)
    # the merge-on-read read is judged on the default (Avro) blocks; Parquet blocks reported
    assert names["mor_read"]["status"] in ("PASS", "MISS")
    assert names["mor_read.parquet"]["status"] == "INFO"
    assert any("parquet blocks" in n for n in names["mor_read.parquet"]["notes"])
    # every case records its CPU time, one per kept sample: in-process reads this process's,
    # Spark cases this process's and the local Spark JVM's (Linux: read from /proc)
    arrow = names["evolved_read.to_arrow_vs_pyiceberg"]
    assert len(arrow["evonb_cpu_samples_s"]) == len(arrow["baseline_cpu_samples_s"]) == 1
    assert arrow["evonb_cpu_samples_s"][0] > 0 and arrow["baseline_cpu_samples_s"][0] > 0
    assert any(n.startswith("CPU time of this process (every thread)") for n in arrow["notes"])
    assert doc["environment"]["cpu_clock"] == "this process + the Spark JVM"
    scan = names["evolved_read.scan"]
    assert len(scan["evonb_cpu_samples_s"]) == len(scan["baseline_cpu_samples_s"]) == 1
    assert scan["evonb_cpu_samples_s"][0] > 0 and scan["baseline_cpu_samples_s"][0] > 0
    assert any(n.startswith("CPU time of this process and the Spark JVM")
               for n in scan["notes"])
    # the selective filter's scan metrics were read from Spark
    metrics = names["evolved_read.filter"]["metrics"]
    assert metrics["matching_rows"] > 0
    assert 0 < metrics["evonb"]["scan_output_rows"] <= metrics["table_rows"]
    assert metrics["evonb"]["files_read"] > 0


def test_cli_rejects_unknown_names(capsys):
    from bench.__main__ import main

    with pytest.raises(SystemExit):
        main(["no_such_benchmark"])
    assert "unknown benchmark" in capsys.readouterr().err
