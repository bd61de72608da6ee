"""Writing data files: Spark writes Parquet to a staging folder, evonb names and places them.

A file's final name carries the instant that wrote it (``<file-id>_<task>_<instant>.parquet``),
so its schema version is known without opening it. Files only become visible when the commit
that lists them completes; a failed write leaves nothing any reader would see.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evonb.table.fsutil import evo_dir
from evonb.table.key_stats import footer_stats
from evonb.table.snapshot import DataFile

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from evonb.schema.types import Type

STAGING_DIR = "staging"
_TASK = re.compile(r"part-(\d+)")


def staging_dir(root: Path, instant: str) -> Path:
    """Where the write of ``instant`` stages its files."""
    return evo_dir(root) / STAGING_DIR / instant


def write_files(
    df: DataFrame,
    *,
    root: Path,
    instant: str,
    version: str,
    partition_columns: tuple[str, ...] = (),
    max_files: int | None = None,
    options: dict[str, str] | None = None,
    key_columns: Mapping[int, tuple[str, Type]] | None = None,
) -> list[DataFile]:
    """Write ``df`` (physical columns) as Parquet files of the commit ``instant``.

    Returns the files, placed under their partition folders, not yet visible to readers.
    ``key_columns`` (field ID -> physical name and type, see
    :func:`evonb.table.key_stats.key_columns`) are the record-key columns whose min and max
    each file records, from the footer read for its row count.
    """
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    staging = staging_dir(root, instant)
    hidden = [f"__evo_p{i}" for i in range(len(partition_columns))]
    for name, column in zip(hidden, partition_columns, strict=True):
        df = df.withColumn(name, F.col(f"`{column}`"))
    if max_files:
        df = df.coalesce(max_files)
    writer = df.write.mode("overwrite").option("compression", "snappy")
    for key, value in (options or {}).items():
        writer = writer.option(key, value)
    if hidden:
        writer = writer.partitionBy(*hidden)
    writer.parquet(str(staging))

    placed: list[DataFile] = []
    try:
        for src in sorted(staging.rglob("*.parquet")):
            rel_dir = src.parent.relative_to(staging)
            parts = []
            for piece in rel_dir.parts:
                key, _, value = piece.partition("=")
                parts.append(f"{partition_columns[hidden.index(key)]}={value}")
            partition = "/".join(parts)
            match = _TASK.match(src.name)
            task = int(match.group(1)) if match else 0
            name = f"{uuid.uuid4().hex[:20]}_{task}_{instant}.parquet"
            rel = f"{partition}/{name}" if partition else name
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            footer = pq.read_metadata(src)
            stats = footer_stats(footer, key_columns) if key_columns else None
            size = src.stat().st_size
            os.replace(src, dest)
            placed.append(DataFile(path=rel, version=version, instant=instant,
                                   partition=partition, rows=footer.num_rows, bytes=size,
                                   key_stats=stats))
    except BaseException:
        remove_files(root, placed)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return placed


def remove_files(root: Path, files: list[DataFile]) -> None:
    """Delete data files (of a failed or rolled-back commit)."""
    for f in files:
        (root / f.path).unlink(missing_ok=True)
