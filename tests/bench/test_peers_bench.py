"""The peers benchmark at a tiny size: every step is reported for evonb (both readers),
pyiceberg and delta-rs, the systems' reads agree, and a difference in their results fails."""

from __future__ import annotations

import importlib
import weakref

import pyarrow as pa
import pytest

from bench.peers import STEPS, Peer, PeerMismatch, Read, check_same, fingerprint, read_phase

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def peers_run(spark, tmp_path_factory):
    from bench import run_suite

    folder = tmp_path_factory.mktemp("peers")
    lines: list[str] = []
    doc = run_suite(["peers"], size="tiny", repeat=1, warmup=0, json_path=folder / "out.json",
                    spark=spark, workdir=folder / "work", out=lines.append)
    return doc, lines


def test_every_step_is_reported_and_the_results_agree(peers_run):
    doc, lines = peers_run
    assert doc["summary"]["ERROR"] == 0, lines
    names = [r["name"] for r in doc["results"]]
    expected = [f"peers.{s}" for s in STEPS if not s.startswith("read")]
    expected += [f"peers.{s}.{k}" for s in ("read", "read_as_of_first")
                 for k in ("spark", "arrow")]
    assert sorted(names) == sorted([*expected, "peers.alter.all", "peers.read.arrow_mor"])
    by = {r["name"]: r for r in doc["results"]}
    for r in doc["results"]:
        assert r["evonb_median_s"] > 0 and r["baseline_median_s"] > 0, r
        assert r["ratio"] == pytest.approx(r["evonb_median_s"] / r["baseline_median_s"])
    # the JVM-free reads and the DDL carry the bar; the rest is reported
    assert by["peers.read.arrow"]["bar"] == by["peers.alter.03"]["bar"] == "<= 1x the faster peer"
    assert by["peers.read.spark"]["status"] == "INFO"
    # both reads were checked equal on every system (6,000 rows at the tiny size)
    for name in ("peers.read.arrow", "peers.read_as_of_first.spark"):
        assert any(n.startswith("same rows on every system: 6,000 rows") for n in
                   by[name]["notes"]), by[name]["notes"]
    # pyiceberg does every change; delta-rs only the added columns, and says why not
    renamed = by["peers.alter.01"]
    assert set(renamed["metrics"]["medians_s"]) == {"evonb", "pyiceberg"}
    assert "column mapping" in renamed["metrics"]["unsupported"]["deltalake"]
    widened = by["peers.alter.03"]["metrics"]["unsupported"]
    assert "typeWidening" in widened["deltalake"]
    added = by["peers.alter.02"]["metrics"]["medians_s"]
    assert set(added) == {"evonb", "pyiceberg", "deltalake"}
    assert any(line.startswith("peers.upsert") for line in lines)
    # the merge-on-read table: its upsert against the peers' upsert, its read reported (the
    # same rows as every system's, checked) without the bar
    mor = by["peers.upsert_mor"]
    assert set(mor["metrics"]["medians_s"]) == {"evonb", "pyiceberg", "deltalake"}
    assert mor["baseline_median_s"] == min(by["peers.upsert"]["metrics"]["medians_s"][p]
                                           for p in ("pyiceberg", "deltalake"))
    read_mor = by["peers.read.arrow_mor"]
    assert read_mor["status"] == "INFO" and read_mor["bar"] == "report only"
    assert "same rows as every system's read: 6,000 rows" in read_mor["notes"]
    # the reads also carry each system's CPU time (less disturbed by a loaded machine)
    cpu = by["peers.read.arrow"]["metrics"]["cpu_medians_s"]
    assert set(cpu) == {"evonb (to_arrow)", "pyiceberg", "deltalake"}
    assert all(c > 0 for c in cpu.values()), cpu
    assert any(n.startswith("CPU s of the process") for n in by["peers.read.arrow"]["notes"])
    kernel = by["peers.read.arrow"]["metrics"]["kernel_medians_s"]
    assert set(kernel) == set(cpu) and all(0 <= kernel[n] <= cpu[n] for n in cpu), (kernel, cpu)
    assert any(n.startswith("of it in the kernel") for n in by["peers.read.arrow"]["notes"])


COLUMNS = {"id": ("bigint", ""), "v": ("string", "")}


def _peer(name: str, ids: list[int], values: list[str]) -> Peer:
    table = pa.table({"id": pa.array(ids, pa.int64()), "v": values})
    peer = Peer(name)
    peer.prints = {step: fingerprint(table, peer, COLUMNS)
                   for step in ("read", "read_as_of_first")}
    return peer


