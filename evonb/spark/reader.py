"""Reading a snapshot: one scan per schema version of the live files, merged by field ID."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING

from evonb.schema.schema import Schema
from evonb.schema.types import STRING, NestedField, StructType
from evonb.spark.columns import scan_group, spark_read_type
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.read_plan import Col, ScanGroup, plan_group
from evonb.table.snapshot import DataFile

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

VersionLookup = Callable[[str], tuple[Schema, Layout]]


def plan_read(root: Path, files: Sequence[DataFile], query: Schema, versions: VersionLookup,
              *, meta: bool = False) -> list[ScanGroup]:
    """The scan groups that read ``files`` into ``query`` (pure: no Spark)."""
    by_version: dict[str, list[str]] = {}
    for f in files:
        by_version.setdefault(f.version, []).append(str(root / f.path))
    groups = []
    for version, paths in sorted(by_version.items()):
        schema, layout = versions(version)
        group = plan_group(query, schema, layout, tuple(paths))
        if meta:
            meta_field = NestedField(2**31 - 1, META_COMMIT_TIME, STRING)
            group = ScanGroup(
                group.version_id, group.files,
                StructType((*group.read_type.fields, meta_field)),
                (*group.columns, (META_COMMIT_TIME, Col(META_COMMIT_TIME))),
            )
        groups.append(group)
    return groups


def read_files(spark: SparkSession, root: Path, files: Sequence[DataFile], query: Schema,
               versions: VersionLookup, *, meta: bool = False,
               with_file: bool = False) -> DataFrame:
    """One DataFrame in ``query``'s schema over ``files`` (each read with its own version)."""
    groups = plan_read(root, files, query, versions, meta=meta)
    frames = [scan_group(spark, g, with_file=with_file) for g in groups]
    if not frames:
        return empty_frame(spark, query, meta=meta, with_file=with_file)
    return reduce(lambda a, b: a.unionByName(b), frames)


def empty_frame(spark: SparkSession, query: Schema, *, meta: bool = False,
                with_file: bool = False) -> DataFrame:
    """An empty DataFrame with the query's columns."""
    fields = list(query.fields)
    if meta:
        fields.append(NestedField(2**31 - 1, META_COMMIT_TIME, STRING))
    if with_file:
        fields.append(NestedField(2**31 - 2, "_evo_file", STRING))
    return spark.createDataFrame([], spark_read_type(StructType(tuple(fields))))
