"""What a Parquet file stores, as tests check it."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq


def physical_types(path: str | Path) -> dict[str, str]:
    """The physical type of each leaf column of the Parquet file at ``path``, by its dotted
    path (a top-level column's path is its name): ``INT64``, ``INT96``, ``BYTE_ARRAY``..."""
    schema = pq.ParquetFile(path).schema
    return {schema.column(i).path: schema.column(i).physical_type for i in range(len(schema))}
