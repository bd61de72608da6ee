"""Checks of one data file or log block (it exists, has the size its commit recorded, its
Parquet footer or Avro header reads; ``deep``: every row group and block), and the evonb
error for a file that failed to read, naming the file and ``evonb check``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evonb.errors import CorruptFileError, DataFileError, DataFileMissingError
from evonb.table.avro_records import reader_with_times_as_numbers
from evonb.table.fileio import file_io
from evonb.table.names import CONFIG_FILE, EVO_DIR, parse_log_block


def file_defect(path: Path, entry: Mapping[str, Any], *, deep: bool = False) -> str | None:
    """What is wrong with the data file or log block at ``path`` that the commit entry
    ``entry`` describes, or ``None``: its size must be the ``bytes`` the commit recorded (when
    it recorded one), a Parquet file's footer and an Avro block's header must read, and an
    Avro block must end with its sync marker. ``deep`` also reads every row group (verifying
    page checksums where the writer stored them) and every Avro block, and compares the rows
    read with the ``rows`` recorded."""
    try:
        size = file_io().size(path)
    except FileNotFoundError:
        return "the file is missing"
    recorded = entry.get("bytes")
    if isinstance(recorded, int) and recorded > 0 and size != recorded:
        cut = " (truncated)" if size < recorded else ""
        return f"its size is {size} bytes, its commit recorded {recorded}{cut}"
    try:
        if path.name.endswith(".avro"):
            return _avro_defect(path, entry, deep=deep)
        return _parquet_defect(path, entry, deep=deep)
    except Exception as exc:  # any failure to decode is the finding
        return f"unreadable: {first_line(exc)}"


def _parquet_defect(path: Path, entry: Mapping[str, Any], *, deep: bool) -> str | None:
    import pyarrow.parquet as pq

    # A native stream, never a Python file object: the row groups are read on Arrow's
    # threads, and a thread of Arrow's reading through Python could still be waiting for the
    # interpreter's lock when the interpreter exits (which aborts the process).
    with file_io().open_data(path) as fh:
        try:
            pf = pq.ParquetFile(fh, page_checksum_verification=deep)
        except Exception as exc:
            return f"the Parquet footer does not read: {first_line(exc)}"
        rows = entry.get("rows")
        if isinstance(rows, int) and rows > 0 and pf.metadata.num_rows != rows:
            return f"its footer holds {pf.metadata.num_rows} rows, its commit recorded {rows}"
        if deep:
            for i in range(pf.num_row_groups):
                try:
                    pf.read_row_group(i)
                except Exception as exc:
                    return (f"row group {i} of {pf.num_row_groups} does not read: "
                            f"{first_line(exc)}")
    return None


def _avro_defect(path: Path, entry: Mapping[str, Any], *, deep: bool) -> str | None:
    import fastavro

    with file_io().open_read(path) as fh:
        try:
            reader = fastavro.reader(fh)
            sync = reader._header["sync"]
        except Exception as exc:
            return f"the Avro header does not read: {first_line(exc)}"
        body = fh.tell()
        fh.seek(0, os.SEEK_END)
        end = fh.tell()
        if end > body:
            fh.seek(end - len(sync))
            if fh.read(len(sync)) != sync:
                return "the last Avro block is cut off (no sync marker at the end)"
        if not deep:
            return None
        fh.seek(0)
        count = 0
        try:
            for _ in reader_with_times_as_numbers(fh):  # a date past year 9999 is healthy
                count += 1
        except Exception as exc:
            return f"Avro record {count} does not read: {first_line(exc)}"
    rows = entry.get("rows")
    if isinstance(rows, int) and rows > 0 and count != rows:
        return f"it holds {count} records, its commit recorded {rows}"
    return None


def table_root_of(path: str | os.PathLike[str]) -> Path | None:
    """The folder of the table that holds the data file ``path`` (the nearest folder above it
    with ``.evo/table.json``), or None."""
    here = Path(path).absolute().parent
    for folder in (here, *here.parents):
        if file_io().exists(folder / EVO_DIR / CONFIG_FILE):
            return folder
    return None


def file_error(path: str | os.PathLike[str], exc: BaseException | str) -> DataFileError:
    """The evonb error for the data file or log block ``path`` that failed to read with
    ``exc``: :class:`DataFileMissingError` when it is gone, else :class:`CorruptFileError`;
    the path is relative to its table, whose folder the hint names for ``evonb check``."""
    full = Path(path)
    root = table_root_of(full)
    shown = full.relative_to(root).as_posix() if root is not None else str(full)
    table = str(root) if root is not None else None
    what = "log block" if parse_log_block(full.name) else "data file"
    if not file_io().exists(full):
        return DataFileMissingError(shown, f"the {what} is missing", table=table)
    cause = exc if isinstance(exc, str) else first_line(exc)
    return CorruptFileError(shown, f"the {what} is corrupt or truncated ({cause})",
                            table=table)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


__all__ = ["file_defect", "file_error", "first_line", "table_root_of"]
