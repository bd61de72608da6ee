"""Checks of one data file (size, footer, rows) and the error naming a file that failed to
read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evonb.errors import CorruptFileError, DataFileMissingError
from evonb.table.file_checks import file_defect, file_error, first_line, table_root_of
from evonb.table.table import create_table


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, dict]:
    root = create_table(tmp_path / "t", "id int").root
    path = root / "p=1" / "a_0_20260101000000001.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"id": [1, 2, 3]}), path)
    return path, {"rows": 3, "bytes": path.stat().st_size}


def test_an_intact_file_has_no_defect_also_when_read_deeply(data) -> None:
    path, entry = data
    assert file_defect(path, entry) is None
    assert file_defect(path, entry, deep=True) is None
    assert file_defect(path, {}) is None  # nothing recorded: nothing to compare


def test_missing_truncated_and_miscounted_files_are_named(data) -> None:
    path, entry = data
    assert file_defect(path.with_name("gone.parquet"), entry) == "the file is missing"
    assert file_defect(path, {**entry, "bytes": entry["bytes"] + 5}) == (
        f"its size is {entry['bytes']} bytes, its commit recorded {entry['bytes'] + 5} "
        "(truncated)")
    assert file_defect(path, {**entry, "rows": 5}) == (
        "its footer holds 3 rows, its commit recorded 5")
    path.write_bytes(b"not parquet at all")
    assert file_defect(path, {}).startswith("the Parquet footer does not read: ")


def test_file_error_names_the_file_in_its_table(data) -> None:
    path, _ = data
    root = path.parent.parent
    assert table_root_of(path) == root and table_root_of(root.parent / "x.parquet") is None
    err = file_error(path, ValueError("bad footer\nmore"))
    assert isinstance(err, CorruptFileError)
    assert (err.path, err.table) == ("p=1/a_0_20260101000000001.parquet", str(root))
    assert err.reason == "the data file is corrupt or truncated (bad footer)"
    path.unlink()
    gone = file_error(path, "whatever")
    assert isinstance(gone, DataFileMissingError) and gone.reason == "the data file is missing"
    assert first_line(RuntimeError("")) == "RuntimeError"
