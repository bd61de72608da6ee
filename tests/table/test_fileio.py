"""The storage interface: both local FileIOs honour the contract the commit protocol relies on
(whole-file writes, exclusive create, listings, versions), and ``local-no-rename`` does it with
no rename and no hard link."""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
from pathlib import Path

import pytest

from evonb.errors import UnknownPluginError
from evonb.table.fileio import FileIO, LocalFileIO, NoRenameFileIO, file_io

IOS = [LocalFileIO(), NoRenameFileIO()]


@pytest.fixture(params=IOS, ids=lambda io: io.name)
def io(request) -> FileIO:
    return request.param


def test_write_read_replace(io: FileIO, tmp_path: Path):
    p = tmp_path / "a" / "b" / "f.json"
    io.write(p, b"first")
    assert io.read(p) == b"first"
    v1 = io.info(p).version
    io.write(p, b"2nd!!")  # same size, at once: the version still changes
    assert io.read(p) == b"2nd!!"
    assert io.info(p).version != v1
    assert io.size(p) == 5


def test_write_if_absent_never_overwrites(io: FileIO, tmp_path: Path):
    p = tmp_path / "commit"
    io.write_if_absent(p, b"winner")
    with pytest.raises(FileExistsError):
        io.write_if_absent(p, b"loser")
    assert io.read(p) == b"winner"


def test_listing_sizes_folders_walk(io: FileIO, tmp_path: Path):
    io.write(tmp_path / "x.txt", b"12345")
    io.write(tmp_path / "sub" / "deep" / "y.txt", b"1")
    assert {(f.name, f.size) for f in io.list(tmp_path)} == {("x.txt", 5)}
    assert io.folders(tmp_path) == ["sub"]
    assert io.names(tmp_path) == ["x.txt"] and io.names(tmp_path / "missing") == []
    assert [rel for rel, _ in io.walk(tmp_path)] == ["x.txt", "sub/deep/y.txt"]
    assert io.list(tmp_path / "missing") == []
    assert io.folders(tmp_path / "missing") == []


def test_delete_move_exists(io: FileIO, tmp_path: Path):
    a, b = tmp_path / "a.bin", tmp_path / "to" / "b.bin"
    io.write(a, b"data")
    io.move(a, b)
    assert not io.exists(a)
    assert io.read(b) == b"data"
    io.delete(b)
    io.delete(b)  # missing is fine
    assert not io.exists(b)
    io.write(tmp_path / "f" / "g" / "h", b"1")
    io.delete_folder(tmp_path / "f")
    assert not (tmp_path / "f").exists()
    with pytest.raises(FileNotFoundError):
        io.read(b)
    with pytest.raises(FileNotFoundError):
        io.info(b)


def test_data_files_are_read_through_the_file_io_as_pyarrow_streams(io: FileIO,
                                                                   tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "data" / "part-0.parquet"
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [3, 1, 2]}), sink)
    io.write_if_absent(p, sink.getvalue().to_pybytes())
    with io.open_data(p) as fh:
        assert fh.read(4) == b"PAR1"
        fh.seek(0)
        assert pq.read_table(fh).column("id").to_pylist() == [3, 1, 2]
    info = io.arrow_filesystem().get_file_info(str(p))
    assert info.size == io.size(p)


def test_no_rename_io_never_renames_or_links(tmp_path: Path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("renamed or linked")

    for obj, attr in ((os, "rename"), (os, "replace"), (os, "link"), (shutil, "move")):
        monkeypatch.setattr(obj, attr, refuse)
    io = NoRenameFileIO()
    io.write(tmp_path / "f", b"1")
    io.write(tmp_path / "f", b"22")
    io.write_if_absent(tmp_path / "g", b"3")
    io.move(tmp_path / "g", tmp_path / "h")
    assert (io.read(tmp_path / "f"), io.read(tmp_path / "h")) == (b"22", b"3")
    assert sorted(os.listdir(tmp_path)) == ["f", "h"]  # no temporary files either


def _race(kind: str, path: str, me: int, rounds: int, q) -> None:
    io = NoRenameFileIO() if kind == "local-no-rename" else LocalFileIO()
    won = []
    for r in range(rounds):
        try:
            io.write_if_absent(f"{path}.{r}", f"{me}".encode() * 1000)
            won.append(r)
        except FileExistsError:
            pass
    q.put((me, won))


@pytest.mark.parametrize("kind", ["local", "local-no-rename"])
def test_exclusive_create_has_one_winner_across_processes(kind: str, tmp_path: Path):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    rounds = 40
    procs = [ctx.Process(target=_race, args=(kind, str(tmp_path / "c"), me, rounds, q))
             for me in range(3)]
    for p in procs:
        p.start()
    results = dict(q.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    winners = {r: me for me, won in results.items() for r in won}
    assert sum(len(w) for w in results.values()) == rounds  # each round won exactly once
    for r, me in winners.items():
        assert (tmp_path / f"c.{r}").read_bytes() == f"{me}".encode() * 1000


def _rewrite(path: str, stop_after: int) -> None:
    io = NoRenameFileIO()
    for i in range(stop_after):
        io.write(path, (b"a" * 300_000) if i % 2 else (b"b" * 700_000))


def test_readers_see_whole_files_while_rewritten_in_place(tmp_path: Path):
    path = tmp_path / "meta.json"
    io = NoRenameFileIO()
    io.write(path, b"b" * 700_000)
    writer = mp.get_context("spawn").Process(target=_rewrite, args=(str(path), 300))
    writer.start()
    seen = set()
    try:
        while writer.is_alive() or not seen:
            data = io.read(path)
            assert data in (b"a" * 300_000, b"b" * 700_000), len(data)
            seen.add(len(data))
    finally:
        writer.join(timeout=60)
    assert writer.exitcode == 0


def test_the_process_file_io_is_named_by_the_environment(monkeypatch):
    monkeypatch.delenv("EVONB_FILE_IO", raising=False)
    assert isinstance(file_io(), LocalFileIO) and file_io().name == "local"
    monkeypatch.setenv("EVONB_FILE_IO", "Local-No-Rename")
    assert isinstance(file_io(), NoRenameFileIO)
    monkeypatch.setenv("EVONB_FILE_IO", "os:system")
    with pytest.raises(UnknownPluginError) as err:
        file_io()
    assert "Environment variable EVONB_FILE_IO='os:system'" in str(err.value)
    assert "local-no-rename" in str(err.value)
