"""Damaged data files and lost commit files: ``evonb check`` names them, repair loses nothing,
and a read that meets one says which file and to run ``evonb check``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.__main__ import main
from evonb.errors import CorruptFileError, DataFileMissingError
from evonb.table.check import check_table, repair_table
from evonb.table.rollback import rollback_failed

pytestmark = pytest.mark.spark

ROWS = "id bigint, v string, ts bigint"


def rows(t) -> list[tuple]:
    return sorted((r.id, r.v, r.ts) for r in t.read().collect())


def cow(spark, root: Path):
    """A copy-on-write table with three data files, one per insert."""
    t = evonb.create_table(root, "id bigint not null, v string, ts bigint", primary_key="id")
    for start in (0, 100, 200):
        t.write(spark.range(start, start + 100, 1, 1)
                .selectExpr("id", "concat('v', id) AS v", "1L AS ts"), "insert")
    return t


def mor(spark, root: Path, fmt: str):
    """A merge-on-read table with one base file and one log block in ``fmt``."""
    t = evonb.create_table(root, "id bigint not null, v string, ts bigint", primary_key="id",
                           precombine="ts", table_type="mor",
                           properties={"evonb.mor.log_format": fmt})
    t.write(spark.range(0, 50, 1, 1).selectExpr("id", "concat('b', id) AS v", "1L AS ts"),
            "insert")
    t.write(spark.createDataFrame([(3, "u", 2), (7, "w", 2)], ROWS), "upsert")
    (log,) = t.snapshot().logs
    assert log.path.endswith("." + fmt)
    return t


def found(report) -> dict[str, tuple[str, str]]:
    return {p.path: (p.kind, p.message) for p in report.problems}


def commit_of(t, path: str) -> str:
    return next(c.instant for c in t.timeline.completed()
                if any(e["path"] == path for e in c.metadata.get("added", ())))


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_check_names_every_damaged_data_file(spark, tmp_path) -> None:
    t = cow(spark, tmp_path / "t")
    assert check_table(t.root, deep=True).ok
    a, b, c = sorted(t.snapshot().files, key=lambda f: f.instant)
    data = (t.root / a.path).read_bytes()
    (t.root / a.path).write_bytes(data[: len(data) // 2])  # truncated
    (t.root / b.path).write_bytes((b"not parquet at all " * b.bytes)[: b.bytes])  # garbage
    (t.root / c.path).unlink()

    report = check_table(t.root)
    got = found(report)
    assert set(got) == {a.path, b.path, c.path}
    assert got[a.path][0] == "corrupt-file" and "truncated" in got[a.path][1]
    assert f"its commit recorded {a.bytes}" in got[a.path][1]
    assert got[b.path][0] == "corrupt-file" and "Parquet footer" in got[b.path][1]
    assert got[c.path][0] == "missing-file"
    for f in (a, b, c):
        assert f"written by commit {commit_of(t, f.path)}" in got[f.path][1]
    assert main(["check", str(t.root)]) == 1
    assert main(["check", str(t.root), "--deep"]) == 1
    # repair cannot bring the data back and removes nothing
    after = repair_table(t.root)
    assert {p.path for p in after.problems} == {a.path, b.path, c.path}
    assert (t.root / a.path).exists() and (t.root / b.path).exists()

    # the Python API: a missing file stops the read when it is planned, with evonb's error
    with pytest.raises(DataFileMissingError) as missing:
        t.read()
    assert missing.value.path == c.path
    assert f"python -m evonb check {t.root}" in str(missing.value)


def test_deep_check_reads_every_row_group(spark, tmp_path) -> None:
    t = cow(spark, tmp_path / "t")
    f = t.snapshot().files[0]
    path = t.root / f.path
    data = bytearray(path.read_bytes())
    middle = len(data) // 3  # inside the column chunks: the footer is at the end
    data[middle:middle + 24] = bytes(x ^ 0xFF for x in data[middle:middle + 24])
    path.write_bytes(bytes(data))

    assert check_table(t.root).ok  # same size, the footer reads
    report = check_table(t.root, deep=True)
    assert [(p.kind, p.path) for p in report.problems] == [("corrupt-file", f.path)]
    assert "row group 0 of 1 does not read" in report.problems[0].message
    assert main(["check", str(t.root), "--deep", "--json"]) == 1


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_a_truncated_log_block_is_named_by_check_and_by_the_read(spark, tmp_path, fmt) -> None:
    t = mor(spark, tmp_path / "m", fmt)
    (log,) = t.snapshot().logs
    path = t.root / log.path
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])

    report = check_table(t.root)
    assert [(p.kind, p.path) for p in report.problems] == [("corrupt-file", log.path)]
    assert f"log block of the latest snapshot (written by commit {log.instant}" in \
        report.problems[0].message
    assert main(["check", str(t.root)]) == 1

    with pytest.raises(Exception) as raised:  # Spark's or evonb's, see below
        t.read().collect()
    assert log.path in str(raised.value)
    if fmt == "avro":  # the block's header is opened when the read is planned
        assert isinstance(raised.value, CorruptFileError)
        assert "last Avro block is cut off" in str(raised.value)


@pytest.fixture
def ip(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("evonb")
    shell.run_line_magic("config", f"Evo.warehouse = {str(tmp_path)!r}")
    magics = shell.magics_manager.registry["EvoMagics"]
    magics.context.locations.clear()
    yield shell
    magics.context.locations.clear()


def test_evo_read_of_a_truncated_data_file_is_one_readable_message(spark, tmp_path, ip):
    t = cow(spark, tmp_path / "trips")
    f = t.snapshot().files[0]
    data = (t.root / f.path).read_bytes()
    (t.root / f.path).write_bytes(data[: len(data) // 2])

    with pytest.raises(Exception) as raw:  # Spark's, at the action
        t.read().collect()
    assert f.path in str(raw.value)  # what a Python user sees: Spark names the file
    with pytest.raises(UsageError) as shown:
        ip.run_line_magic("evo", "read trips")
    text = str(shown.value)
    assert text.startswith(f"Cannot read {f.path}: the data file is corrupt or truncated")
    assert f"run `python -m evonb check {t.root}`" in text
    assert "\tat " not in text and "py4j" not in text.lower() and len(text.splitlines()) == 2

    (t.root / f.path).unlink()
    with pytest.raises(UsageError) as gone:
        ip.run_line_magic("evo", "read trips")
    assert str(gone.value).startswith(f"Cannot read {f.path}: the data file is missing")


def _lose_commit(t, instant: str) -> Path:
    """Remove the completed file of ``instant``; return its path."""
    (done,) = [p for p in (t.root / ".evo" / "timeline").iterdir()
               if p.name.split(".")[0] == instant and p.name.count(".") == 1]
    done.unlink()
    return done


def _writer_gone(t, instant: str) -> None:
    """Make the attempt's writer a process that is gone (the writer of a crash)."""
    (plan_path,) = (t.root / ".evo" / "timeline").glob(f"{instant}.*.requested")
    plan = json.loads(plan_path.read_text())
    plan["writer"]["pid"] = dead_pid()
    plan_path.write_text(json.dumps(plan))


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_lost_commit_file_is_restored_not_rolled_back(spark, tmp_path, table_type) -> None:
    t = cow(spark, tmp_path / "t") if table_type == "cow" else mor(spark, tmp_path / "t",
                                                                    "avro")
    if table_type == "cow":
        t.write(spark.createDataFrame([(5, "up", 2)], ROWS), "upsert")
    before = rows(t)
    last = t.timeline.last_completed()
    files = [e["path"] for e in last.metadata["added"]]
    done = _lose_commit(t, last.instant)
    _writer_gone(t, last.instant)

    report = check_table(t.root)
    (problem,) = report.problems
    assert problem.kind == "lost-commit" and problem.repairable
    assert problem.path == f".evo/timeline/{done.name}"
    assert "inflight record holds the commit" in problem.message
    # a writer's automatic recovery of failed attempts leaves it alone
    fresh = evonb.open_table(t.root)
    assert rollback_failed(fresh) == []
    assert all((t.root / p).exists() for p in files)

    after = repair_table(t.root)
    assert after.ok, after.render()
    assert after.repaired == [f"restored commit {last.instant} ({last.action}): its inflight "
                              "record holds the commit it published"]
    assert json.loads(done.read_text()) == last.metadata
    assert rows(evonb.open_table(t.root)) == before


