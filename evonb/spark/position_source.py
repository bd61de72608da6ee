"""evonb's Parquet source for merge-on-read base files, read inside the JVM.

A merge-on-read read drops the base rows that log blocks replace or delete by their position in
the file. Spark's own expressions can do it (:func:`evonb.spark.mor._kept_rows`), at the cost of
a few array reads per row; this source (``org.evonb.spark.PositionFilteredParquet``, one of
evonb's JVM classes, :mod:`evonb.spark.jvm`) does it in the Parquet reader itself: it adds a
column, ``_evo_deleted``, set a batch at a time from a bitmap per file and Spark's row index,
and the read keeps the rows where it is false.

Where the session cannot load it, reads use the built-in filter: the same rows, slower.
:func:`available` says which one a session has.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evonb.spark import jvm

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

SOURCE = "org.evonb.spark.PositionFilteredParquet"
"""The class name Spark loads the source by."""
DELETED = "_evo_deleted"
"""The column the source adds: whether the row is replaced or deleted by a log block."""
OPTION = "evonb.positions"
"""The read option that carries the bitmaps (:func:`encode`)."""
PROPERTY = "evonb.mor.read.jvm_filter"
"""The table property that lets reads use the source where the session has it (default true;
``false``: always the built-in filter)."""


def available(spark: SparkSession) -> bool:
    """Whether ``spark`` can load the source (its session was started with evonb's jar)."""
    return jvm.loadable(spark, SOURCE)


def bitmap(rows: int, positions: Any) -> Any:
    """A bit per row of a file of ``rows`` rows, set at ``positions`` (an integer array), 64
    rows a word (row ``p`` is bit ``p % 64`` of word ``p // 64``): a NumPy ``uint64`` array
    of at least one word."""
    import numpy as np

    bits = np.zeros(max(1, -(-rows // 64)), dtype=np.uint64)
    pos = np.asarray(positions, dtype=np.int64)
    np.bitwise_or.at(bits, pos >> 6, np.uint64(1) << (pos & 63).astype(np.uint64))
    return bits


def encode(files: Sequence[tuple[str, int, Any]]) -> str:
    """The option :data:`OPTION` for ``files``: each a file name, its number of rows and the
    positions its rows are dropped at (an integer array)."""
    parts = [struct.pack("<i", len(files))]
    for name, rows, positions in files:
        raw = name.encode("utf-8")
        bits = bitmap(rows, positions)
        parts += [struct.pack("<i", len(raw)), raw, struct.pack("<qi", rows, len(bits)),
                  bits.astype("<u8").tobytes()]
    return base64.b64encode(b"".join(parts)).decode("ascii")
