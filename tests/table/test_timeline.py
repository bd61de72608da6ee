"""Atomic writes, instants and the commit timeline."""

from __future__ import annotations

import json
import multiprocessing
import os
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest

from evonb.errors import CommitNotFoundError, ConflictError, EvoError, MetadataCorruptError
from evonb.table import timeline as timeline_mod
from evonb.table.fsutil import (
    atomic_write_bytes,
    atomic_write_json,
    location_uri,
    read_json,
    table_path,
)
from evonb.table.instants import (
    INITIAL_INSTANT,
    InvalidInstantError,
    add_millis,
    format_instant,
    instant_from_datetime,
    is_instant,
    new_instant,
    parse_instant,
)
from evonb.table.timeline import CommitRecord, Instant, State, Timeline

# ---------------------------------------------------------------- fsutil


def test_atomic_write_json_format_and_replace(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "a.json"
    atomic_write_json(p, {"b": 1, "a": "é", "files": [{"y": 1, "x": [1, 2]}, {"x": None}],
                          "ints": [3, 1], "nested": {"d": {"z": 1, "w": 2}}})
    # members sorted, one per line; a list of objects one element per line; the rest compact
    assert p.read_text(encoding="utf-8") == (
        '{\n"a":"é",\n"b":1,\n"files":[\n{"x":[1,2],"y":1},\n{"x":null}\n],\n'
        '"ints":[3,1],\n"nested":{"d":{"w":2,"z":1}}\n}\n')
    atomic_write_json(p, [])
    assert p.read_text() == "[]\n"
    atomic_write_json(p, {"c": 2})
    assert read_json(p) == {"c": 2}
    assert os.listdir(p.parent) == ["a.json"]


def test_exclusive_write_never_overwrites(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    atomic_write_bytes(p, b'{"v": 1}', exclusive=True)
    for _ in range(3):
        with pytest.raises(FileExistsError):
            atomic_write_bytes(p, b'{"v": 2}', exclusive=True)
    assert read_json(p) == {"v": 1}
    assert os.listdir(tmp_path) == ["x.json"]  # no temp files left behind


@pytest.mark.parametrize(
    "content",
    [b"", b"   \n", b'{"a": 1, "b": [1, 2', b"{not json}", b'{"a": "\xff\xfe"}', b"[1,]"],
    ids=["empty", "blank", "truncated", "garbage", "non-utf8", "trailing-comma"],
)
def test_read_json_corrupt_names_the_file(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(MetadataCorruptError) as info:
        read_json(p)
    assert info.value.path == str(p)
    assert str(p) in str(info.value)


def test_read_json_missing_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "nope.json")


def test_table_path_accepts_file_uris(tmp_path: Path) -> None:
    assert table_path(f"file://{tmp_path}") == tmp_path
    assert table_path(f"file:{tmp_path}") == tmp_path
    for uri in ("gs://bucket/t", "wasbs://c@acct.blob.core.windows.net/t", "hdfs://nn/t"):
        with pytest.raises(EvoError, match=uri.split(":")[0] + "://"):
            table_path(uri)


def test_table_path_keeps_object_store_locations() -> None:
    assert table_path("s3://bucket/a/t") == Path("s3:/bucket/a/t")
    assert table_path("s3a://bucket/a/t/") == Path("s3:/bucket/a/t")  # s3a: the same store
    assert table_path(Path("s3a://bucket/t")) == Path("s3:/bucket/t")
    assert location_uri(table_path("s3://bucket/t"), spark=True) == "s3a://bucket/t"
    assert location_uri(Path("/data/t")) == "/data/t"
    with pytest.raises(EvoError, match="no bucket"):
        table_path("s3:///t")


def test_table_path_keeps_azure_locations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    one = Path("az:/c@acct/a/t")
    for uri in ("abfss://c@acct.dfs.core.windows.net/a/t", "abfs://c@acct.dfs.core.windows.net/a/t/",
                "az://c/a/t", "az://c@acct/a/t", Path("abfss://c@acct.dfs.core.windows.net/a/t"),
                Path("az://c/a/t"), one):
        assert table_path(uri) == one, uri
    assert table_path("abfss://c@other.blob.core.windows.net/t") == Path("az:/c@other/t")
    assert location_uri(one) == "az://c@acct/a/t"
    assert location_uri(one, spark=True) == "abfss://c@acct.dfs.core.windows.net/a/t"
    assert table_path(location_uri(one)) == one
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME")
    with pytest.raises(EvoError, match="names no storage account") as refused:
        table_path("az://c/t")
    assert "AZURE_STORAGE_ACCOUNT_NAME" in (refused.value.hint or "")


# ---------------------------------------------------------------- instants


def test_new_instant_strictly_increasing() -> None:
    seen = [new_instant() for _ in range(1000)]
    assert all(is_instant(s) and len(s) == 17 for s in seen)
    assert all(a < b for a, b in pairwise(seen))
    chained = [new_instant()]
    for _ in range(999):
        chained.append(new_instant(after=chained[-1]))
    assert all(a < b for a, b in pairwise(chained))


def test_new_instant_bumps_past_after() -> None:
    ahead = format_instant(datetime.now(UTC) + timedelta(seconds=2))
    assert new_instant(after=ahead) == add_millis(ahead, 1)
    assert new_instant(after=INITIAL_INSTANT) > ahead


def test_instant_parsing() -> None:
    assert is_instant("20261122100000123")
    assert is_instant(INITIAL_INSTANT)
    assert not is_instant("20261322100000123")  # month 13
    assert not is_instant("2026112210000012")
    assert not is_instant("2026112210000012x")
    assert not is_instant(20261122100000123)
    dt = parse_instant("20261122100000123")
    assert dt == datetime(2026, 11, 22, 10, 0, 0, 123000, tzinfo=UTC)
    assert format_instant(dt) == "20261122100000123"
    assert add_millis("20261231235959999", 1) == "20270101000000000"
    with pytest.raises(ValueError):
        parse_instant("2026-11-22")


def test_instant_from_datetime() -> None:
    assert instant_from_datetime("2026-11-22 10:00:00") == "20261122100000000"
    assert instant_from_datetime("2026-11-22T10:00:00Z") == "20261122100000000"
    assert instant_from_datetime("2026-11-22T12:00:00.250+02:00") == "20261122100000250"
    assert instant_from_datetime("2026-11-22") == "20261122000000000"
    assert instant_from_datetime(date(2026, 11, 22)) == "20261122000000000"
    assert instant_from_datetime(datetime(2026, 11, 22, 10)) == "20261122100000000"
    assert instant_from_datetime("20261122100000001") == "20261122100000001"
    with pytest.raises(InvalidInstantError):
        instant_from_datetime("yesterday")
    with pytest.raises(EvoError):
        instant_from_datetime("2026-02-30")


# ---------------------------------------------------------------- timeline


def test_state_transitions_and_pending(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    assert tl.instants() == [] and tl.completed() == [] and tl.last_completed() is None

    req = tl.requested("commit", plan={"files": 3})
    assert req.state is State.REQUESTED and req.action == "commit"
    assert tl.pending() == [req]
    assert tl.read(req) == {"files": 3}

    inf = tl.inflight(req, {"progress": 1})
    assert inf == Instant(req.timestamp, "commit", State.INFLIGHT)
    assert tl.pending() == [inf]
    with pytest.raises(ConflictError):
        tl.inflight(req)

    rec = tl.complete(req.timestamp, {"operation": "upsert", "schema_version": INITIAL_INSTANT})
    assert rec == CommitRecord(req.timestamp, "commit", rec.metadata)
    assert rec.operation == "upsert" and rec.schema_version == INITIAL_INSTANT
    assert req.timestamp in str(rec) and "upsert" in str(rec)
    assert tl.pending() == []
    assert tl.completed() == [rec]
    assert tl.last_completed() == rec
    assert tl.is_completed(req)
    with pytest.raises(ConflictError):
        tl.complete(req, {"operation": "again"})
    assert tl.get(req.timestamp).metadata["operation"] == "upsert"
    states = [i.state for i in tl.instants()]
    assert states == [State.REQUESTED, State.INFLIGHT, State.COMPLETED]
    assert [i.state for i in tl.instants([State.COMPLETED])] == [State.COMPLETED]

    # a second action, aborted: its files go, the commit stays
    req2 = tl.requested("alter")
    assert req2.timestamp > req.timestamp
    tl.inflight(req2)
    assert [i.timestamp for i in tl.pending()] == [req2.timestamp]
    tl.abort(req2)
    assert tl.pending() == []
    with pytest.raises(ConflictError):
        tl.complete(req2, {})  # rolled back: no requested file any more
    with pytest.raises(ConflictError):
        tl.abort(req)  # completed instants are removed with remove_completed

    tl.remove_completed(req)
    assert tl.instants() == [] and tl.completed() == []
    with pytest.raises(CommitNotFoundError):
        tl.remove_completed(req)


def test_operation_defaults_to_action(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    rec = tl.complete(tl.requested("clean"), {})
    assert rec.operation == "clean"
    with pytest.raises(KeyError):
        _ = rec.schema_version


def _commit_many(tl: Timeline, n: int) -> list[str]:
    out = []
    for k in range(n):
        inst = tl.requested("commit")
        tl.complete(inst, {"n": k})
        out.append(inst.timestamp)
    return out


def test_lookups_and_nearest(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    ts = _commit_many(tl, 8)
    assert [r.instant for r in tl.completed()] == ts
    assert tl.get(ts[3]).metadata == {"n": 3, "completion_time": tl.get(ts[3]).completion}

    with pytest.raises(CommitNotFoundError) as info:
        tl.get("20000101000000000")
    assert info.value.nearest == ts[:3]
    assert "nearest" in str(info.value)

    assert [r.instant for r in tl.completed_after(ts[5])] == ts[6:]
    assert [r.instant for r in tl.completed_between(ts[1], ts[4])] == ts[2:5]
    assert tl.latest_at_or_before(ts[4]).instant == ts[4]
    assert tl.latest_at_or_before(add_millis(ts[-1], 10_000)).instant == ts[-1]
    assert tl.latest_at_or_before(datetime.now(UTC) + timedelta(days=1)).instant == ts[-1]
    with pytest.raises(CommitNotFoundError) as info:
        tl.latest_at_or_before("2001-01-01")
    assert info.value.nearest == ts[:3]


def test_nearest_names_three_either_side(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    base = "20260101000000000"
    stamps = [add_millis(base, 10 * k) for k in range(10)]
    for s in stamps:
        tl.complete(tl.requested("commit", instant=s), {})
    with pytest.raises(CommitNotFoundError) as info:
        tl.get(add_millis(base, 45))
    assert info.value.nearest == stamps[2:5] + stamps[5:8]


def test_explicit_instant_clash(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    inst = tl.requested("commit", instant="20260101000000000")
    with pytest.raises(ConflictError):
        tl.requested("commit", instant=inst.timestamp)
    with pytest.raises(ConflictError):  # same timestamp, another action
        tl.requested("alter", instant=inst.timestamp)
    assert tl.instants() == [inst]
    with pytest.raises(ValueError):
        tl.requested("frobnicate")


def test_requested_retries_after_clash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tl = Timeline(tmp_path)
    taken = tl.requested("commit", instant="20260101000000000")
    issued = iter([taken.timestamp, taken.timestamp])
    real = timeline_mod.new_instant
    monkeypatch.setattr(
        timeline_mod, "new_instant", lambda after=None: next(issued, None) or real(after)
    )
    fresh = tl.requested("commit")
    assert fresh.timestamp > taken.timestamp
    assert len(tl.instants()) == 2


def test_ignores_foreign_and_temp_files(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    rec = tl.complete(tl.requested("commit"), {"a": 1})
    for name in ["README", "123.commit", ".20260101000000000.commit.x.tmp",
                 "20260101000000000.commit.tmp", "20260101000000000.requested",
                 "20260101000000000.Commit"]:
        (tl.path / name).write_text("garbage")
    assert tl.completed() == [rec]
    assert len(tl.instants()) == 2


def test_corrupt_completed_file_is_named(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    tl.complete(tl.requested("commit"), {"a": 1})
    inst = tl.requested("commit")
    bad = tl.path / f"{inst.timestamp}.commit"
    bad.write_text('{"operation": "ups')
    with pytest.raises(MetadataCorruptError) as info:
        tl.completed()
    assert info.value.path == str(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(MetadataCorruptError, match="JSON object"):
        tl.completed()


def test_completed_parses_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tl = Timeline(tmp_path)
    tl.path.mkdir(parents=True)
    base = "20260101000000000"
    for k in range(2000):
        ts = add_millis(base, k)
        (tl.path / f"{ts}.commit.requested").write_text("{}")
        (tl.path / f"{ts}.commit").write_text(json.dumps({"n": k}))
    reads: list[str] = []
    real = timeline_mod.read_json
    monkeypatch.setattr(timeline_mod, "read_json", lambda p: reads.append(str(p)) or real(p))
    first = tl.completed()
    assert len(first) == 2000 and len(reads) == 2000
    assert tl.completed() == first
    assert len(reads) == 2000  # served from the cache
    last = tl.path / f"{add_millis(base, 1999)}.commit"
    last.write_text(json.dumps({"n": "changed", "pad": "x" * 10}))
    assert tl.completed()[-1].metadata["n"] == "changed"
    assert len(reads) == 2001
    tl.remove_completed(add_millis(base, 0))
    assert len(tl.completed()) == 1999


def test_a_held_listing_is_one_listing_until_this_timeline_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    tl = Timeline(tmp_path)
    first = tl.complete(tl.requested("commit"), {})
    listed: list[str] = []  # listings of the timeline folder, by thread
    archives: list[str] = []  # and of the archives' folder (listed after it)
    real = type(tl.io).list_where  # every listing of a local folder (list too) goes here
    monkeypatch.setattr(type(tl.io), "list_where",
                        lambda io, folder, keep: (listed if Path(folder) == tl.path else archives)
                        .append(threading.current_thread().name) or real(io, folder, keep))
    second = tl.requested("commit")
    with tl.listing_held():
        assert tl.completed() == [first] and tl.last_completed() == first
        assert tl.completed_after(first) == []
        assert len(listed) == 1 and len(archives) == 1  # one listing for the three reads
        # another thread reads the folder itself: it sees what is there now
        (tl.path / f"{add_millis(second.timestamp, 5)}.clean").write_text("{}")
        seen: list[int] = []
        other = threading.Thread(target=lambda: seen.append(len(tl.completed())), name="other")
        other.start()
        other.join()
        assert seen == [2] and listed.count("other") == 1
        (tl.path / f"{add_millis(second.timestamp, 5)}.clean").unlink()
        # this timeline completes a commit: the held listing gets the file it published (its
        # version looked up alone), so the next read sees it without listing again
        done = tl.complete(second, {})
        assert tl.completed() == [first, done]
        assert listed.count("MainThread") == 1  # complete's own reads used the held one
        with tl.listing_held():  # nested: the outer block still holds
            assert tl.completed() == [first, done]
        assert listed.count("MainThread") == 1
        tl.remove_completed(done)
        assert tl.completed() == [first]
        assert listed.count("MainThread") == 2
        tl.forget_listing()  # as taking the table lock does: the next read lists again
        assert tl.completed() == [first]
        assert listed.count("MainThread") == 3
    assert tl.completed() == [first] and tl.completed() == [first]  # outside: each lists
    assert listed.count("MainThread") == 5
    # the archives are listed once per hold and per read outside: completing a commit
    # changes the timeline folder, not the archives
    assert archives.count("MainThread") == 5


def _reserve_many(root: str, action: str, n: int, queue: multiprocessing.Queue) -> None:
    tl = Timeline(root)
    queue.put([tl.requested(action).timestamp for _ in range(n)])


@pytest.mark.parametrize("actions", [("commit", "commit"), ("commit", "deltacommit")])
def test_two_processes_get_distinct_instants(tmp_path: Path, actions: tuple[str, str]) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_reserve_many, args=(str(tmp_path), action, 50, queue))
        for action in actions
    ]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    stamps = results[0] + results[1]
    assert len(stamps) == 100
    assert len(set(stamps)) == 100
    on_disk = Timeline(tmp_path).instants()
    assert len(on_disk) == 100
    assert len({i.timestamp for i in on_disk}) == 100


# ---------------------------------------------------------------- completion order


def test_commits_list_in_completion_order(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    first = tl.requested("commit")
    second = tl.requested("commit")
    assert first.timestamp < second.timestamp
    b = tl.complete(second, {"n": "b"})  # started later, completes first
    a = tl.complete(first, {"n": "a"})
    assert a.completion > b.completion >= second.timestamp
    assert [r.instant for r in tl.completed()] == [second.timestamp, first.timestamp]
    assert tl.last_completed() == a
    assert [r.instant for r in tl.completed_after(second.timestamp)] == [first.timestamp]
    assert tl.completed_after(first.timestamp) == []
    assert [r.instant for r in tl.completed_between(b, a)] == [first.timestamp]
    assert tl.latest_at_or_before(second.timestamp) == b  # an instant names its commit
    assert tl.latest_at_or_before(add_millis(a.completion, 1)) == a
    assert tl.latest_at_or_before(b.completion) == b  # a time: completed at or before it
    assert tl.get(first.timestamp) == a
    on_disk = read_json(tl.path / f"{first.timestamp}.commit")
    assert on_disk["completion_time"] == a.completion  # one file: commit and its order


def test_completion_times_increase_even_when_the_clock_does_not(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    ahead = format_instant(datetime.now(UTC) + timedelta(hours=1))
    first = tl.complete(tl.requested("commit"), {}, after=ahead)
    assert first.completion == add_millis(ahead, 1)
    second = tl.complete(tl.requested("commit"), {})
    assert second.completion == add_millis(first.completion, 1)
    third = tl.complete(tl.requested("commit", instant=add_millis(ahead, 5000)), {})
    assert third.completion == add_millis(ahead, 5000)  # never before its own instant
    stale = tl.complete(tl.requested("commit"), {"completion_time": "20000101000000000"})
    assert stale.completion > third.completion  # assigned, never taken from the caller


def test_commits_without_completion_time_complete_at_their_instant(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    tl.path.mkdir(parents=True)
    base = "20260101000000000"
    legacy = [add_millis(base, 10 * k) for k in (2, 0, 1)]
    for ts in legacy:  # written by an older evonb: instant order is completion order
        (tl.path / f"{ts}.commit.requested").write_text("{}")
        (tl.path / f"{ts}.commit").write_text("{}")
    assert [r.instant for r in tl.completed()] == sorted(legacy)
    assert all(r.completion == r.instant and not r.has_completion for r in tl.completed())
    new = tl.complete(tl.requested("commit", instant=add_millis(base, 1)), {})
    assert new.completion > max(legacy) and new.has_completion
    assert tl.completed()[-1] == new
    assert [r.instant for r in tl.completed_after(sorted(legacy)[1])] == [sorted(legacy)[2],
                                                                          new.instant]


def test_completed_after_a_commit_that_is_gone_is_a_superset(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    gone = tl.complete(tl.requested("commit"), {})
    later = tl.complete(tl.requested("commit"), {})
    tl.remove_completed(gone)
    assert tl.completed_after(gone.instant) == [later]
    assert tl.completed_after(gone) == [later]  # a record carries its own completion time


def test_a_bad_completion_time_is_corrupt_metadata(tmp_path: Path) -> None:
    tl = Timeline(tmp_path)
    rec = tl.complete(tl.requested("commit"), {})
    path = tl.path / f"{rec.instant}.commit"
    path.write_text(json.dumps({"completion_time": 12}))
    with pytest.raises(MetadataCorruptError, match="completion_time"):
        tl.completed()
