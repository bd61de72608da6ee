"""Reading a snapshot: one scan per schema version of the live files, merged by field ID."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evonb.schema.schema import Schema
from evonb.schema.types import BIGINT, STRING, NestedField, StructType
from evonb.spark.columns import scan_group, spark_read_type
from evonb.table.file_checks import file_error
from evonb.table.fileio import file_io
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.names import named_with_instant
from evonb.table.read_plan import (
    Col,
    DefaultIn,
    Expr,
    Lit,
    ScanGroup,
    VersionFiles,
    Via,
    one_scan_sets,
    plan_group,
    plan_merged,
)
from evonb.table.snapshot import DataFile

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

VersionLookup = Callable[[str], tuple[Schema, Layout]]


Strategy = Literal["merged", "union"]


def plan_read(root: Path, files: Sequence[DataFile], query: Schema, versions: VersionLookup,
              *, meta: bool = False, strategy: Strategy = "merged",
              native_defaults: bool = False, via: Via | None = None) -> list[ScanGroup]:
    """The scan groups that read ``files`` into ``query`` (pure: no Spark).

    ``merged`` (the default) reads every file in one scan by stable physical names (more than
    one only for a layout that shares a name across a change Spark cannot widen itself, see
    :func:`~evonb.table.read_plan.one_scan_sets`); ``union``
    reads each schema version with its own scan and unions them (simpler, slower; kept as a
    cross-check). ``native_defaults`` lets the Parquet reader fill read defaults where it can
    (see :func:`evonb.table.read_plan.plan_merged`); ``via``: the types each value passes through
    (:func:`evonb.table.read_plan.type_paths`).
    """
    by_version: dict[str, list[DataFile]] = {}
    for f in files:
        by_version.setdefault(f.version, []).append(f)
    if strategy == "merged" and by_version:
        parts: dict[int, tuple[VersionFiles, list[DataFile]]] = {}
        for version, members in by_version.items():
            schema, layout = versions(version)
            part = VersionFiles(schema, layout, frozenset(Path(f.path).name for f in members))
            parts[id(part)] = (part, members)
        groups = []
        for in_one_scan in one_scan_sets([part for part, _ in parts.values()]):
            chosen = [f for part in in_one_scan for f in parts[id(part)][1]]
            merged = plan_merged(query, in_one_scan, tuple(str(root / f.path) for f in chosen),
                                 native_defaults=native_defaults, via=via)
            groups.append(_with_meta(merged, meta, chosen))
        return groups
    groups = []
    for version, members in sorted(by_version.items()):
        schema, layout = versions(version)
        group = plan_group(query, schema, layout, tuple(str(root / f.path) for f in members),
                           via=via)
        groups.append(_with_meta(group, meta, members))
    return groups


def _with_meta(group: ScanGroup, meta: bool, files: Sequence[DataFile]) -> ScanGroup:
    """``group`` with the hidden commit-time column added when ``meta``.

    Files evonb did not write (adopted Parquet or Hudi files) have no such column: their rows
    read the instant of the commit that adopted them.
    """
    if not meta:
        return group
    meta_field = NestedField(2**31 - 1, META_COMMIT_TIME, STRING)
    expr: Expr = Col(META_COMMIT_TIME)
    foreign: dict[str, set[str]] = {}
    for f in files:
        if not named_with_instant(f.path, f.instant):
            foreign.setdefault(f.instant, set()).add(Path(f.path).name)
    for instant, names in sorted(foreign.items()):
        expr = DefaultIn(frozenset(names), Lit(instant, STRING), expr)
    return replace(group, read_type=StructType((*group.read_type.fields, meta_field)),
                   columns=(*group.columns, (META_COMMIT_TIME, expr)))


def read_files(spark: SparkSession, root: Path, files: Sequence[DataFile], query: Schema,
               versions: VersionLookup, *, meta: bool = False,
               with_file: bool = False, with_position: bool = False,
               row_filter: Column | None = None, positions: str | None = None,
               strategy: Strategy = "merged", via: Via | None = None) -> DataFrame:
    """One DataFrame in ``query``'s schema over ``files`` (each read with its own version);
    see :func:`~evonb.spark.columns.scan_group` for ``with_file``, ``with_position``,
    ``row_filter`` and ``positions``, and :func:`plan_read` for ``via``."""
    from pyspark.errors import AnalysisException

    groups = plan_read(root, files, query, versions, meta=meta, strategy=strategy,
                       native_defaults=reader_fills_defaults(spark), via=via)
    try:
        frames = [scan_group(spark, g, with_file=with_file, with_position=with_position,
                             row_filter=row_filter, positions=positions) for g in groups]
    except AnalysisException as exc:  # Spark lists the files when the DataFrame is made
        io = file_io()
        gone = [f for f in files if not io.exists(root / f.path)]
        if "PATH_NOT_FOUND" not in str(exc) or not gone:
            raise
        raise file_error(root / gone[0].path, "it does not exist") from None
    if not frames:
        return empty_frame(spark, query, meta=meta, with_file=with_file,
                           with_position=with_position)
    return reduce(lambda a, b: a.unionByName(b), frames)


def reader_fills_defaults(spark: SparkSession) -> bool:
    """Whether Spark's Parquet reader can be trusted to fill missing columns with their
    ``EXISTS_DEFAULT``: only the vectorized reader (nested columns included) does it right; the
    row-based reader puts defaults in the wrong column."""
    conf = spark.conf
    return all(conf.get(key, "true").strip().lower() == "true" for key in (
        "spark.sql.parquet.enableVectorizedReader",
        "spark.sql.parquet.enableNestedColumnVectorizedReader",
        "spark.sql.defaultColumn.enabled",
    ))


def empty_frame(spark: SparkSession, query: Schema, *, meta: bool = False,
                with_file: bool = False, with_position: bool = False) -> DataFrame:
    """An empty DataFrame with the query's columns."""
    fields = list(query.fields)
    if meta:
        fields.append(NestedField(2**31 - 1, META_COMMIT_TIME, STRING))
    if with_file:
        fields.append(NestedField(2**31 - 2, "_evo_file", STRING))
    if with_position:
        fields.append(NestedField(2**31 - 6, "_evo_pos", BIGINT))
    return spark.createDataFrame([], spark_read_type(StructType(tuple(fields))))
