"""Full rewrite: the schema changes metadata cannot make, done by rewriting every file.

``Table.rewrite("ALTER TABLE t ALTER COLUMN price TYPE int")`` applies a type change that is not
a widening (double -> int, string -> int, bigint -> int, ...) by reading the whole table, casting
and writing it again in the new schema version, in one ``replacecommit`` (operation
``rewrite``). The cast is checked first: a value that does not fit (does not parse, overflows,
or loses its fraction or digits in a narrowing) fails the rewrite with a
:class:`DataValidationError` that gives the count and a few examples, and nothing is committed;
``on_cast_error="null"`` writes nulls for such values instead (not in a NOT NULL column). Files
of older commits read in the new type follow the same rule, so time travel in the latest schema
shows what the rewrite wrote. ``Table.rewrite(purge_dropped=True)`` rewrites every file in the
latest schema, so data of dropped columns is gone from the files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from evonb.errors import DataValidationError, EvoError
from evonb.schema.diffing import diff
from evonb.schema.promotion import is_number, narrows_number
from evonb.schema.render import backquote
from evonb.schema.schema import Schema, walk
from evonb.schema.spark_convert import type_to_spark
from evonb.schema.types import (
    DOUBLE,
    FLOAT,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
    with_children,
)
from evonb.services.compaction import removed_paths, rewrite_groups
from evonb.services.progress import ProgressCallback, report
from evonb.spark.columns import to_column
from evonb.spark.mor import read_snapshot
from evonb.table.commit import CommitMetadata
from evonb.table.conflicts import check_service
from evonb.table.history import Commit
from evonb.table.layout import META_COMMIT_TIME, Layout, derive_layout
from evonb.table.preview import rewrite_update
from evonb.table.read_plan import physical_struct, plan_group
from evonb.table.transaction import Transaction

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

    from evonb.spark.table import SparkTable

OnCastError = Literal["fail", "null"]
EXAMPLES = 5


def _spark(t: Type) -> Any:

    return type_to_spark(t)


def fits(src: Column, old: Type, new: Type) -> Column:
    """True where the value of ``src`` (type ``old``) converts to ``new`` (nulls fit): it
    casts, floats do not overflow, and a number narrowed (a change no metadata change makes)
    casts back to the same value. A change ``ALTER`` makes in metadata keeps its own
    conversion (a double becomes a decimal rounded half up), so a rewrite writes what a read
    of the older files in the new type gives (:class:`~evonb.table.read_plan.Cast`)."""
    from pyspark.sql import functions as F

    cast = src.try_cast(_spark(new))
    ok = cast.isNotNull()
    if is_number(old) and new in (FLOAT, DOUBLE):
        inf = float("inf")
        ok = ok & ~((F.abs(cast) == F.lit(inf)) & (F.abs(src.cast("double")) != F.lit(inf)))
    elif narrows_number(old, new):
        ok = ok & (cast.cast(_spark(old)) == src)
    return src.isNull() | ok


def converted(src: Column, old: Type, new: Type) -> Column:
    """``src`` cast to ``new``; null where it does not fit."""
    from pyspark.sql import functions as F

    return F.when(fits(src, old, new), src.try_cast(_spark(new)))


class _Retype:
    """The retyped fields of one rewrite, and how to convert the source rows (at any depth:
    struct members, array elements and map values are converted in place)."""

    def __init__(self, source: Schema, target: Schema, layout: Layout, ids: list[int]) -> None:
        self.source, self.target, self.layout = source, target, layout
        self.ids = set(ids)

    def column(self, f: NestedField, src: Column) -> Column:
        """The value of source field ``f`` after the type changes under it (null where a value
        does not fit)."""
        from pyspark.sql import functions as F

        if f.id in self.ids:
            return converted(src, f.type, self.target.field_by_id(f.id).type)
        if not self._under(f):
            return src
        t = f.type
        if isinstance(t, StructType):
            members = [self.column(c, src.getField(self.layout.name(c.id)))
                       .alias(self.layout.name(c.id)) for c in t.fields]
            return F.when(src.isNull(), F.lit(None)).otherwise(F.struct(*members))
        if isinstance(t, ArrayType):
            return F.transform(src, lambda x: self.column(t.element, x))
        if isinstance(t, MapType):
            return F.transform_values(src, lambda _k, v: self.column(t.value, v))
        return src  # pragma: no cover - primitives are retyped themselves or untouched

    def misfits(self, f: NestedField, src: Column) -> list[tuple[int, Column]]:
        """For each retyped field under ``f`` (in a fixed order): an array column of the values
        in the row that do not fit their new type."""
        from pyspark.sql import functions as F

        if f.id in self.ids:
            old, new = f.type, self.target.field_by_id(f.id).type
            return [(f.id, F.filter(F.array(src), lambda v: ~fits(v, old, new)))]
        if not self._under(f):
            return []
        t = f.type
        if isinstance(t, StructType):
            return [check for c in t.fields
                    for check in self.misfits(c, src.getField(self.layout.name(c.id)))]
        inner = t.element if isinstance(t, ArrayType) else t.value  # type: ignore[union-attr]
        values = src if isinstance(t, ArrayType) else F.map_values(src)
        ids = [fid for fid, _ in self.misfits(inner, F.lit(None))]

        def nth(k: int) -> Callable[[Column], Column]:
            return lambda x: self.misfits(inner, x)[k][1]

        return [(fid, F.flatten(F.transform(values, nth(k)))) for k, fid in enumerate(ids)]

    def _under(self, f: NestedField) -> bool:

        return any(info.field.id in self.ids for info in walk((f,)))

    def retyped_source(self) -> Schema:
        """The source schema with the new types in place (what the converted rows hold)."""
        def swap(t: Type) -> Type:
            if t.is_primitive:
                return t
            return with_children(t, tuple(
                c.replace(type=self.target.field_by_id(c.id).type if c.id in self.ids
                          else swap(c.type)) for c in t.children()))

        fields = tuple(f.replace(type=self.target.field_by_id(f.id).type if f.id in self.ids
                                 else swap(f.type)) for f in self.source.fields)
        return Schema(fields=fields, version_id=self.source.version_id,
                      max_column_id=self.source.max_column_id)

    def transform(self, target_layout: Layout) -> Callable[[DataFrame], DataFrame]:
        """Rows in the source's physical columns -> rows in the target's physical columns."""
        from pyspark.sql import functions as F


        shaped = self.retyped_source()
        query = Schema(fields=physical_struct(self.target, target_layout).fields,
                       version_id=self.target.version_id,
                       max_column_id=self.target.max_column_id)
        group = plan_group(query, shaped, self.layout, ())

        def apply(df: DataFrame) -> DataFrame:
            cols = [self.column(f, F.col(backquote(self.layout.name(f.id))))
                    .alias(self.layout.name(f.id)) for f in self.source.fields]
            df = df.select(*cols, F.col(META_COMMIT_TIME))
            out = [to_column(e).alias(name) for name, e in group.columns]
            return df.select(*out, F.col(META_COMMIT_TIME))
        return apply


def _validate(table: SparkTable, data: DataFrame, retype: _Retype, *, on_cast_error: OnCastError
              ) -> dict[str, int]:
    """Count the values that do not fit; raise or return the counts (by column path)."""
    from pyspark.sql import functions as F

    checks = [check for f in retype.source.fields
              for check in retype.misfits(f, F.col(backquote(retype.layout.name(f.id))))]
    if not checks:
        return {}
    row = data.agg(*[F.sum(F.greatest(F.size(bad), F.lit(0))).alias(f"c{i}")
                     for i, (_, bad) in enumerate(checks)]).collect()[0]
    counts = {fid: int(row[f"c{i}"] or 0) for i, (fid, _) in enumerate(checks)}
    failing = [(fid, bad) for fid, bad in checks if counts[fid]]
    if not failing:
        return {}
    source, target = retype.source, retype.target
    required = [fid for fid, _ in failing if not target.field_by_id(fid).nullable]
    if on_cast_error == "fail" or required:
        fid, bad = failing[0]
        path = source.path_of(fid)
        old, new = source.field_by_id(fid).type, target.field_by_id(fid).type
        rows = data.select(F.explode(bad).alias("__value")).limit(EXAMPLES).collect()
        examples = [r["__value"] for r in rows]
        total = sum(counts[f] for f, _ in failing)
        others = "".join(f"; {source.path_of(f)}: {counts[f]}" for f, _ in failing[1:])
        why = ("" if on_cast_error == "fail"
               else f" and {path!r} is NOT NULL, so they cannot become null")
        raise DataValidationError(
            f"Cannot change {path!r} from {old} to {new}: {counts[fid]} values do not fit"
            f"{why} (e.g. {', '.join(repr(e) for e in examples)}){others}. Nothing was "
            "committed",
            count=total,
            examples=examples,
            hint="fix or filter those rows first, or pass on_cast_error='null' to write nulls",
        )
    return {source.path_of(fid): counts[fid] for fid, _ in failing}


def rewrite(table: SparkTable, ddl: str | None = None, *, on_cast_error: OnCastError = "fail",
            purge_dropped: bool = False, progress: ProgressCallback | None = None) -> Commit:
    """Rewrite every file of ``table`` in a new schema (``ddl``) or the latest one
    (``purge_dropped``); see the module docstring. Returns the commit."""

    if on_cast_error not in ("fail", "null"):
        raise EvoError(f"on_cast_error must be 'fail' or 'null', not {on_cast_error!r}")
    if not ddl and not purge_dropped:
        raise EvoError("Nothing to rewrite", hint="pass ALTER TABLE text, or purge_dropped=True")
    txn = Transaction(table, "replacecommit", plan={  # failed attempts rolled back first
        "operation": "rewrite", "ddl": ddl, "purge_dropped": purge_dropped})
    base = txn.base
    snap = table.snapshot()
    source = table.schema
    _, src_layout = table.version(source.version_id)
    source_query = table.physical_query(source, src_layout)
    update = None
    ids: list[int] = []
    if ddl:
        update = rewrite_update(source, ddl)
        table.check_protected(update)
        ids = [op.field_id for op in update.operations if op.kind == "retype"]
        proposed = update.apply()
    else:
        proposed = source
    retype = _Retype(source, proposed, src_layout, ids)
    report(progress, 0, 1, "validate")
    nulled = _validate(table, read_snapshot(table, snap, source_query, meta=True), retype,
                       on_cast_error=on_cast_error)
    _check_not_null(table, snap, source, proposed, source_query, retype)
    report(progress, 1, 1, "validate")
    with txn:
        instant = txn.instant
        txn.tasks_place_files()
        if update is not None:
            target = proposed.with_version(instant)
            layout = derive_layout(target, (source, src_layout))
        else:
            target, layout = source, src_layout
        retype = _Retype(source, target, src_layout, ids)
        added = rewrite_groups(table, snap, list(snap.files), read_query=source_query,
                               target=target, layout=layout, instant=instant,
                               transform=retype.transform(layout), progress=progress,
                               stage="rewrite")
        txn.wrote(added)
        removed = removed_paths(snap, snap.files)
        txn.stage(added, removed)
        with txn.locked():
            check_service(table, "rewrite", "replacecommit", base,
                          [f.path for f in snap.files], instant=instant,
                          schema_version=target.version_id if update is not None else None)
            details: dict[str, Any] = {}
            if ddl:
                details["ddl"] = ddl
                details["schema_change"] = "evolve"
                details["changes"] = [c.to_dict() for c in diff(source, target).changes]
            if nulled:
                details["nulled"] = nulled
            if update is not None:
                txn.save_version(target, layout)
            record = txn.complete(CommitMetadata.of(
                "rewrite", target.version_id, added=added, removed=removed,
                base_version=source.version_id,
                base_instant=base.instant if base else None,
                base_completion=base.completion if base else None,
                rows_written=sum(f.rows for f in added), purge_dropped=purge_dropped,
                **details))
    report(progress, 1, 1, "done")
    return Commit.from_record(record)


def _check_not_null(table: SparkTable, snap: Any, source: Schema, target: Schema,
                    source_query: Schema, retype: _Retype) -> None:
    """Columns the DDL makes NOT NULL must hold no nulls (top-level columns)."""
    from pyspark.sql import functions as F


    _, layout = table.version(source.version_id)
    targets = [f for f in target.fields
               if not f.nullable and source.has_id(f.id) and source.field_by_id(f.id).nullable]
    if not targets:
        return
    data = read_snapshot(table, snap, source_query)
    row = data.agg(*[F.sum(F.when(F.col(backquote(layout.name(f.id))).isNull(), 1).otherwise(0))
                     .alias(f"c{i}") for i, f in enumerate(targets)]).collect()[0]
    for i, f in enumerate(targets):
        count = int(row[f"c{i}"] or 0)
        if count:
            raise DataValidationError(
                f"Cannot SET NOT NULL on {source.path_of(f.id)!r}: {count} rows hold null",
                count=count, hint="fill the nulls first, or keep the column nullable")


__all__ = ["converted", "fits", "rewrite"]

