"""FileCache: a parsed file is reused while the file is unchanged, and read again once it
changed (size, modification time or inode)."""

from __future__ import annotations

import os

import pytest

from evonb.table.fsutil import FileCache, atomic_write_json, file_stamp, read_json


def test_unchanged_file_is_parsed_once_and_a_changed_one_again(tmp_path):
    path = tmp_path / "a.json"
    atomic_write_json(path, {"v": 1})
    cache: FileCache[dict] = FileCache()
    reads = []

    def parse(p):
        reads.append(p)
        return read_json(p)

    first = cache.get(path, parse)
    assert cache.get(path, parse) is first and len(reads) == 1
    atomic_write_json(path, {"v": 22})  # replaced: another inode and size
    assert cache.get(path, parse) == {"v": 22} and len(reads) == 2
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # touched
    assert cache.get(path, parse) == {"v": 22} and len(reads) == 3


def test_missing_file_raises_and_is_forgotten_and_keys_can_be_names(tmp_path):
    path = tmp_path / "b.json"
    atomic_write_json(path, [1])
    cache: FileCache[list] = FileCache()
    assert cache.get(path, read_json, key="b") == [1]
    path.unlink()
    with pytest.raises(FileNotFoundError):
        cache.get(path, read_json, key="b")
    atomic_write_json(path, [2])
    assert cache.get(path, read_json, key="b") == [2]


def test_put_keeps_a_value_for_the_file_as_it_is(tmp_path):
    path = tmp_path / "c.json"
    atomic_write_json(path, {"v": 1})
    cache: FileCache[object] = FileCache()
    kept = object()
    cache.put(path, kept)
    assert cache.get(path, read_json) is kept
    cache.retain([])
    assert cache.get(path, read_json) == {"v": 1}
    cache.discard(path)
    assert file_stamp(path)[1] == path.stat().st_size


def test_a_file_that_cannot_be_looked_at_gives_the_fallback_when_one_is_given(tmp_path):
    cache: FileCache[str] = FileCache()
    missing = tmp_path / "gone.json"
    assert cache.get(missing, read_json, unreadable="last") == "last"
    assert cache.get(tmp_path / ("x" * 300), read_json, unreadable="last") == "last"
    with pytest.raises(OSError):
        cache.get(tmp_path / ("x" * 300), read_json)
