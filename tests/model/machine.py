"""The model test's driver: one evonb table and one :class:`~tests.model.reference.Model`, given
the same random operations, compared after every step and, at the end, at every commit.

Every rule takes plain integers (``pick``, ``vseed``) and resolves them against the current
schema and rows, so the step list hypothesis prints on a failure is a Python program that
replays it: ``tests/model/test_model_regressions.py`` keeps each one found.

Each latest snapshot and each commit at the end is also read by the JVM-free Arrow reader
(``Table.to_arrow``), which must agree with the model too, and so must three filters at the
end, read by both (:meth:`TableMachine.add_filter`), and the latest snapshot read in up to three
earlier schemas (:meth:`TableMachine.add_older_schemas`). Type changes go between every pair of
the model's types DDL allows, one after another (a value reads through each type its field
had: :meth:`~tests.model.reference.Model.retype`).

Writes come as DataFrames (insert, upsert, delete, overwrite) and as SQL statements
(``INSERT``, ``UPDATE``, ``DELETE`` and ``MERGE``, as ``%evo sql`` runs them), which name
the columns and struct members by their current names after every rename, drop and re-add;
a row a statement changes is written again in the current schema, read defaults included
(:func:`~tests.model.reference.store_struct`), and the columns an insert leaves out take
their write defaults, which ``SET DEFAULT`` and ``DROP DEFAULT`` change apart from the read
defaults (:meth:`TableMachine.set_default`).

A table's flavour is drawn once per history (:class:`Flavour`): copy-on-write or merge-on-read,
partitioned or not, publishing Iceberg metadata at every commit or not, for copy-on-write
whether small upserts are rewritten by the driver in Arrow (the default) or go through Spark,
and there whether they merge their candidate files whole (the default) or always take the exact
key lookup and the split merge (``evonb.write.direct_merge.bytes = 0``), and for merge-on-read
the log-block format (Avro or Parquet) and the reader (evonb's JVM sources, or the fallback:
Python workers for blocks and Spark's own filter for replaced base rows). At the end of a
merge-on-read history the other reader reads the latest snapshot and the oldest readable commit
too. Last, the history is exported as Iceberg metadata and pyiceberg, an independent reader,
reads every published commit (:meth:`iceberg_checks`).
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from pyiceberg.table import StaticTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import evonb
from evonb.errors import CommitNotFoundError, SchemaEvolutionError
from evonb.iceberg import IcebergExportError
from evonb.iceberg import sync as iceberg_sync
from evonb.spark.sql_writes import SQLWriteResult, execute
from evonb.table.check import check_table
from evonb.table.timeline import ARCHIVE_PROPERTY
from tests.model.reference import (
    HOSTILE_STRINGS,
    MORE_WIDENINGS,
    NARROWINGS,
    PRIMITIVES,
    WIDENINGS,
    MField,
    MList,
    MMap,
    Model,
    MStruct,
    MType,
    convert,
    ddl_type,
    field_types,
    literal,
    random_value,
    read_struct,
    spark_value,
    store_struct,
    typed_literal,
)

TOP_NAMES = ("a", "b", "c", "d", "e", "f")
NESTED_NAMES = ("x", "y", "z", "w")
PROTECTED = ("id", "ts", "p")
KEY_ID, PRECOMBINE_ID = 1, 2
"""Key, precombine and partition column: never dropped or retyped (evonb refuses it)."""
NOT_UNDOABLE = ("create", "clean", "rollback")
"""Actions a rollback never undoes."""
FLUSH_EVERY = 12
"""Latest-snapshot reads collected together at most (see :meth:`TableMachine.check`)."""
picks = st.integers(min_value=0, max_value=2**16)
seeds = st.integers(min_value=0, max_value=2**31)

_spark: SparkSession | None = None
HISTORIES = itertools.count()
"""Histories run in this process (every machine created counts one)."""
STEPS = itertools.count()
"""Steps run in this process, over all histories."""
ICEBERG = {"snapshots": 0, "latest": 0, "blocked": 0, "refused": 0, "automatic": 0}
"""What the pyiceberg reads at the end of each history compared (see
:meth:`TableMachine.iceberg_checks`)."""
FILTER_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, v: a is not None and a == v,
    "<": lambda a, v: a is not None and a < v,
    ">=": lambda a, v: a is not None and a >= v,
    "is null": lambda a, v: a is None,
}
"""The predicates of the final filter (:meth:`TableMachine.add_filter`), as the model applies
them (a null passes only ``is null``, as in SQL)."""
FILTERS = dict.fromkeys(FILTER_OPS, 0)
"""The final filters the histories ran, by predicate."""
FINAL_FILTERS = 3
"""Filters read at the end of each history."""
OLDER_SCHEMAS = 3
"""The most earlier schemas the latest snapshot is read in at the end of a history."""
OLDER_READS = [0]
"""How many reads of the latest snapshot in an earlier schema the histories checked."""
RETYPES: Counter[str] = Counter()
"""The type changes by DDL the histories made, by kind."""
DEFAULTS: Counter[str] = Counter()
"""The write-default changes the histories made, by kind."""


def default_value(t: str, pick: int) -> Any:
    """A write default of primitive type ``t`` drawn from ``pick``; None a fifth of the time
    (``SET DEFAULT NULL`` or ``DROP DEFAULT``). Strings begin with a hostile text half the
    time (the DDL literal must be quoted and escaped right); floating point values are
    quarters, exact in binary."""
    if pick % 5 == 0:
        return None
    if t == "string":
        text = str(pick % 100)
        return HOSTILE_STRINGS[pick % len(HOSTILE_STRINGS)] + text if pick % 2 else text
    if t in ("float", "double"):
        return (pick % 100) / 4
    return pick % 100


SQL = {"INSERT": 0, "UPDATE": 0, "DELETE": 0, "MERGE": 0, "SET * / INSERT *": 0,
       "overwrite": 0, "no commit": 0}
"""SQL statements the histories ran (the MERGEs with ``UPDATE SET *`` and ``INSERT *`` also
counted on their own), and how many were written as an overwrite or changed nothing."""


def use_spark(spark: SparkSession) -> None:
    """The session the machines use (the test run's shared one)."""
    global _spark
    _spark = spark


Location = Callable[[], tuple[str, Callable[[], None]]]
_location: Location | None = None
_iceberg_properties: dict[str, str] = {}


def use_location(make: Location | None, iceberg_properties: dict[str, str] | None = None
                 ) -> None:
    """Where each history's table lives: ``make()`` gives a fresh location (a bucket's, say)
    and a function that removes what it holds; None, the default: a local temporary folder.
    ``iceberg_properties`` are pyiceberg's settings for reading there."""
    global _location, _iceberg_properties
    _location, _iceberg_properties = make, dict(iceberg_properties or {})


@dataclass(frozen=True)
class Flavour:
    table_type: str
    partitioned: bool
    log_format: str = "avro"
    jvm: bool = True
    iceberg: bool = False
    direct_merge: bool = True  # copy-on-write: small upserts merge their candidates whole
    archive_keep: int = 0  # evonb.timeline.archive.keep (0: the default, not reached here)
    driver_lookup: bool = True  # merge-on-read: small deltas looked up by the driver in Arrow
    driver_rewrite: bool = True  # copy-on-write: small upserts rewritten by the driver in Arrow

    def properties(self, jvm: bool | None = None) -> dict[str, str]:
        on = self.jvm if jvm is None else jvm
        props = {"evonb.mor.read.jvm": str(on).lower(),
                  "evonb.mor.read.jvm_filter": str(on).lower(),
                  "evonb.iceberg.enabled": str(self.iceberg).lower()}
        if self.archive_keep:  # old commits leave the timeline folder for its archive
            props[ARCHIVE_PROPERTY] = str(self.archive_keep)
        if self.table_type == "mor":
            props["evonb.mor.log_format"] = self.log_format
            if not self.driver_lookup:  # every delta through Spark tasks
                props["evonb.mor.driver_lookup.rows"] = "0"
        else:
            if not self.driver_rewrite:  # every upsert and delete through Spark
                props["evonb.write.driver_rewrite.bytes"] = "0"
            if not self.direct_merge:  # then the exact key lookup and the split merge
                props["evonb.write.direct_merge.bytes"] = "0"
                props["evonb.write.split_merge.bytes"] = "0"
        return props

    @classmethod
    def from_pick(cls, pick: int) -> Flavour:
        mor, rest = pick % 2, pick // 2
        partitioned, rest = bool(rest % 2), rest // 2
        if not mor:
            # (the picks of the regression cases, 0, 6 and 250, keep the Spark path)
            return cls("cow", partitioned, iceberg=bool(rest % 2),
                       direct_merge=not rest // 2 % 2, archive_keep=rest // 4 % 3,
                       driver_rewrite=bool(rest // 64 % 2))
        log_format, rest = ("avro", "parquet")[rest % 2], rest // 2
        return cls("mor", partitioned, log_format, jvm=bool(rest % 2),
                   iceberg=bool(rest // 2 % 2), archive_keep=rest // 4 % 3,
                   driver_lookup=not rest // 12 % 2)


def initial_model() -> Model:
    xy = MStruct([MField(0, "x", "int"), MField(0, "y", "int")])
    cols = MStruct([MField(0, "id", "int", required=True), MField(0, "ts", "int"),
                    MField(0, "p", "int"), MField(0, "a", "int"), MField(0, "s", xy),
                    MField(0, "l", MList(0, xy)), MField(0, "m", MMap(0, 0, xy))])
    model = Model(MStruct([]), 0)
    model.columns = model.number(cols)  # type: ignore[assignment]
    return model


def normal(value: Any) -> Any:
    """A collected Spark value as plain dicts and lists."""
    if hasattr(value, "asDict"):
        return {k: normal(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def same(got: list[dict[str, Any]], expected: list[dict[str, Any]], label: str) -> None:
    """Assert equal rows, naming the first row that differs."""
    if got == expected:
        return
    g = {r["id"]: r for r in got}
    e = {r["id"]: r for r in expected}
    for key in sorted(g.keys() | e.keys()):
        if g.get(key) != e.get(key):
            raise AssertionError(f"{label}: id {key}: evonb read {g.get(key)}, the model "
                                 f"{e.get(key)} ({len(got)} rows read, {len(expected)} expected)")
    raise AssertionError(f"{label}: {got} != {expected}")


def arrow_value(value: Any, t: pa.DataType) -> Any:
    """A value of ``to_pylist`` as plain dicts and lists (maps come as lists of pairs)."""
    if value is None:
        return None
    if pa.types.is_map(t):
        return {k: arrow_value(v, t.item_type) for k, v in value}
    if pa.types.is_struct(t):
        return {f.name: arrow_value(value[f.name], f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [arrow_value(v, t.value_type) for v in value]
    return value


def arrow_rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = [{f.name: arrow_value(r[f.name], f.type) for f in table.schema}
            for r in table.to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


def as_pyiceberg_reads(rows: list[dict[str, Any]], schema: pa.Schema) -> list[dict[str, Any]]:
    """Rows with a null list or map column read as an empty one: pyiceberg returns some null
    lists and maps as empty ones (where it rebuilds the array: apache/iceberg-python#3833,
    still open; its own test asserts the empty value) and others as null, so both its rows and
    the model's are compared this way. The files hold nulls and evonb's readers return them:
    their comparisons with the model stay exact."""
    empty = {f.name: ({} if pa.types.is_map(f.type) else []) for f in schema
             if pa.types.is_map(f.type) or pa.types.is_list(f.type)
             or pa.types.is_large_list(f.type)}
    return [{k: empty[k] if v is None and k in empty else v for k, v in r.items()}
            for r in rows]


def rows_of(df: DataFrame) -> list[dict[str, Any]]:
    rows = [normal(r) for r in df.collect()]
    return sorted(rows, key=lambda r: r["id"])


class TableMachine(RuleBasedStateMachine):
    """One history: a fresh table, random operations, the model beside it."""

    def __init__(self) -> None:
        super().__init__()
        assert _spark is not None, "call use_spark() first"
        self.spark = _spark
        self.dir = Path(tempfile.mkdtemp(prefix="evonb-model-"))
        self.model = initial_model()
        self.commits: list[tuple[str, str, Model]] = []  # instant, action, model after it
        self.cleaned_after: set[str] = set()
        self.pending = Reads()
        self.table: Any = None
        self.flavour: Flavour | None = None
        self.number = next(HISTORIES)
        self.reverts = {"made": 0, "restoring": 0, "refused": 0, "skipped": 0}
        self.narrowings = 0
        self.remove: Callable[[], None] = lambda: None  # what removes a table elsewhere

    # ------------------------------------------------------------------ set-up
    @initialize(flavour=picks, vseed=seeds)
    def create(self, flavour: int, vseed: int | None = None) -> None:
        """A fresh table of the drawn flavour and, given ``vseed``, its first insert: every
        random history then has rows from its start (hypothesis tries the example of all
        zeros first, whose steps are all the first rule, ``compact``: on an empty table that
        history checked nothing). Regression cases pass no ``vseed`` and replay as found."""
        self.flavour = Flavour.from_pick(flavour)
        where: str | Path = self.dir / "t"
        if _location is not None:
            where, self.remove = _location()
        self.table = evonb.create_table(
            where, self.columns_ddl(), primary_key="id", precombine="ts",
            partition_by="p" if self.flavour.partitioned else (),
            table_type=self.flavour.table_type, properties=self.flavour.properties())
        self.record()
        if vseed is not None:
            self.insert(vseed)

    def teardown(self) -> None:
        try:
            if self.table is not None:
                self.flush()
                self.final_checks()
                archived = self.archive_checks()
                print(f"model history {self.number}: {self.flavour}, "
                      f"{len(self.commits)} commits ({archived} archived), "
                      f"{len(self.model.rows)} rows at the end, "
                      f"max column id {self.model.max_id}, "
                      f"reverts {self.reverts}, narrowing rewrites {self.narrowings}: ok",
                      flush=True)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.remove()

    # ------------------------------------------------------------------ helpers
    def columns_ddl(self) -> str:
        parts = []
        for f in self.model.columns.fields:
            parts.append(f"`{f.name}` {ddl_type(f.type)}" + (" not null" if f.required else ""))
        return ", ".join(parts)

    def record(self) -> None:
        """Note the commit the last operation made (if it made one) with the model after it."""
        last = self.table.timeline.completed()[-1]
        if not self.commits or self.commits[-1][0] != last.instant:
            self.commits.append((last.instant, last.action, self.model.copy()))
        else:  # no commit (e.g. nothing to compact): the model must not have changed
            self.commits[-1] = (last.instant, last.action, self.model.copy())

    def alter(self, *statements: str) -> None:
        ddl = "; ".join(f"ALTER TABLE t {s}" for s in statements)
        self.table.alter(ddl)
        self.record()
        self.check(ddl)

    def write(self, keys_rows: list[dict[int, Any]], mode: str, *,
              leave_out: MField | None = None) -> str:
        """Write ``keys_rows`` as a DataFrame of the current columns (but ``leave_out``); the
        commit's instant."""
        cols = [f for f in self.model.columns.fields if f is not leave_out]
        data = [tuple(spark_value(f.type, row.get(f.id)) for f in cols) for row in keys_rows]
        ddl = ", ".join(f"`{f.name}` {ddl_type(f.type)}" for f in cols)
        df = self.spark.createDataFrame(data, ddl)
        commit = self.table.write(df, mode=mode)
        return commit.instant

    def check(self, what: str) -> None:
        """The latest snapshot equals the model: column names, types and field IDs now; every
        value when the pending reads are collected (:meth:`flush`). Data files never change
        once written, so a read planned now and collected a few steps later reads this step's
        snapshot, unless a clean or a rollback deleted its files: those flush first."""
        step = next(STEPS)
        df = self.table.read()
        assert df.schema.simpleString() == self.model.schema_text(), (
            f"after {what}: schema {df.schema.simpleString()} != model "
            f"{self.model.schema_text()}")
        ids = dict(self.model.all_ids())
        real = {path.lower(): self.table.schema.find_id(path) for path in self.table.schema.paths()}
        assert real == ids, f"after {what}: field IDs {real} != model {ids}"
        expected = self.model.read()
        self.pending.add(f"latest snapshot after {what} (step {step})", df,
                         self.model.schema_text(), expected)
        arrow = self.table.to_arrow()  # the JVM-free reader, the same semantics
        assert arrow.column_names == self.model.names(), f"after {what}: Arrow columns"
        same(arrow_rows(arrow), expected, f"Arrow read after {what} (step {step})")
        if len(self.pending.items) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Collect the pending reads (one Spark job) and compare them with the model."""
        pending, self.pending = self.pending, Reads()
        pending.check(self.spark)

    def key(self, stored: dict[int, Any]) -> int:
        return stored[KEY_ID]

    def field(self, name: str) -> MField:
        return next(f for f in self.model.columns.fields if f.name == name)

    def new_row(self, rng: random.Random, key: int) -> dict[int, Any]:
        row = {}
        for f in self.model.columns.fields:
            if f.name == "id":
                row[f.id] = key
            elif f.name == "ts":
                row[f.id] = rng.randint(0, 6)
            elif f.name == "p":
                row[f.id] = key % 2
            else:
                row[f.id] = random_value(rng, f.type)
        return row

    def free_keys(self, rng: random.Random, n: int) -> list[int]:
        free = [k for k in range(40) if k not in self.model.rows]
        return rng.sample(free, min(n, len(free)))

    # ------------------------------------------------------------------ writes
    @rule(vseed=seeds)
    def insert(self, vseed: int) -> None:
        rng = random.Random(vseed)
        rows = [self.new_row(rng, k) for k in self.free_keys(rng, rng.randint(1, 3))]
        if not rows:
            return
        instant = self.write(rows, "insert")
        for row in rows:
            self.model.rows[self.key(row)] = (row, instant)
        self.record()
        self.check("insert")

    @rule(pick=picks, vseed=seeds)
    def insert_leaving_out(self, pick: int, vseed: int) -> None:
        """A DataFrame insert of new keys without one top-level column: the write fills it
        with the column's write default, or null."""
        columns = self.settable()
        if not columns:
            return
        f = columns[pick % len(columns)]
        rng = random.Random(vseed)
        rows = [self.new_row(rng, k) for k in self.free_keys(rng, rng.randint(1, 2))]
        if not rows:
            return
        for row in rows:
            row[f.id] = f.write_default
        instant = self.write(rows, "insert", leave_out=f)
        for row in rows:
            self.model.rows[self.key(row)] = (row, instant)
        self.record()
        self.check(f"insert without {f.name}")

    @rule(vseed=seeds)
    def upsert(self, vseed: int) -> None:
        rng = random.Random(vseed)
        old = rng.sample(sorted(self.model.rows), min(len(self.model.rows), rng.randint(0, 2)))
        keys = old + self.free_keys(rng, rng.randint(0 if old else 1, 2))
        rows = [self.new_row(rng, k) for k in keys]
        instant = self.write(rows, "upsert")
        ts = PRECOMBINE_ID
        for row in rows:
            key = self.key(row)
            current = self.model.rows.get(key)
            if current is not None and current[0][ts] is not None and (
                    row[ts] is None or row[ts] < current[0][ts]):
                continue  # the stored row has the larger precombine value: it stays
            self.model.rows[key] = (row, instant)
        self.record()
        self.check("upsert")

    @precondition(lambda self: bool(self.model.rows))
    @rule(vseed=seeds)
    def delete(self, vseed: int) -> None:
        rng = random.Random(vseed)
        keys = rng.sample(sorted(self.model.rows), min(len(self.model.rows), rng.randint(1, 2)))
        keys += self.free_keys(rng, rng.randint(0, 1))  # a key that is not there: no effect
        self.write([self.new_row(rng, k) for k in keys], "delete")
        for k in keys:
            self.model.rows.pop(k, None)
        self.record()
        self.check("delete")

    @rule(vseed=seeds)
    def overwrite(self, vseed: int) -> None:
        rng = random.Random(vseed)
        keys = rng.sample(range(40), rng.randint(1, 4))
        rows = [self.new_row(rng, k) for k in keys]
        instant = self.write(rows, "overwrite")
        self.model.rows = {self.key(r): (r, instant) for r in rows}
        self.record()
        self.check("overwrite")

    # ------------------------------------------------------------------ SQL statements
    def sql(self, statement: str) -> SQLWriteResult:
        """One SQL write statement on the table (named ``t`` in it), as ``%evo sql`` runs it."""
        return execute(self.table, statement, name="t")

    def now(self, key: int) -> dict[int, Any]:
        """The row of ``key`` as a statement that rewrites it stores it: in the current
        schema, every field explicit."""
        stored, _ = self.model.rows[key]
        return store_struct(self.model.columns, read_struct(self.model.columns, stored))

    def settable(self) -> list[MField]:
        """The top-level primitive columns a statement sets (not the key, the precombine or
        the partition column)."""
        return [f for f in self.model.columns.fields
                if isinstance(f.type, str) and f.name not in PROTECTED]

    def predicates(self) -> list[tuple[str, str, Callable[[dict[str, Any]], Any]]]:
        """(SQL path, type, the value in a row read by name) of every top-level primitive
        column and every primitive member of a top-level struct."""
        out: list[tuple[str, str, Callable[[dict[str, Any]], Any]]] = []
        for f in self.model.columns.fields:
            if isinstance(f.type, str):
                out.append((f"`{f.name}`", f.type, lambda r, n=f.name: r[n]))
            elif isinstance(f.type, MStruct):
                out += [(f"`{f.name}`.`{m.name}`", m.type,
                         lambda r, n=f.name, k=m.name: None if r[n] is None else r[n][k])
                        for m in f.type.fields if isinstance(m.type, str)]
        return out

    def applied(self, result: SQLWriteResult, changed: dict[int, dict[int, Any] | None],
                statement: str) -> None:
        """The model after a statement: ``changed`` maps each key it changed to the row it
        stores now (None: deleted). A statement written as an ``overwrite`` writes every
        row again, in the current schema, by its commit."""
        SQL[result.statement] += 1
        if result.commit is None:
            assert not changed, f"{statement}: no commit, the model changes {sorted(changed)}"
            SQL["no commit"] += 1
        else:
            instant = result.commit.instant
            if result.mode == "overwrite":
                SQL["overwrite"] += 1
                for key in self.model.rows:
                    self.model.rows[key] = (self.now(key), instant)
            for key, row in changed.items():
                if row is None:
                    self.model.rows.pop(key, None)
                else:
                    self.model.rows[key] = (row, instant)
        self.record()
        self.check(statement)

    def inserted(self, key: int, f: MField | None, value: Any) -> dict[int, Any]:
        """The row an ``INSERT`` of ``key`` (and ``value`` in column ``f``) stores: the
        columns it leaves out at their write defaults, ``ts`` 0 and the partition value
        ``key % 2``."""
        row = {g.id: g.write_default for g in self.model.columns.fields}
        row.update({KEY_ID: key, PRECOMBINE_ID: 0, self.field("p").id: key % 2})
        if f is not None:
            row[f.id] = value
        return row

    @rule(pick=picks, vseed=seeds)
    def sql_insert(self, pick: int, vseed: int) -> None:
        """``INSERT INTO t (id, ts, p[, column]) VALUES ...`` of new keys: the columns it
        leaves out (a column re-added with a DEFAULT, say) take their write defaults."""
        rng = random.Random(vseed)
        keys = sorted(self.free_keys(rng, rng.randint(1, 2)))
        if not keys:
            return
        columns = self.settable()
        f = columns[pick % len(columns)] if columns and pick % 3 else None
        values = {k: None if f is None else random_value(rng, f.type) for k in keys}
        names = "`id`, `ts`, `p`" + ("" if f is None else f", `{f.name}`")
        rows = ", ".join(
            f"({k}, 0, {k % 2}" + ("" if f is None else f", {typed_literal(v, f.type)}") + ")"  # type: ignore[arg-type]
            for k, v in values.items())
        statement = f"INSERT INTO t ({names}) VALUES {rows}"
        result = self.sql(statement)
        assert (result.inserted, result.mode) == (len(keys), "insert"), f"{statement}: {result}"
        self.applied(result, {k: self.inserted(k, f, v) for k, v in values.items()}, statement)

    def condition(self, rng: random.Random, pick: int) -> tuple[str, list[int]]:
        """A ``WHERE`` condition on a column or a struct member (renamed, retyped or re-added
        ones included): null, or equal to a value some row reads; and the keys of the rows
        the model says it holds for."""
        options = self.predicates()
        path, t, value_of = options[pick % len(options)]
        rows = self.model.read()
        values = [value_of(r) for r in rows if value_of(r) is not None]
        if values and rng.random() < 0.7:
            v = rng.choice(values)
            return f"{path} = {literal(v, t)}", [r["id"] for r in rows if value_of(r) == v]
        return f"{path} IS NULL", [r["id"] for r in rows if value_of(r) is None]

    @precondition(lambda self: bool(self.model.rows))
    @rule(pick=picks, vseed=seeds)
    def sql_update(self, pick: int, vseed: int) -> None:
        """``UPDATE`` of the rows of one or two keys, or of those a condition holds for: a
        column (renamed, retyped or re-added ones included) set to a value, to null or to
        another column of its type."""
        rng = random.Random(vseed)
        columns = self.settable()
        if not columns:
            return
        f = columns[pick % len(columns)]
        if rng.random() < 0.5:
            keys = sorted(rng.sample(sorted(self.model.rows),
                                     min(len(self.model.rows), rng.randint(1, 2))))
            condition = f"`id` IN ({', '.join(map(str, keys))})"
        else:
            condition, keys = self.condition(rng, pick // 7)
        rows = {k: self.now(k) for k in keys}
        alike = [g for g in self.model.columns.fields if g.type == f.type and g is not f]
        if alike and rng.random() < 0.3:
            g = rng.choice(alike)
            expr = f"`{g.name}`"
            for row in rows.values():
                row[f.id] = row[g.id]
        else:
            value = random_value(rng, f.type)
            expr = "NULL" if value is None else literal(value, f.type)  # type: ignore[arg-type]
            for row in rows.values():
                row[f.id] = value
        statement = f"UPDATE t SET `{f.name}` = {expr} WHERE {condition}"
        result = self.sql(statement)
        assert (result.updated, result.mode) == (len(keys), "upsert" if keys else "none"), (
            f"{statement}: {result}, the model updates {keys}")
        self.applied(result, dict(rows), statement)

    @precondition(lambda self: bool(self.model.rows))
    @rule(pick=picks, vseed=seeds)
    def sql_delete(self, pick: int, vseed: int) -> None:
        """``DELETE`` of the rows a condition holds for (:meth:`condition`)."""
        condition, hit = self.condition(random.Random(vseed), pick)
        statement = f"DELETE FROM t WHERE {condition}"
        result = self.sql(statement)
        assert (result.deleted, result.mode) == (len(hit), "delete" if hit else "none"), (
            f"{statement}: {result}, the model deletes {hit}")
        self.applied(result, dict.fromkeys(hit), statement)

    @rule(pick=picks, vseed=seeds)
    def sql_merge(self, pick: int, vseed: int) -> None:
        """``MERGE`` of a few source rows by key: a matched row is deleted (when the source
        says so) or gets the source's value in one column; an unmatched key is inserted with
        that column, and the columns the statement leaves out take their write defaults."""
        rng = random.Random(vseed)
        columns = self.settable()
        if not columns:
            return
        f = columns[pick % len(columns)]
        old = rng.sample(sorted(self.model.rows), min(len(self.model.rows), rng.randint(0, 2)))
        keys = sorted(old + self.free_keys(rng, rng.randint(0 if old else 1, 2)))
        deletes = rng.random() < 0.5
        source = [(k, random_value(rng, f.type), deletes and rng.random() < 0.4) for k in keys]
        values = ", ".join(f"({k}, {typed_literal(v, f.type)}, {str(d).lower()})"  # type: ignore[arg-type]
                           for k, v, d in source)
        statement = (
            f"MERGE INTO t USING (SELECT * FROM VALUES {values} AS src(k, v, d)) s "
            "ON t.`id` = s.k WHEN MATCHED AND s.d THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET `{f.name}` = s.v "
            f"WHEN NOT MATCHED THEN INSERT (`id`, `ts`, `p`, `{f.name}`) "
            "VALUES (s.k, 0, s.k % 2, s.v)")
        changed: dict[int, dict[int, Any] | None] = {}
        counts = {"inserted": 0, "updated": 0, "deleted": 0}
        for k, v, d in source:
            if k in self.model.rows and d:
                changed[k] = None
                counts["deleted"] += 1
                continue
            if k in self.model.rows:
                row = self.now(k)
                row[f.id] = v
                counts["updated"] += 1
            else:
                row = self.inserted(k, f, v)
                counts["inserted"] += 1
            changed[k] = row
        result = self.sql(statement)
        assert result.counts() == counts, f"{statement}: {result}, the model {counts}"
        self.applied(result, changed, statement)

    @precondition(lambda self: bool(self.model.rows))
    @rule(vseed=seeds)
    def sql_merge_star(self, vseed: int) -> None:
        """``MERGE ... UPDATE SET * ... INSERT *`` from rows of the table itself: a row
        stored again as it reads, or copied under a new key, every column (nested ones,
        renamed, retyped or re-added members included) carried over by name."""
        rng = random.Random(vseed)
        old = rng.sample(sorted(self.model.rows), min(len(self.model.rows), rng.randint(1, 2)))
        targets = self.free_keys(rng, len(old))
        moves = {k: (targets[i] if i < len(targets) and rng.random() < 0.5 else k)
                 for i, k in enumerate(old)}
        cases = " ".join(f"WHEN {k} THEN {to}" for k, to in moves.items())
        columns = ", ".join(f"`{f.name}`" for f in self.model.columns.fields
                            if f.id != KEY_ID)
        statement = (
            f"MERGE INTO t USING (SELECT CASE `id` {cases} END AS `id`, {columns} FROM t "
            f"WHERE `id` IN ({', '.join(map(str, old))})) s ON t.`id` = s.`id` "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        changed: dict[int, dict[int, Any] | None] = {}
        for k, to in moves.items():
            row = self.now(k)
            row[KEY_ID] = to
            changed[to] = row
        counts = {"inserted": sum(k != to for k, to in moves.items()),
                  "updated": sum(k == to for k, to in moves.items()), "deleted": 0}
        result = self.sql(statement)
        assert result.counts() == counts, f"{statement}: {result}, the model {counts}"
        SQL["SET * / INSERT *"] += 1
        self.applied(result, changed, statement)

    # ------------------------------------------------------------------ DDL
    def container(self, pick: int) -> tuple[str, MStruct]:
        options = self.model.containers()
        return options[pick % len(options)]

    def members(self, pick: int, *, droppable: bool = False) -> tuple[str, MStruct, MField] | None:
        """A field of a container: (its container's path prefix, the container, the field);
        never a protected column; with ``droppable``, never the last member of a struct."""
        prefix, struct = self.container(pick)
        fields = [f for f in struct.fields if not (prefix == "" and f.name in PROTECTED)]
        if droppable and prefix and len(struct.fields) < 2:
            return None
        if not fields:
            return None
        return prefix, struct, fields[(pick // 7) % len(fields)]

    def free_name(self, prefix: str, struct: MStruct, pick: int) -> str:
        pool = TOP_NAMES if prefix == "" else NESTED_NAMES
        taken = {f.name.lower() for f in struct.fields}
        free = [n for n in pool if n not in taken]
        if free:
            return free[pick % len(free)]
        number = pick % 1000
        while f"n{number}" in taken:  # the pool is used up: the next free n<number>
            number += 1
        return f"n{number}"

    def position(self, struct: MStruct, pick: int, exclude: MField | None = None
                 ) -> tuple[str, int | None]:
        """(DDL suffix, index in ``struct`` after ``exclude`` is taken out) for a new place."""
        others = [f for f in struct.fields if f is not exclude]
        choice = pick % (len(others) + 2)
        if choice == 0:
            return " FIRST", 0
        if choice == 1 or not others:
            return "", None
        anchor = others[choice - 2]
        return f" AFTER `{anchor.name}`", others.index(anchor) + 1

    def random_type(self, pick: int, top: bool) -> MType:
        xy = [MField(0, n, "int") for n in ("x", "y")]
        choices: list[MType] = [*PRIMITIVES]
        if top:
            choices += [MStruct(xy), MList(0, MStruct(xy)), MMap(0, 0, MStruct(xy))]
        return choices[pick % len(choices)]

    @rule(where=picks, type_pick=picks, pos=picks, default=picks, name=picks)
    def add_column(self, where: int, type_pick: int, pos: int, default: int, name: int) -> None:
        prefix, struct = self.container(where)
        col_name = self.free_name(prefix, struct, name)
        t = self.random_type(type_pick, top=prefix == "")
        self.add(prefix, struct, col_name, t, pos, default)

    def add(self, prefix: str, struct: MStruct, name: str, t: MType, pos: int,
            default: int) -> None:
        value = None
        if t in ("int", "bigint", "string") and default % 3 == 0:
            value = convert(default % 100, t)
            if t == "string" and default % 2:  # half of them quoted and escaped in the DDL
                value = HOSTILE_STRINGS[default % len(HOSTILE_STRINGS)] + value
        field = self.model.numbered_field(MField(0, name, t, value, write_default=value))
        suffix, index = self.position(struct, pos)
        text = f" DEFAULT {literal(value, t)}" if value is not None else ""  # type: ignore[arg-type]
        if index is None:
            struct.fields.append(field)
        else:
            struct.fields.insert(index, field)
        self.alter(f"ADD COLUMNS ({prefix}`{name}` {ddl_type(t)}{text}{suffix})")

    @rule(pick=picks, value=picks)
    def set_default(self, pick: int, value: int) -> None:
        """``SET DEFAULT`` (a value, or ``NULL``) or ``DROP DEFAULT`` on a top-level column an
        ``INSERT`` may leave out: only its write default changes. Rows stored before keep
        their values, and rows stored without the field (written before it was added, or
        while it was dropped) still read its read default."""
        columns = self.settable()
        if not columns:
            return
        f = columns[pick % len(columns)]
        new = default_value(f.type, value)  # type: ignore[arg-type]
        if new is None and f.write_default is not None and value % 2:
            clause = kind = "DROP DEFAULT"
        elif new is None:
            clause = kind = "SET DEFAULT NULL"
        else:
            clause, kind = "SET DEFAULT " + literal(new, f.type), "SET DEFAULT value"  # type: ignore[arg-type]
        f.write_default = new
        DEFAULTS[kind] += 1
        self.alter(f"ALTER COLUMN `{f.name}` {clause}")

    @rule(pick=picks)
    def drop_column(self, pick: int) -> None:
        found = self.members(pick, droppable=True)
        if found is None:
            return
        prefix, struct, f = found
        struct.fields.remove(f)
        self.alter(f"DROP COLUMN {prefix}`{f.name}`")

    @rule(pick=picks, name=picks)
    def rename_column(self, pick: int, name: int) -> None:
        found = self.members(pick)
        if found is None:
            return
        prefix, struct, f = found
        new = self.free_name(prefix, struct, name)
        old, f.name = f.name, new
        self.alter(f"RENAME COLUMN {prefix}`{old}` TO `{new}`")

    def two(self, pick: int, other: int) -> tuple[str, MField, MField] | None:
        prefix, struct = self.container(pick)
        fields = [f for f in struct.fields if not (prefix == "" and f.name in PROTECTED)]
        if len(fields) < 2:
            return None
        a = fields[(pick // 7) % len(fields)]
        rest = [f for f in fields if f is not a]
        return prefix, a, rest[other % len(rest)]

    @rule(pick=picks, other=picks)
    def swap_names(self, pick: int, other: int) -> None:
        """Two renames in one change swap two names."""
        found = self.two(pick, other)
        if found is None:
            return
        prefix, a, b = found
        a.name, b.name = b.name, a.name
        self.alter(f"RENAME COLUMN {prefix}`{b.name}` TO `{a.name}`",
                   f"RENAME COLUMN {prefix}`{a.name}` TO `{b.name}`")

    @rule(pick=picks, other=picks)
    def swap_through_temporary(self, pick: int, other: int) -> None:
        """Three changes: a -> tmp, b -> a, tmp -> b."""
        found = self.two(pick, other)
        if found is None:
            return
        prefix, a, b = found
        taken = {f.name.lower() for f in self.container(pick)[1].fields}
        tmp = next(n for n in (f"tmp{i}" if i else "tmp" for i in range(99)) if n not in taken)
        name_a, name_b = a.name, b.name
        a.name = tmp
        self.alter(f"RENAME COLUMN {prefix}`{name_a}` TO `{tmp}`")
        b.name = name_a
        self.alter(f"RENAME COLUMN {prefix}`{name_b}` TO `{name_a}`")
        a.name = name_b
        self.alter(f"RENAME COLUMN {prefix}`{tmp}` TO `{name_b}`")

    @rule(pick=picks, other=picks)
    def rename_into_freed_name(self, pick: int, other: int) -> None:
        """One change drops a and renames b to a's name."""
        found = self.two(pick, other)
        if found is None:
            return
        prefix, a, b = found
        struct = self.container(pick)[1]
        struct.fields.remove(a)
        old, b.name = b.name, a.name
        self.alter(f"DROP COLUMN {prefix}`{a.name}`",
                   f"RENAME COLUMN {prefix}`{old}` TO `{a.name}`")

    @rule(pick=picks, type_pick=picks, pos=picks)
    def drop_and_add_again(self, pick: int, type_pick: int, pos: int) -> None:
        """Drop a field, then add a field of the same name: a new field, no old values."""
        found = self.members(pick, droppable=True)
        if found is None:
            return
        prefix, struct, f = found
        struct.fields.remove(f)
        self.alter(f"DROP COLUMN {prefix}`{f.name}`")
        t = f.type if type_pick % 2 else self.random_type(type_pick // 2, top=prefix == "")
        self.add(prefix, struct, f.name, t, pos, type_pick)

    @rule(pick=picks, pos=picks)
    def move_column(self, pick: int, pos: int) -> None:
        found = self.members(pick)
        if found is None:
            return
        prefix, struct, f = found
        others = [g for g in struct.fields if g is not f]
        if not others:
            return
        choice = pos % (len(others) + 1)
        struct.fields.remove(f)
        if choice == 0:
            struct.fields.insert(0, f)
            self.alter(f"ALTER COLUMN {prefix}`{f.name}` FIRST")
        else:
            anchor = others[choice - 1]
            struct.fields.insert(struct.fields.index(anchor) + 1, f)
            self.alter(f"ALTER COLUMN {prefix}`{f.name}` AFTER `{anchor.name}`")

    @rule(pick=picks, to=picks)
    def change_type(self, pick: int, to: int, widenings: dict[str, tuple[str, ...]] = WIDENINGS
                    ) -> None:
        prefix, struct = self.container(pick)
        fields = [f for f in struct.fields if isinstance(f.type, str) and f.type in widenings
                  and not (prefix == "" and f.name in PROTECTED)]
        if not fields:
            return
        f = fields[(pick // 7) % len(fields)]
        new = widenings[f.type][to % len(widenings[f.type])]  # type: ignore[index]
        RETYPES[f"{f.type} -> {new}"] += 1
        self.model.retype(f, new)
        self.alter(f"ALTER COLUMN {prefix}`{f.name}` TYPE {new}")

    @rule(pick=picks, to=picks)
    def change_type_more(self, pick: int, to: int) -> None:
        """The other widenings (``MORE_WIDENINGS``): int or bigint to float, bigint to double,
        float or double to string; after an earlier change, a value reads through each."""
        self.change_type(pick, to, MORE_WIDENINGS)

    @rule(pick=picks, to=picks, vseed=seeds)
    def narrow_by_rewrite(self, pick: int, to: int, vseed: int) -> None:
        """A type change no metadata change makes (double -> int, string -> bigint, ...), by a
        rewrite that writes null where a value does not fit: the model converts its rows the
        same way; commits before it keep their values, and read in the latest schema show
        what the rewrite wrote. An ``int`` field is widened to ``double`` first and rows with
        fractions upserted, so that the narrowing has values to lose."""
        prefix, struct = self.container(pick)
        fields = [f for f in struct.fields if isinstance(f.type, str)
                  and (f.type in NARROWINGS or f.type == "int")
                  and not f.required and not (prefix == "" and f.name in PROTECTED)]
        if not fields:
            return
        f = fields[(pick // 7) % len(fields)]
        if f.type == "int":
            self.model.retype(f, "double")
            self.alter(f"ALTER COLUMN {prefix}`{f.name}` TYPE double")
            self.upsert(vseed)
        new = NARROWINGS[f.type][to % len(NARROWINGS[f.type])]
        if any(d is not None and convert(d, new) is None
               for d in (f.default, f.write_default)):
            return  # a default that does not fit: not modelled
        self.table.rewrite(f"ALTER TABLE t ALTER COLUMN {prefix}`{f.name}` TYPE {new}",
                           on_cast_error="null")
        self.narrowings += 1
        self.model.retype(f, new)
        self.record()
        self.check(f"rewrite of {prefix}{f.name} to {new}")

    @rule()
    def purge_dropped(self) -> None:
        """A rewrite of every file in the latest schema: the rows stay the model's (a dropped
        field's values are gone from the files, so a revert can no longer restore them)."""
        self.table.rewrite(purge_dropped=True)
        self.record()
        self.check("rewrite purging dropped columns")

    @precondition(lambda self: len(self.commits) > 1)
    @rule(pick=picks)
    def revert(self, pick: int) -> None:
        """Revert the schema to the one of an earlier commit: its fields with their IDs; a
        field dropped since shows its old values again, where no file holding them was
        rewritten since (else the revert is not made: the model does not know the files)."""
        earlier = self.commits[:-1]
        differ = [c for c in earlier if c[2].columns != self.model.columns]
        pool = differ if differ and pick % 5 else earlier  # now and then: nothing to revert
        instant, _, then = pool[(pick // 5) % len(pool)]
        self.revert_to(instant, then)

    @rule(pick=picks, vseed=seeds)
    def drop_write_and_revert(self, pick: int, vseed: int) -> None:
        """Drop a field, insert rows, revert to the schema before the drop: the field comes
        back with its values, null (or its default) in the rows inserted meanwhile."""
        before = self.commits[-1]
        self.drop_column(pick)
        if self.commits[-1] is before:
            return  # nothing to drop there
        self.insert(vseed)
        self.revert_to(before[0], before[2])

    def revert_to(self, instant: str, then: Model) -> None:
        """Revert the table to the schema of commit ``instant`` (``then``: the model after it),
        and the model with it; a refusal must be one the model expects."""
        target = then.columns
        now = self.model.all_ids().values()
        restored = set(then.all_ids().values()) - set(now)
        if restored and not self.values_kept(restored):
            self.reverts["skipped"] += 1
            return
        narrowed = self.narrowed(target)
        try:
            self.table.revert_schema(instant)
        except CommitNotFoundError:
            assert instant in self.cleaned_after, f"revert to {instant}: no such commit"
            return
        except SchemaEvolutionError as exc:
            if exc.message.startswith("Nothing to revert"):
                assert target == self.model.columns, f"revert to {instant}: {exc.message}"
            else:
                assert narrowed, f"revert to {instant} refused: {exc.message}"
            self.reverts["refused"] += 1
            return
        assert not narrowed, f"revert to {instant} allowed, but narrows {narrowed}"
        self.model.columns = copy.deepcopy(target)
        self.reverts["made"] += 1
        self.reverts["restoring"] += bool(restored)
        self.record()
        self.check(f"revert to {instant}")

    def values_kept(self, ids: set[int]) -> bool:
        """Whether no commit since the last schema version holding ``ids`` rewrote a file (a
        copy-on-write upsert or delete, compaction, clustering): a rewritten file drops
        dropped fields."""
        store = self.table.schema_store
        commits = self.table.timeline.completed()
        holding = [set(store.load(c.schema_version).field_ids())
                   if c.schema_version in store.versions() else set() for c in commits]
        last = min(max((i for i, held in enumerate(holding) if fid in held), default=-1)
                   for fid in ids)
        cow = self.flavour is not None and self.flavour.table_type == "cow"
        return not any(c.operation in ("compact", "rewrite", "cluster")
                       or (cow and c.operation in ("upsert", "delete"))
                       for c in commits[last + 1:])

    def narrowed(self, target: MStruct) -> list[int]:
        """The IDs whose type in ``target`` some recorded schema cannot be read as."""
        want = field_types(target)
        wider = {"int": {"bigint", "float", "double", "string"},
                 "bigint": {"float", "double", "string"}, "float": {"double", "string"},
                 "double": {"string"}}
        out = set()
        for _, _, model in [*self.commits, (None, None, self.model)]:
            for fid, have in field_types(model.columns).items():
                if fid in want and have != want[fid] and want[fid] not in wider.get(have, ()):
                    out.add(fid)
        return sorted(out)

    # ------------------------------------------------------------------ services
    @rule()
    def compact(self) -> None:
        self.table.compact()
        self.record()
        self.check("compact")
        if self.flavour and self.flavour.table_type == "mor":
            # Every log block is merged now: the base files alone hold the snapshot.
            df = self.table.read(query="read_optimized")
            same(rows_of(df), self.model.read(), "latest snapshot")

    def sortable(self) -> list[str]:
        """The columns a clustering can sort by: top-level primitive columns and primitive
        members of top-level structs (dotted)."""
        out = []
        for f in self.model.columns.fields:
            if isinstance(f.type, str):
                out.append(f.name)
            elif isinstance(f.type, MStruct):
                out.extend(f"{f.name}.{m.name}" for m in f.type.fields if isinstance(m.type, str))
        return out

    @rule(pick=picks, how=st.integers(min_value=0, max_value=3))
    def cluster(self, pick: int, how: int) -> None:
        """A clustering (one replacecommit, or none when nothing needs it): by the table's
        stored order (``how`` 0), one column (1), two columns sorted (2) or z-ordered (3),
        with a small target so that groups are split too; the rows stay the model's."""
        rng = random.Random(pick)
        names = self.sortable()
        by: list[str] | None = None
        if how == 1 or (how > 1 and len(names) < 2):
            by = [rng.choice(names)]
        elif how > 1:
            by = rng.sample(names, 2)
        order = "zorder" if how == 3 and by is not None and len(by) == 2 else None
        self.table.cluster(by=by, order=order,
                           target_file_bytes=rng.choice([1024, 64 * 1024 * 1024]))
        self.record()
        self.check(f"cluster by {by} ({order or 'linear'})")

    @rule(keep=st.integers(min_value=1, max_value=4))
    def clean(self, keep: int) -> None:
        self.flush()  # the clean may delete the files of pending reads
        commit = self.table.clean(retain_commits=keep)
        if commit is not None:
            self.cleaned_after.update(i for i, _, _ in self.commits)
        self.record()
        self.check(f"clean keeping {keep} commits")

    @precondition(lambda self: bool(self.commits) and self.commits[-1][1] not in NOT_UNDOABLE
                  and len(self.commits) > 1)
    @rule()
    def rollback(self) -> None:
        self.flush()  # the rollback deletes the files of the commit it undoes
        self.table.rollback()
        max_id = self.model.max_id
        self.commits.pop()
        self.model = self.commits[-1][2].copy()
        self.model.max_id = max_id  # IDs are never given out again
        self.record()
        self.check("rollback")

    # ------------------------------------------------------------------ the end
    def final_checks(self) -> None:
        """Every commit by time travel (its own schema and the latest), an incremental read, a
        filter on a random column, the latest snapshot in earlier schemas, and the other
        merge-on-read reader: planned one by one,
        their schemas compared at once, their rows collected by one Spark job."""
        rng = random.Random(len(self.commits) * 7919 + self.model.max_id)
        latest = self.model
        reads = Reads()
        readable = []
        for instant, _, model in self.commits:
            try:
                own = self.table.read(as_of=instant)
            except CommitNotFoundError:
                assert instant in self.cleaned_after, f"commit {instant} unreadable, no clean"
                continue
            readable.append((instant, model))
            same(arrow_rows(self.table.to_arrow(as_of=instant)), model.read(),
                 f"Arrow read as of {instant}")
            reads.add(f"as of {instant}", own, model.schema_text(), model.read())
            reads.add(f"as of {instant} in the latest schema",
                      self.table.read(as_of=instant, schema="latest"), latest.schema_text(),
                      model.read(latest.columns))
        if len(readable) >= 2:
            (a, _), (b, model_b) = sorted(rng.sample(readable, 2), key=lambda r: r[0])
            reads.add(f"incremental {a}..{b}", self.table.read_incremental(start=a, end=b),
                      model_b.schema_text(), model_b.read(since=a, until=b))
        for _ in range(FINAL_FILTERS):
            self.add_filter(rng, reads, readable)
        self.add_older_schemas(rng, reads)
        reads.check(self.spark)
        if self.flavour and self.flavour.table_type == "mor":
            self.table.set_properties(self.flavour.properties(jvm=not self.flavour.jvm))
            other = Reads()
            other.add("the other reader", self.table.read(), latest.schema_text(), latest.read())
            if readable:
                instant, model = readable[0]
                other.add(f"the other reader as of {instant}", self.table.read(as_of=instant),
                          model.schema_text(), model.read())
            other.check(self.spark)
        self.iceberg_checks()

    def archive_checks(self) -> int:
        """With a small ``evonb.timeline.archive.keep``, the history read above came partly
        from the timeline's archive: make sure it did (the test is not vacuous) and that
        ``evonb check`` agrees. Returns how many commits are archived."""
        timeline = self.table.timeline
        archived = len(timeline.archived_instants())
        keep = self.flavour.archive_keep if self.flavour else 0
        if keep and not timeline.pending() and len(timeline.completed()) >= 2 * keep:
            assert archived, f"{len(timeline.completed())} commits, none archived (keep {keep})"
            report = check_table(self.table.root)  # (a blocked Iceberg export is no concern)
            wrong = [p for p in report.problems if p.kind != "iceberg"]
            assert not wrong and report.stats["archived"] == archived, report.render()
        return archived

    def iceberg_checks(self) -> None:
        """pyiceberg, an independent reader, reads the Iceberg metadata evonb publishes for
        the history: as of every published commit (in that commit's schema) and the current
        snapshot (in the latest schema). The export skips states Iceberg cannot express;
        every state it publishes must agree with the model."""
        if self.flavour is not None and self.flavour.iceberg:
            # Published after every commit: never behind (blocked or uncompacted are fine).
            status = self.table.iceberg_status()
            assert status.state in ("current", "blocked", "uncompacted"), status
            ICEBERG["automatic"] += 1
        try:
            result = iceberg_sync(self.table)
        except IcebergExportError as exc:
            if "log blocks" in exc.message:  # refused outright: log blocks not yet compacted
                assert self.flavour is not None and self.flavour.table_type == "mor", exc
                ICEBERG["refused"] += 1
                return
            # Nothing publishable: the oldest retained commit (clean keeps few) already reads
            # files through a type change Iceberg cannot express; the way out is a rewrite.
            assert "not an Iceberg type promotion" in exc.message, exc
            assert exc.hint is not None and "t.rewrite()" in exc.hint, exc
            assert self.table.iceberg_status().state in ("blocked", "off"), exc
            ICEBERG["blocked"] += 1
            return
        ice = StaticTable.from_metadata(result.metadata_file, properties=_iceberg_properties)
        models = {instant: model for instant, _, model in self.commits}
        for instant, snapshot in result.snapshots.items():
            assert instant in models, f"Iceberg snapshot of commit {instant}, unknown to the model"
            got = ice.scan(snapshot_id=snapshot).to_arrow()
            same(as_pyiceberg_reads(arrow_rows(got), got.schema),
                 as_pyiceberg_reads(models[instant].read(), got.schema),
                 f"pyiceberg read as of {instant}")
            ICEBERG["snapshots"] += 1
        if result.blocked is None:
            latest = ice.scan().to_arrow()
            assert latest.column_names == self.model.names(), "pyiceberg columns"
            same(as_pyiceberg_reads(arrow_rows(latest), latest.schema),
                 as_pyiceberg_reads(self.model.read(), latest.schema),
                 "pyiceberg read of the latest state")
            ICEBERG["latest"] += 1
        else:
            ICEBERG["blocked"] += 1

    def add_older_schemas(self, rng: random.Random, reads: Reads) -> None:
        """The latest snapshot read in the schemas of up to ``OLDER_SCHEMAS`` earlier commits,
        by Spark and the JVM-free reader: each value as the latest snapshot shows it, then
        converted to the older type (a ``string`` ``"-44.0"`` of a column that was ``int``
        reads null, as Spark's ``try_cast`` has it). Only schemas none of whose fields was
        dropped since: a dropped field's values are where no rewrite removed them, which the
        model does not follow."""
        now = set(self.model.all_ids().values())
        texts = {self.model.schema_text()}
        older = []
        for instant, _, model in self.commits:
            text = model.schema_text()
            if text not in texts and set(model.all_ids().values()) <= now:
                texts.add(text)
                older.append((instant, model))
        for instant, model in rng.sample(older, min(OLDER_SCHEMAS, len(older))):
            try:
                df = self.table.read(schema=instant)
            except CommitNotFoundError:
                assert instant in self.cleaned_after, f"schema of {instant} unreadable"
                continue
            expected = self.model.read(model.columns)
            label = f"the latest snapshot in the schema of {instant}"
            reads.add(label, df, model.schema_text(), expected)
            same(arrow_rows(self.table.to_arrow(schema=instant)), expected, f"Arrow read, {label}")
            OLDER_READS[0] += 1

    def add_filter(self, rng: random.Random, reads: Reads,
                   readable: list[tuple[str, Model]]) -> None:
        """A filter on a random top-level primitive column (renamed, retyped or re-added ones
        included): ``=``, ``<``, ``>=`` or ``is null``, on the latest snapshot or, half the
        time, as of a random readable commit read in the latest schema (files that lack the
        column, or store it in an older type, under a filter the readers push into them).
        Spark's read and the JVM-free reader's ``filter=`` each return the model's rows that
        pass it."""
        cols = [f for f in self.model.columns.fields if isinstance(f.type, str)]
        f = rng.choice(cols)
        as_of = rng.choice(readable)[0] if readable and rng.random() < 0.5 else None
        then = self.model if as_of is None else dict(readable)[as_of]
        rows = then.read(self.model.columns)
        values = [r[f.name] for r in rows if r[f.name] is not None]
        op = rng.choice(("=", "<", ">=")) if values and rng.random() < 0.8 else "is null"
        v = rng.choice(values) if op != "is null" else None
        passes = FILTER_OPS[op]
        expected = [r for r in rows if passes(r[f.name], v)]
        label = f"filter {f.name} {op} {v!r}" + (f" as of {as_of}" if as_of else "")
        column, field = F.col(f"`{f.name}`"), pc.field(f.name)
        spark_cond = {"=": lambda: column == F.lit(v), "<": lambda: column < F.lit(v),
                      ">=": lambda: column >= F.lit(v), "is null": column.isNull}[op]()
        arrow_cond = {"=": lambda: field == v, "<": lambda: field < v,
                      ">=": lambda: field >= v, "is null": field.is_null}[op]()
        schema = None if as_of is None else "latest"
        df = self.table.read(as_of=as_of, schema=schema)
        reads.add(label, df.filter(spark_cond), self.model.schema_text(), expected)
        FILTERS[op] += 1
        same(arrow_rows(self.table.to_arrow(as_of, schema=schema, filter=arrow_cond)), expected,
             f"Arrow read, {label}")


class Reads:
    """Reads to compare with the model, collected together: each DataFrame's rows as JSON
    (nulls kept) in one union, so that many small reads cost one Spark job."""

    def __init__(self) -> None:
        self.items: list[tuple[str, DataFrame, list[dict[str, Any]]]] = []

    def add(self, label: str, df: DataFrame, schema_text: str,
            expected: list[dict[str, Any]]) -> None:
        assert df.schema.simpleString() == schema_text, (
            f"{label}: schema {df.schema.simpleString()} != model {schema_text}")
        self.items.append((label, df, expected))

    def check(self, spark: SparkSession) -> None:
        if not self.items:
            return
        frames = [df.select(F.lit(i).alias("i"), F.to_json(F.struct(*[
            F.col(f"`{c}`") for c in df.columns]), {"ignoreNullFields": "false"}).alias("j"))
            for i, (_, df, _) in enumerate(self.items)]
        union = frames[0]
        for frame in frames[1:]:
            union = union.unionAll(frame)
        got: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(self.items))}
        for row in union.collect():
            got[row.i].append(json.loads(row.j))
        for i, (label, _, expected) in enumerate(self.items):
            same(sorted(got[i], key=lambda r: r["id"]), expected, label)
