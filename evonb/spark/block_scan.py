"""Log blocks read inside the JVM, by Spark's own Avro (or Parquet) reader.

Spark 4 ships its Avro file format in ``spark-sql`` (``org.apache.spark.sql.avro.AvroFileFormat``;
the short name ``avro`` still needs the external module), and its file sources take the
``ignoredPathSegmentRegex`` read option, which lets a read list files whose names start with a
dot, as log blocks' names do. Reading blocks there costs no Python worker and no hand-over of
rows from Python to the JVM: for a merge by position it halves the work of the log side of a
snapshot read (``docs/services.md``).

A column is read here when Spark's reader gives it exactly: its name and every nested name is
a valid Avro name (blocks store other names encoded, see
:func:`evonb.schema.avro_convert.avro_name`) and no member is a ``tinyint`` or ``smallint``
(stored as Avro ``int``). Callers fall back to the Python reader otherwise, and when the
session's Spark lacks the format or the option (:func:`jvm_blocks_available`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from evonb.schema.avro_convert import avro_name
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
)
from evonb.spark import jvm
from evonb.spark.columns import literal_paths, spark_read_type

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

AVRO_FORMAT = "org.apache.spark.sql.avro.AvroFileFormat"
"""Spark's Avro file format, by class: part of ``spark-sql`` since Spark 4."""
BLOCK_FORMAT = "org.evonb.spark.LogBlockAvro"
"""evonb's Avro source for flat blocks (:mod:`evonb.spark.jvm`): Spark's Avro source with a
decoder that reads each record straight into a Spark row."""
FLAT_TYPES = frozenset({BOOLEAN, INT, BIGINT, FLOAT, DOUBLE, STRING, BINARY, DATE, TIMESTAMP,
                        TIMESTAMP_NTZ})
"""The column types :data:`BLOCK_FORMAT` decodes."""
HIDDEN_OPTION = "ignoredPathSegmentRegex"
"""The read option naming the file names a listing skips (Spark 4.1 and later)."""
HIDDEN_CONF = "spark.sql.files.ignoredPathSegmentRegex"
KEEP_DOT_NAMES = "^_"
"""Skip names starting with an underscore only: log blocks' names start with a dot."""
RAW_LOCAL_OPTIONS = {"fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
                     "fs.file.impl.disable.cache": "true"}
"""Hadoop settings of a block scan of local paths: read through the raw local file system.
Hadoop's default local file system checks for ``.crc`` files and, without one, still reads
through its checksum layer in 512-byte chunks; blocks have no ``.crc`` files, and Avro reads
them in small pieces (the checksum layer cost a tenth of the Avro scan). A read option applies
to this scan only; the uncached instance is what makes Hadoop honour it."""
JVM_READ_PROPERTY = "evonb.mor.read.jvm"
"""Table property: read log blocks with Spark's reader where it can (``true``, the default)."""


def jvm_blocks_available(spark: SparkSession) -> bool:
    """Whether the session's Spark has the Avro file format and the option that lists files
    whose names start with a dot (checked once per application)."""
    return _available(spark, spark.sparkContext.applicationId)


@lru_cache(maxsize=8)
def _available(spark: SparkSession, application_id: str) -> bool:
    return _probe(spark)


def _probe(spark: SparkSession) -> bool:
    try:
        spark.sparkContext._jvm.java.lang.Class.forName(AVRO_FORMAT)  # type: ignore[union-attr]
        # A registered option has a value (its default at least); an unknown one raises.
        return spark.conf.get(HIDDEN_CONF) is not None
    except Exception:  # no JVM, or a Spark without them
        return False


def jvm_readable(field: NestedField) -> bool:
    """Whether Spark's reader gives ``field`` exactly (see the module docstring)."""
    return avro_name(field.name, set()) == field.name and _readable_type(field.type)


def _readable_type(t: Type) -> bool:
    if isinstance(t, StructType):
        return all(jvm_readable(f) for f in t.fields)
    if isinstance(t, ArrayType):
        return _readable_type(t.element.type)
    if isinstance(t, MapType):
        return _readable_type(t.key.type) and _readable_type(t.value.type)
    return t not in (TINYINT, SMALLINT)


def scan_blocks(spark: SparkSession, paths: Sequence[str], fmt: str, struct: StructType,
                avro: dict | None = None, *, own_reader: bool = True) -> DataFrame:
    """The records of the blocks at ``paths`` (all in ``fmt``, ``avro`` or ``parquet``), with
    the columns of ``struct`` (physical names, each :func:`jvm_readable`).

    Avro blocks whose columns are all of :data:`FLAT_TYPES` go to evonb's own decoder
    (:data:`BLOCK_FORMAT`) where the session has it and ``own_reader``; others to Spark's Avro
    reader, with ``avro``, the blocks' own Avro schema
    (:func:`evonb.spark.avro_log.block_avro_schema`), as the reader's schema less the fields
    outside ``struct``, so Avro steps over them without building their values. Dates and
    timestamps are read as written (proleptic Gregorian, no rebasing).
    """

    reader = (spark.read.schema(spark_read_type(struct))
              .option(HIDDEN_OPTION, KEEP_DOT_NAMES)
              .option("datetimeRebaseMode", "CORRECTED"))
    if all(p.startswith("/") for p in paths):
        reader = reader.options(**RAW_LOCAL_OPTIONS)
    paths = literal_paths(paths)
    if fmt == "parquet":
        return reader.option("int96RebaseMode", "CORRECTED").parquet(*paths)
    if (own_reader and all(f.type in FLAT_TYPES for f in struct.fields)
            and jvm.loadable(spark, BLOCK_FORMAT)):
        return reader.format(BLOCK_FORMAT).load(list(paths))
    if avro is not None:
        wanted = {f.name for f in struct.fields}
        projected = {k: v for k, v in avro.items() if not k.startswith("evonb-")}
        projected["fields"] = [f for f in avro["fields"] if f["name"] in wanted]
        reader = reader.option("avroSchema", json.dumps(projected))
    return reader.format(AVRO_FORMAT).load(list(paths))


__all__ = [
    "AVRO_FORMAT",
    "BLOCK_FORMAT",
    "FLAT_TYPES",
    "JVM_READ_PROPERTY",
    "jvm_blocks_available",
    "jvm_readable",
    "scan_blocks",
]
