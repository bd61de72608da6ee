"""What one ALTER costs the file system: a fixed number of listings of the timeline folder
however long the history, lookups of completed files only, and the flushes in the order that
makes the commit durable after what it names."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

import evonb
from evonb.table.fileio import file_io
from evonb.table.names import parse_timeline_file
from evonb.table.table import BaseTable, open_table


def _rename(t: BaseTable, n: int) -> None:
    t.alter(f"ALTER TABLE {t.name} RENAME COLUMN c{n} TO c{n + 1}")


def _table(tmp_path: Path) -> BaseTable:
    return evonb.create_table(str(tmp_path / "t"), "id bigint, c0 int", primary_key="id")


def _calls_of_one_alter(t: BaseTable, n: int, monkeypatch: pytest.MonkeyPatch
                        ) -> tuple[Counter[str], list[str]]:
    """How often the ALTER renaming ``c{n}`` lists the timeline folder (by kind), and the
    names of the files it looked up there."""
    io = type(file_io())
    timeline = Path(t.timeline.path)
    calls: Counter[str] = Counter()
    looked_up: list[str] = []
    real_where, real_names = io.list_where, io.names

    def list_where(self, folder, keep):  # type: ignore[no-untyped-def]
        found = real_where(self, folder, keep)
        if Path(folder) == timeline:
            calls["list"] += 1
            looked_up.extend(f.name for f in found)
        return found

    def names(self, folder):  # type: ignore[no-untyped-def]
        if Path(folder) == timeline:
            calls["names"] += 1
        return real_names(self, folder)

    with monkeypatch.context() as m:
        m.setattr(io, "list_where", list_where)
        m.setattr(io, "names", names)
        _rename(t, n)
    return calls, looked_up


def test_an_alter_lists_the_timeline_as_often_after_150_commits_as_after_5(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    for n in range(5):
        _rename(t, n)
    early, early_lookups = _calls_of_one_alter(t, 5, monkeypatch)
    for n in range(6, 150):
        _rename(t, n)
    late, late_lookups = _calls_of_one_alter(t, 150, monkeypatch)

    assert late == early
    assert len(early_lookups) == 2 * 6  # the create and five ALTERs, in each listing
    # before the lock: one listing for the base schema and the base commit; under it, one
    # for the schema check, the conflict check, the completion time and the archive check
    assert early["list"] == 2
    # names only: failed attempts, a fresh instant, and the clash check after reserving it
    assert early["names"] == 3
    # only completed files are looked up (requested files are half of the folder here)
    assert late_lookups and all(parse_timeline_file(n).state == "completed"
                                for n in late_lookups)
    folder = os.listdir(t.timeline.path)
    assert sum(1 for n in folder if n.endswith(".requested")) > 50
    completed = sum(1 for n in folder if not n.endswith(".requested")
                    and parse_timeline_file(n) is not None)
    assert len(late_lookups) == 2 * (completed - 1)  # twice each commit before this one
    assert [f.name for f in t.schema.fields] == ["id", "c151"]


def _fsynced_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths flushed from now on, in order (the file each descriptor names)."""
    order: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        order.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return order


def test_a_schema_version_and_its_layout_are_flushed_before_the_commit_that_names_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    order = _fsynced_paths(monkeypatch)
    t.alter(f"ALTER TABLE {t.name} ADD COLUMN extra string")
    version = t.schema.version_id
    schemas = str(Path(t.timeline.path).parent / "schemas")
    timeline = str(t.timeline.path)

    def where(pred) -> int:  # type: ignore[no-untyped-def]
        return next(i for i, p in enumerate(order) if pred(p))

    layout = where(lambda p: f"{version}.layout.json" in p)
    schema = where(lambda p: f"{version}.schema.json" in p)
    schemas_folder = where(lambda p: p == schemas)
    completed = where(lambda p: f"{version}.alter" in p and "requested" not in p)
    assert layout < schemas_folder and schema < schemas_folder < completed
    assert order[-1] == timeline  # the completed file's folder entry, last
    # each of the four files once, the schemas folder once for both of its files, the
    # timeline folder after the requested file and after the completed one
    assert len(order) == 7 and order.count(schemas) == 1 and order.count(timeline) == 2


def test_a_failed_schema_write_flushes_no_folder_and_commits_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(tmp_path)
    before = t.schema
    order = _fsynced_paths(monkeypatch)

    def refuse(self, schema):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(t.schema_store), "save", refuse)
    with pytest.raises(OSError):
        t.alter(f"ALTER TABLE {t.name} ADD COLUMN extra string")
    schemas = str(Path(t.timeline.path).parent / "schemas")
    assert schemas not in order  # the batch ended with an error: nothing to make durable
    assert any(p.endswith(".layout.json") or ".layout.json." in p for p in order)
    assert t.schema == before and len(t.timeline.completed()) == 1
    assert sorted(os.listdir(schemas)) == [f"{before.version_id}.layout.json",
                                           f"{before.version_id}.schema.json"]
    assert not t.timeline.pending()  # the attempt was aborted, its layout file removed


def test_a_commit_that_lands_before_the_lock_is_seen_under_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base schema and base commit come from one listing before the lock; the lock
    forgets it, so a DDL committed by another writer in between is seen and built on."""
    t = _table(tmp_path)
    other = open_table(tmp_path / "t")  # another writer: its own objects, its own listings
    real = type(t).locked
    fired: list[bool] = []

    def locked(self):  # type: ignore[no-untyped-def]
        if self is t and not fired:
            fired.append(True)
            other.alter(f"ALTER TABLE {other.name} ADD COLUMN theirs int")
        return real(self)

    monkeypatch.setattr(type(t), "locked", locked)
    t.alter(f"ALTER TABLE {t.name} ADD COLUMN ours string")
    assert fired
    assert [f.name for f in t.schema.fields] == ["id", "c0", "theirs", "ours"]
    assert [c.operation for c in t.timeline.completed()][-2:] == ["alter", "alter"]