def test_a_lost_commit_named_as_a_base_is_rebuilt(spark, tmp_path) -> None:
    """Without the copy of the commit (written by an older evonb, or lost too), a later commit
    naming the attempt as its base proves the commit; repair rebuilds the completed file from
    the files the inflight record lists."""
    t = cow(spark, tmp_path / "t")
    lost = t.timeline.last_completed()
    t.write(spark.createDataFrame([(1000, "x", 1)], ROWS), "insert")
    before = rows(t)
    assert t.timeline.last_completed().metadata["base_instant"] == lost.instant
    done = _lose_commit(t, lost.instant)
    inflight = done.with_name(done.name + ".inflight")
    record = json.loads(inflight.read_text())
    del record["commit"]
    inflight.write_text(json.dumps(record))
    _writer_gone(t, lost.instant)

    (problem,) = check_table(t.root).problems
    assert problem.kind == "lost-commit" and problem.repairable
    assert "names it as its base" in problem.message
    assert rollback_failed(evonb.open_table(t.root)) == []
    after = repair_table(t.root)
    assert after.ok, after.render()
    restored = json.loads(done.read_text())
    assert restored["added"] == lost.metadata["added"]
    assert restored["completion_time"] == lost.completion
    assert restored["schema_version"] == lost.schema_version
    assert rows(evonb.open_table(t.root)) == before


def test_a_failed_attempt_with_partial_files_is_still_rolled_back(spark, tmp_path) -> None:
    """An attempt killed before its commit point (no completed file, no copy of a commit, no
    later commit builds on it) is rolled back, even with its inflight record written."""
    t = cow(spark, tmp_path / "t")
    before = rows(t)
    last = t.timeline.last_completed()
    _lose_commit(t, last.instant)
    inflight = next((t.root / ".evo" / "timeline").glob(f"{last.instant}.*.inflight"))
    record = json.loads(inflight.read_text())
    del record["commit"]  # as a writer killed just before publishing leaves it
    inflight.write_text(json.dumps(record))
    _writer_gone(t, last.instant)
    (path,) = [t.root / e["path"] for e in last.metadata["added"]]
    path.write_bytes(path.read_bytes()[:100])  # partly written

    report = check_table(t.root)
    assert [p.kind for p in report.problems] == ["failed-attempt"]
    after = repair_table(t.root)
    assert after.ok and after.repaired[0] == f"rolled back failed attempt {last.instant}"
    assert not path.exists()
    assert len(rows(evonb.open_table(t.root))) == len(before) - 100