def test_different_results_fail_loudly():
    same = [_peer("a", [1, 2], ["x", "y"]), _peer("b", [2, 1], ["y", "x"])]
    prints = check_same(same)
    assert prints["read"]["a"] == prints["read"]["b"] and prints["read"]["a"][0] == 2
    changed = [*same, _peer("c", [1, 2], ["x", "z"])]
    with pytest.raises(PeerMismatch, match="read returned different rows"):
        check_same(changed)


def test_the_reads_run_last_jvm_free_first_rotated_and_each_result_is_dropped(monkeypatch):
    """Each read starts from the same state: the in-process readers first, in an order that
    rotates with the round, Spark's last; every result is fingerprinted, and none is still
    held while the next read runs."""
    peers_mod = importlib.import_module("bench.peers")  # the package's `peers` is a function
    monkeypatch.setattr(peers_mod, "SETTLE_S", 0.0)
    monkeypatch.setattr(peers_mod, "BASE_COLUMNS", COLUMNS)
    log: list[tuple[str, str, int]] = []
    results: list[weakref.ref] = []

    def read(peer: Peer, step: str, *, in_process: bool = True) -> Read:
        def run() -> pa.Table:
            log.append((peer.name, step, sum(r() is not None for r in results)))
            table = _table()
            results.append(weakref.ref(table))
            return table
        return Read(peer, step, run, in_process)

    a, b, c, spark = Peer("a"), Peer("b"), Peer("c"), Peer("spark")
    for round_no, first in ((0, "a"), (1, "b"), (2, "c")):
        log.clear()
        reads = [read(spark, "read", in_process=False)]
        reads += [read(p, step) for step in ("read_as_of_first", "read") for p in (c, a, b)]
        read_phase(reads, round_no, COLUMNS, passes=1)
        assert log[0][0] == first and log[-1][0] == "spark", log
        assert [step for _, step, _ in log[:3]] == ["read"] * 3, log
        assert [step for _, step, _ in log[3:6]] == ["read_as_of_first"] * 3, log
        assert [alive for _, _, alive in log] == [0] * 7, log  # no earlier result held
        expected = fingerprint(_table(), Peer("any"), COLUMNS)
        for p in (a, b, c):
            assert p.prints == {"read": expected, "read_as_of_first": expected}
        assert spark.prints == {"read": expected} and expected[0] == 3


def _table() -> pa.Table:
    return pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["x", "y", "z"]})


def test_each_jvm_free_read_runs_once_per_pass_in_an_order_rotated_each_pass(monkeypatch):
    """Several passes give each in-process reader several samples a round, each pass starting
    with the next reader; Spark's reads still run once, last; the kernel's share of each
    read's CPU time is kept beside it."""
    peers_mod = importlib.import_module("bench.peers")
    monkeypatch.setattr(peers_mod, "SETTLE_S", 0.0)
    monkeypatch.setattr(peers_mod, "BASE_COLUMNS", COLUMNS)
    log: list[tuple[str, str]] = []

    def read(peer: Peer, step: str, *, in_process: bool = True) -> Read:
        def run() -> pa.Table:
            log.append((peer.name, step))
            return _table()
        return Read(peer, step, run, in_process)

    a, b, spark = Peer("a"), Peer("b"), Peer("spark")
    reads = [read(spark, "read", in_process=False)]
    reads += [read(p, step) for p in (b, a) for step in ("read", "read_as_of_first")]
    read_phase(reads, 1, COLUMNS, passes=3)
    assert log == [("b", "read"), ("a", "read"), ("b", "read_as_of_first"),
                   ("a", "read_as_of_first"),
                   ("a", "read"), ("b", "read"), ("a", "read_as_of_first"),
                   ("b", "read_as_of_first"),
                   ("b", "read"), ("a", "read"), ("b", "read_as_of_first"),
                   ("a", "read_as_of_first"),
                   ("spark", "read")]
    for p in (a, b):
        assert [len(p.times[s]) for s in ("read", "read_as_of_first")] == [3, 3]
        assert len(p.sys["read"]) == 3 and all(0 <= k <= c for k, c in
                                              zip(p.sys["read"], p.cpu["read"], strict=True))
    assert len(spark.times["read"]) == 1 and "read" not in spark.cpu and not spark.sys


def test_a_read_that_changes_from_one_pass_to_the_next_fails_loudly(monkeypatch):
    peers_mod = importlib.import_module("bench.peers")
    monkeypatch.setattr(peers_mod, "SETTLE_S", 0.0)
    monkeypatch.setattr(peers_mod, "BASE_COLUMNS", COLUMNS)
    tables = iter([_table(), pa.table({"id": pa.array([1, 2, 4], pa.int64()),
                                       "v": ["x", "y", "z"]})])
    flaky = Peer("flaky")
    with pytest.raises(PeerMismatch, match="flaky's read returned different rows from one "
                                           "pass to the next"):
        read_phase([Read(flaky, "read", lambda: next(tables))], 0, COLUMNS, passes=2)
