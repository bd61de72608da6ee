"""Large array literals for query plans.

A merge-on-read read filters its base scan with a bitmap held in an array literal (a bit per
base row, up to 8 MiB). Spark builds ``array<bigint>`` literals from Python (``F.array``,
``from_json``) as a ``GenericArrayData``: one boxed ``Long`` per element, which the optimizer
constant-folds, every task deserializes and the filter unboxes row by row. Here the literal is
Spark's compact ``UnsafeArrayData``, built in the JVM from the raw little-endian bytes: one
``byte[]`` on the wire and in every task, read in place by ``element_at``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, SparkSession

_NOT_NULL_LONGS = '{"type":"array","elementType":"long","containsNull":false}'


def long_array(spark: SparkSession, values: Sequence[int] | np.ndarray) -> Column:
    """An ``array<bigint>`` literal (no nulls) holding ``values``.

    Built as an ``UnsafeArrayData`` through the session's JVM. Where that is not reachable
    (a Spark Connect session, or a Spark whose internal classes differ) the literal is parsed
    from JSON instead: the same values, only slower to plan and to read."""
    data = np.ascontiguousarray(np.asarray(values, dtype=np.int64), dtype="<i8")
    try:
        return _unsafe_long_array(spark, data)
    except Exception:  # any py4j or import failure: the portable literal
        from pyspark.sql import functions as F

        return F.from_json(F.lit(json.dumps(data.tolist())), "array<bigint>")


def _unsafe_long_array(spark: SparkSession, data: np.ndarray) -> Column:
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm = spark._jvm  # type: ignore[attr-defined]
    if jvm is None:
        raise RuntimeError("no JVM")
    exprs = jvm.org.apache.spark.sql.catalyst.expressions
    offset = jvm.org.apache.spark.unsafe.Platform.BYTE_ARRAY_OFFSET
    array = exprs.UnsafeArrayData.fromPrimitiveArray(data.tobytes(), offset, len(data), 8)
    dtype = jvm.org.apache.spark.sql.types.DataType.fromJson(_NOT_NULL_LONGS)
    literal = exprs.Literal(array, dtype)
    return ClassicColumn(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(literal))
