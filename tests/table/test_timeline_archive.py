"""The timeline's archive: old commits leave the timeline folder for one archive file, so the
folder (and a listing of it) stays bounded however long the history; reads, time travel,
``check`` and ``repair`` see archived commits as before; rollback refuses them by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evonb
from evonb.errors import EvoError, MetadataCorruptError
from evonb.table.check import check_table, repair_table
from evonb.table.names import parse_timeline_file
from evonb.table.timeline import ARCHIVE_PROPERTY, Timeline, is_archive_name


def _table(root: Path, commits: int, keep: int = 0) -> Any:
    """A table of ``commits`` commits: the create, then ADD COLUMNs."""
    t = evonb.create_table(str(root), "id bigint not null, v string", primary_key="id",
                           properties={ARCHIVE_PROPERTY: str(keep)})
    for i in range(commits - 1):
        t.alter(f"ALTER TABLE t ADD COLUMN c{i} int")
    return t


def _view(root: Path, upto: int | None = None) -> dict[str, object]:
    """What a reader sees of the first ``upto`` commits of the table (all by default)."""
    t = evonb.open_table(str(root))
    commits = t.timeline.completed()[:upto]
    return {
        "timeline": [(r.instant, r.action, r.completion, r.metadata.to_json())
                     for r in commits],
        "schemas": [str(t.schema_at(r.instant)) for r in commits],
        "history": [(c.instant, c.operation) for c in t.history()][:upto],
    }


def _completed_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".evo/timeline").iterdir()
                  if (n := parse_timeline_file(p.name)) is not None and n.state == "completed")


def _archives(root: Path) -> list[str]:
    folder = root / ".evo/timeline/archive"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_an_archived_table_reads_exactly_as_before(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root, 25)
    before = _view(root)
    t = evonb.open_table(str(root))
    t.set_properties({ARCHIVE_PROPERTY: "3"})
    t.alter("ALTER TABLE t RENAME COLUMN c0 TO first")
    assert len(_completed_files(root)) <= 5 and len(_archives(root)) == 1
    assert _view(root, upto=25) == before  # every commit, its completion and its schema
    t = evonb.open_table(str(root))
    assert len(t.timeline.archived_instants()) >= 22
    assert str(t.schema_at(t.history()[0].instant)) == before["schemas"][0]  # time travel
    assert t.schema.find("first") is not None
    report = check_table(root)
    assert report.ok, report.render()
    assert report.stats["commits"] == 26 and report.stats["archived"] >= 22
    assert "archived" in report.render()


def test_the_timeline_folder_stays_bounded(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root, 1, keep=3)
    sizes = []
    for i in range(40):
        t.alter(f"ALTER TABLE t ADD COLUMN c{i} int")
        sizes.append(len(_completed_files(root)))
        assert len(_archives(root)) <= 2  # the newest two archives are kept
    assert max(sizes) == 5 and min(sizes[10:]) == 3  # between keep and 2 * keep - 1
    files = {p.name for p in (root / ".evo/timeline").iterdir() if p.is_file()}
    assert len(files) <= 10  # each commit's requested file leaves with it
    latest = json.loads((root / ".evo/timeline/archive" / _archives(root)[-1]).read_text())
    assert len(latest["commits"]) + len(_completed_files(root)) == 41  # one archive holds all
    assert len(evonb.open_table(str(root)).history()) == 41


def test_rolling_back_an_archived_commit_is_refused_and_changes_nothing(
        tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root, 10, keep=2)
    before = _view(root)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    old = t.history()[2].instant
    with pytest.raises(EvoError, match=rf"Cannot roll back {old}: commit \d+ is archived") as e:
        t.rollback(old, cascade=True)
    assert ARCHIVE_PROPERTY in str(e.value)  # the fix
    assert _view(root) == before
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == files
    done = t.rollback()  # the latest commit is never archived
    assert done.operation == "rollback" and len(t.history()) == 10
    assert check_table(root).ok


def test_a_pending_attempt_holds_archiving_back(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = _table(root, 3, keep=2)
    attempt = t.timeline.requested("commit")  # a writer still at work (or crashed)
    for i in range(8):
        t.alter(f"ALTER TABLE t ADD COLUMN d{i} int")
    archived = t.timeline.archived_instants()
    assert len(archived) == 3 and max(archived) < attempt.timestamp  # none after the attempt
    assert len(_completed_files(root)) == 8
    t.timeline.abort(attempt)
    t.alter("ALTER TABLE t ADD COLUMN last int")
    assert len(_completed_files(root)) == 2 and len(t.history()) == 12


def test_an_interrupted_archiving_leaves_each_commit_read_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    _table(root, 7)
    before = _view(root)
    tl = Timeline(root)
    deleted: list[str] = []
    real = type(tl.io).delete

    def crash_after_two(io: Any, path: Any) -> None:
        if len(deleted) == 2:
            raise OSError("killed")
        deleted.append(Path(path).name)
        real(io, path)

    monkeypatch.setattr(type(tl.io), "delete", crash_after_two)
    with pytest.raises(OSError, match="killed"):
        tl.archive(keep=2)
    monkeypatch.undo()
    assert len(_archives(root)) == 1 and len(_completed_files(root)) == 7  # in both places
    assert _view(root) == before
    assert check_table(root).ok
    assert Timeline(root).archive(keep=2) is not None  # the next one removes the leftovers
    assert len(_completed_files(root)) == 2 and _view(root) == before
    names = {p.name for p in (root / ".evo/timeline").iterdir() if p.is_file()}
    assert all(n.split(".")[0] in {r.instant for r in Timeline(root).completed()[-2:]}
               for n in names)  # requested files of archived commits are gone too


def test_a_reader_that_listed_before_archiving_still_sees_every_commit(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root, 8)
    reader = Timeline(root)
    expected = [r.instant for r in reader.completed()]
    stale = Timeline(root)
    listed = stale._list_now()  # listed, then the files are archived before it reads them
    assert Timeline(root).archive(keep=2) is not None
    records, _ = stale._completed(listed)
    assert [r.instant for r in records] == expected


def test_a_corrupt_archive_is_an_error_never_a_shorter_history(tmp_path: Path) -> None:
    root = tmp_path / "t"
    data = root / "data"
    data.mkdir(parents=True)
    for i in range(3):
        pq.write_table(pa.table({"id": [i, i + 10]}), data / f"part-{i}.parquet")
    t = evonb.convert(str(root), properties={ARCHIVE_PROPERTY: "1"})
    for i in range(4):
        t.alter(f"ALTER TABLE t ADD COLUMN c{i} int")
    assert sorted(evonb.open_table(str(root)).to_arrow().column("id").to_pylist()) == [
        0, 1, 2, 10, 11, 12]
    report = check_table(root)
    assert report.ok and report.stats["archived"] >= 4, report.render()  # the data is live
    archive = root / ".evo/timeline/archive" / _archives(root)[-1]
    archive.write_bytes(archive.read_bytes()[:40])  # truncated
    with pytest.raises(MetadataCorruptError, match=archive.name):
        evonb.open_table(str(root)).history()
    report = check_table(root)
    assert any(p.kind == "corrupt-metadata" and archive.name in p.path for p in report.problems)
    repaired = repair_table(root)
    assert not any("removed" in r for r in repaired.repaired)
    assert sorted(p.name for p in data.iterdir()) == [f"part-{i}.parquet" for i in range(3)]


def test_archive_names_and_the_property(tmp_path: Path) -> None:
    assert is_archive_name("20261127141156366.archive.json")
    assert not is_archive_name("20261127141156366.checkpoint.json")
    with pytest.raises(EvoError, match=ARCHIVE_PROPERTY):
        evonb.create_table(str(tmp_path / "t"), "id bigint not null", primary_key="id",
                           properties={ARCHIVE_PROPERTY: "-1"})
    t = _table(tmp_path / "u", 12, keep=0)  # 0: never
    assert _archives(tmp_path / "u") == [] and not t.timeline.archived_instants()
