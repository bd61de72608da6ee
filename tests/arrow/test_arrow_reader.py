"""The Arrow reader (``Table.to_arrow`` / ``to_batches`` / ``to_pandas``) against the Spark
reader: the same rows, column names and types, at every commit of evolved copy-on-write and
merge-on-read tables (Avro and Parquet log blocks, partitioned or not), in each commit's own
schema and in the latest; plus ``columns``, ``filter``, ``limit``, streaming, and a read in a
fresh process that never starts a JVM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evonb
from evonb.errors import ColumnNotFoundError, EvoError
from evonb.spark.session import temporary_settings
from evonb.spark.writer import TIMESTAMP_TYPE_OPTION

pytestmark = pytest.mark.spark

COLS = ("id bigint not null, name string, qty int, price float, code int, part string, "
        "info struct<a:int,b:string>, tags array<struct<x:int,y:string>>, "
        "attrs map<string,struct<p:int,q:string>>, ts bigint")
SPARK_COLS = COLS.replace(" not null", "")


def _row(i, ts, *, name=None, part=None):
    return (i, name or f"n{i}", i * 10, i + 0.5, 1000 + i, part or ("a" if i % 2 else "b"),
            (i, f"b{i}"), [(i, f"y{i}"), (i + 1, None)], {f"k{i}": (i, f"q{i}")}, ts)


def _build(spark, root, table_type, log_format, partitioned):
    """An evolved table: renames, a swap of two names, nested renames, drops and re-adds under
    the same name (top-level, in a struct, an array's element struct and a map's value struct),
    adds with and without a default, int->bigint, float->double, int->string, upserts with a
    losing older row and a tie, deletes, an overwrite and a compaction."""
    props = {"evonb.mor.log_format": log_format} if log_format else None
    t = evonb.create_table(root, COLS, primary_key="id", precombine="ts",
                           partition_by="part" if partitioned else (), table_type=table_type,
                           properties=props)
    t.write(spark.createDataFrame([_row(i, 1) for i in range(8)], SPARK_COLS), "upsert")
    t.alter("ALTER TABLE t RENAME COLUMN name TO label; "
            "ALTER TABLE t RENAME COLUMN qty TO code; ALTER TABLE t RENAME COLUMN code TO qty; "
            "ALTER TABLE t RENAME COLUMN info.a TO aa")
    cols1 = ("id bigint, label string, code int, price float, qty int, part string, "
             "info struct<aa:int,b:string>, tags array<struct<x:int,y:string>>, "
             "attrs map<string,struct<p:int,q:string>>, ts bigint")
    # 1 wins (ts 2 > 1), 2 loses (ts 0 < 1), 3 ties (the later write wins), 20 is new.
    t.write(spark.createDataFrame([_row(1, 2, name="u1"), _row(2, 0, name="old"),
                                   _row(3, 1, name="tie"), _row(20, 2)], cols1), "upsert")
    t.alter("ALTER TABLE t DROP COLUMN info.b; ALTER TABLE t DROP COLUMN tags.element.y; "
            "ALTER TABLE t DROP COLUMN attrs.value.q; ALTER TABLE t DROP COLUMN label")
    t.alter("ALTER TABLE t ADD COLUMNS (info.b string, tags.element.y string, "
            "attrs.value.q string, label string, color string DEFAULT 'red', note string); "
            "ALTER TABLE t ALTER COLUMN qty TYPE bigint; "
            "ALTER TABLE t ALTER COLUMN price TYPE double; "
            "ALTER TABLE t ALTER COLUMN code TYPE string")
    t.write(spark.createDataFrame([(4,), (99,)], "id bigint"), "delete")
    cols2 = ("id bigint, code string, price double, qty bigint, part string, "
             "info struct<aa:int,b:string>, tags array<struct<x:int,y:string>>, "
             "attrs map<string,struct<p:int,q:string>>, ts bigint, label string, "
             "color string, note string")
    later = [(i, f"c{i}", i * 1.25, 2**40 + i, "a" if i % 2 else "b", (i, f"nb{i}"),
              [(i, f"ny{i}")], {"z": (i, f"nq{i}")}, ts, f"l{i}", color, None)
             for i, ts, color in [(5, 9, "blue"), (6, 0, "lost"), (4, 3, None), (21, 1, "g")]]
    t.write(spark.createDataFrame(later, cols2), "upsert")
    t.write(spark.createDataFrame([(0,), (7,)], "id bigint"), "delete")
    t.write(spark.createDataFrame([(30 + i, f"o{i}", 1.0, i, "a", None, None, None, i,
                                    None, "o", "n") for i in range(2)], cols2), "insert")
    t.compact()
    t.write(spark.createDataFrame([(30, "after", 2.0, 7, "a", (1, "x"), [], {}, 5, "l",
                                    None, None)], cols2), "upsert")
    if table_type == "cow":
        t.write(spark.createDataFrame(later, cols2), "overwrite")
        t.write(spark.createDataFrame([(6, "c6b", 1.0, 1, "b", None, None, None, 4, None,
                                        None, None)], cols2), "upsert")
    return t


VARIANTS = {
    "cow": ("cow", None, False),
    "cow-partitioned": ("cow", None, True),
    "mor-avro": ("mor", "avro", False),
    "mor-parquet-partitioned": ("mor", "parquet", True),
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def table(request, spark, tmp_path_factory):
    return _build(spark, tmp_path_factory.mktemp(request.param) / "t", *VARIANTS[request.param])


def _norm(t: pa.DataType) -> str:
    """A type as text, with Spark's Arrow choices (large strings and lists) made plain."""
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{_norm(f.type)}" for f in t) + ">"
    if pa.types.is_map(t):
        return f"map<{_norm(t.key_type)},{_norm(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{_norm(t.value_type)}>"
    if pa.types.is_large_string(t):
        return "string"
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}{', tz' if t.tz else ''}]"
    if pa.types.is_large_binary(t):
        return "binary"
    return str(t)


def _text_key(text: str) -> tuple[int, str]:
    """Rows as text, ordered by their leading ``id`` value, then whole."""
    head = text.split(",", 1)[0]
    digits = head.rsplit(" ", 1)[-1]
    return (int(digits) if digits.lstrip("-").isdigit() else 0, text)


def _same(got: pa.Table, expected: pa.Table) -> None:
    assert got.column_names == expected.column_names
    assert [_norm(f.type) for f in got.schema] == [_norm(f.type) for f in expected.schema]
    # As text: NaN equals NaN there.
    assert (sorted(map(repr, got.to_pylist()), key=_text_key)
            == sorted(map(repr, expected.to_pylist()), key=_text_key))


def _commits(t):
    return [c.instant for c in t.history()]


def test_latest(table):
    _same(table.to_arrow(), table.read().toArrow())
    _same(table.to_arrow(meta_columns=True), table.read(meta_columns=True).toArrow())


def test_columns_with_meta_columns_keep_the_commit_time_in_both_readers(table):
    cols = ["id", "info.aa"]
    got = table.to_arrow(columns=cols, meta_columns=True)
    assert got.column_names == ["id", "aa", "_evo_commit_time"]
    _same(got, table.read(columns=cols, meta_columns=True).toArrow())
    assert set(got.column("_evo_commit_time").to_pylist()) <= set(_commits(table))


def test_every_commit_own_and_latest_schema(table):
    for instant in _commits(table):
        _same(table.to_arrow(instant), table.read(instant).toArrow())
        _same(table.to_arrow(instant, schema="latest"),
              table.read(instant, schema="latest").toArrow())


def test_first_schema_over_latest_data(table):
    first = _commits(table)[0]
    _same(table.to_arrow(schema=first), table.read(schema=first).toArrow())


def test_columns(table):
    cols = ["qty", "id", "info", "color"]
    _same(table.to_arrow(columns=cols), table.read(columns=cols).toArrow())
    first = next(c for c in _commits(table) if table.schema_at(c).has("label"))
    _same(table.to_arrow(first, columns=["label", "tags"]),
          table.read(first, columns=["label", "tags"]).toArrow())


def test_filter(table):
    from pyspark.sql import functions as F

    got = table.to_arrow(filter=pc.field("qty") > 25, columns=["id", "code"])
    expected = table.read().filter(F.col("qty") > 25).select("id", "code").toArrow()
    _same(got, expected)
    got = table.to_arrow(filter=(pc.field("id") >= 3) & (pc.field("color") == "red"))
    expected = table.read().filter((F.col("id") >= 3) & (F.col("color") == "red")).toArrow()
    _same(got, expected)
    got = table.to_arrow(filter=pc.field("code") == "1005")
    _same(got, table.read().filter(F.col("code") == "1005").toArrow())


def test_limit_and_batches(table):
    full = table.to_arrow()
    rows = {repr(r) for r in full.to_pylist()}
    assert full.num_rows > 2
    limited = table.to_arrow(limit=2)
    assert limited.num_rows == 2 and {repr(r) for r in limited.to_pylist()} <= rows
    assert table.to_arrow(limit=0).num_rows == 0
    batches = list(table.to_batches())
    assert all(isinstance(b, pa.RecordBatch) and b.schema == full.schema for b in batches)
    assert sum(b.num_rows for b in batches) == full.num_rows
    stream = table.to_batches(limit=1)
    first = next(stream)
    assert first.num_rows == 1 and next(stream, None) is None
    frame = table.to_pandas(columns=["id", "label"])
    assert list(frame.columns) == ["id", "label"] and len(frame) == full.num_rows
    # to_arrow reads files at once on threads, in the order to_batches streams them
    assert len(table.snapshot().files) > 1
    assert full.equals(pa.Table.from_batches(batches, schema=full.schema))


def test_files_read_as_stored_are_read_in_one_call_with_the_rows_streaming_gives(
        table, monkeypatch):
    """``to_arrow`` reads a file whose columns the query takes as stored (renamed at most)
    in one call pyarrow projects; files with added, widened or rebuilt columns, and the
    streaming read, go batch by batch: the same rows either way, at every commit."""
    from evonb.arrow import reader

    calls: list[bool] = []  # one per file read whole: True when pyarrow projected it

    def spy(*args, **kwargs):
        out = scan_whole(*args, **kwargs)
        calls.append(out is not None)
        return out

    scan_whole = reader._scan_whole
    monkeypatch.setattr(reader, "_scan_whole", spy)
    for instant in _commits(table):
        for schema in (None, "latest"):
            got = table.to_arrow(instant, schema=schema)
            streamed = pa.Table.from_batches(list(table.to_batches(instant, schema=schema)),
                                             schema=got.schema)
            _same(got, streamed)
    assert True in calls and False in calls, calls  # both paths were taken
    calls.clear()
    first = next(c for c in _commits(table) if table.snapshot(c).files)  # the first write
    table.to_arrow(first)  # its files in its own schema: every column as stored
    assert calls and all(calls), calls
    calls.clear()
    table.to_arrow(first, meta_columns=True)  # the commit time is evaluated per batch
    assert calls == []


def test_mistakes(table):
    with pytest.raises(EvoError):
        table.to_arrow(filter="id > 3")
    with pytest.raises(EvoError):
        table.to_arrow(filter=pc.field("nope") > 3)
    with pytest.raises(EvoError):
        table.to_arrow(limit=-1)
    with pytest.raises(EvoError, match="'tags'"):  # a member of an array's elements
        table.to_arrow(columns=["tags.x"])


def test_nested_columns(table):
    """Struct members by dotted path: the same columns (named like the member, null where
    the struct is null), rows and types as Spark's ``select`` through ``read(columns=...)``,
    across the rename of ``info.a`` and the drop and re-add of ``info.b``."""
    cols = ["info.aa", "id", "INFO.B", "info"]
    got = table.to_arrow(columns=cols)
    assert got.column_names == ["aa", "id", "b", "info"]
    assert got.column("aa").null_count >= 1  # rows whose struct is null
    _same(got, table.read(columns=cols).toArrow())
    commits = _commits(table)
    first = commits[0]
    _same(table.to_arrow(first, columns=["info.a", "info.b"]),
          table.read(first, columns=["info.a", "info.b"]).toArrow())
    for instant in commits:
        _same(table.to_arrow(instant, schema="latest", columns=["info.b", "info.aa", "id"]),
              table.read(instant, schema="latest", columns=["info.b", "info.aa", "id"])
              .toArrow())
    read_b = list(table.to_batches(columns=["info.b"], limit=2))
    assert {tuple(b.schema.names) for b in read_b} == {("b",)}
    assert sum(b.num_rows for b in read_b) == 2
    assert table.to_pandas(columns=["info.aa"]).columns.tolist() == ["aa"]


def test_nested_columns_with_filter(table):
    from pyspark.sql import functions as F

    got = table.to_arrow(columns=["info.aa", "info.b"], filter=pc.field("id") >= 3)
    expected = table.read().filter(F.col("id") >= 3).select("info.aa", "info.b").toArrow()
    _same(got, expected)
    got = table.to_arrow(columns=["id", "info.b"], filter=pc.field("info", "aa") > 2)
    expected = table.read().filter(F.col("info.aa") > 2).select("id", "info.b").toArrow()
    assert got.num_rows >= 1
    _same(got, expected)


def test_members_of_nested_structs(spark, tmp_path):
    """Members two structs deep, renamed, dropped and re-added, by path as Spark selects
    them; a null outer or inner struct gives null members."""
    t = evonb.create_table(tmp_path / "deep", "id bigint not null, "
                           "s struct<t:struct<u:int,v:string>,w:int>", primary_key="id")
    rows = [(1, ((1, "v1"), 10)), (2, (None, 20)), (3, None)]
    t.write(spark.createDataFrame(rows, "id bigint, s struct<t:struct<u:int,v:string>,w:int>"))
    t.alter("ALTER TABLE t RENAME COLUMN s.t.u TO uu; ALTER TABLE t DROP COLUMN s.t.v")
    t.alter("ALTER TABLE t ADD COLUMNS (s.t.v string)")
    t.write(spark.createDataFrame([(4, ((4, "new"), 40))],
                                  "id bigint, s struct<t:struct<uu:int,v:string>,w:int>"))
    cols = ["s.t.uu", "id", "S.T.V", "s.t", "s.w"]
    got = t.to_arrow(columns=cols)
    assert got.column_names == ["uu", "id", "v", "t", "w"]
    by_id = {r["id"]: r for r in got.to_pylist()}
    assert by_id[1]["uu"] == 1 and by_id[1]["v"] is None  # v was dropped, then re-added
    assert by_id[2]["uu"] is None and by_id[3]["w"] is None and by_id[4]["v"] == "new"
    _same(got, t.read(columns=cols).toArrow())
    first = _commits(t)[0]
    _same(t.to_arrow(first, columns=["s.t.u", "s.t.v"]),
          t.read(first, columns=["s.t.u", "s.t.v"]).toArrow())


def test_unknown_nested_column_is_the_spark_readers_error(table):
    with pytest.raises(ColumnNotFoundError) as spark_error:
        table.read(columns=["info.aax"])
    with pytest.raises(ColumnNotFoundError) as arrow_error:
        table.to_arrow(columns=["info.aax"])
    assert str(arrow_error.value) == str(spark_error.value)
    assert "'info.aax'" in str(arrow_error.value)
    assert "did you mean 'info.aa'?" in str(arrow_error.value)


def test_no_jvm_in_a_fresh_process(table):
    expected = table.to_arrow().num_rows
    code = (
        "import json, sys, evonb\n"
        f"t = evonb.open_table({json.dumps(str(table.root))})\n"
        "n = t.to_arrow(as_of='@1', schema='latest').num_rows + t.to_arrow().num_rows\n"
        "n += sum(b.num_rows for b in t.to_batches())\n"
        "print(json.dumps([t.to_arrow().num_rows, sorted(m for m in ('pyspark', 'py4j')"
        " if m in sys.modules)]))\n"
    )
    root = Path(evonb.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    rows, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert rows == expected
    assert loaded == []


def test_filter_pushed_by_physical_name(table):
    """The filter reaches the Parquet scan of files without log blocks under the physical
    name of its column (``qty`` was swapped with ``code``), and keeps the same rows there."""
    import pyarrow.dataset as ds

    from evonb.arrow.reader import ArrowRead, _physical_types

    read = ArrowRead(table, filter=pc.field("qty") > 25)
    snap = table.snapshot()
    grouped = {f.base for f in snap.logs}
    latest = snap.schema_version
    files = [f for f in snap.files if f.version == latest and f.path not in grouped]
    assert files
    for f in files:
        path = str(table.root / f.path)
        pushed = read._pushdown(read._plan(f.version), _physical_types(
            table.version(f.version)), ds.dataset(path).schema)
        assert pushed is not None
        _, layout = table.version(f.version)
        physical = layout.name(table.schema.find_id("qty"))
        everything = ds.dataset(path).to_table().column(physical).to_pylist()
        kept = ds.dataset(path).to_table(filter=pushed).column(physical).to_pylist()
        assert sorted(kept) == sorted(v for v in everything if v is not None and v > 25)


def test_log_blocks_are_where_the_table_type_puts_them(table):
    """The merge-on-read variants really merge log blocks of their format (at some commit and
    at the latest); the copy-on-write ones never have any."""
    suffixes = {Path(f.path).suffix for c in _commits(table) for f in table.snapshot(c).logs}
    if table.table_type == "cow":
        assert suffixes == set()
        return
    fmt = table.properties.get("evonb.mor.log_format", "avro")
    assert suffixes == {f".{fmt}"}
    assert table.snapshot().logs  # the latest read merges blocks too


@pytest.mark.spark
def test_both_readers_refuse_an_empty_selection_and_a_member_inside_an_array(spark, tmp_path):
    """``columns=[]`` read every column by Spark and none (no rows) by the Arrow reader, and a
    member of an array's structs was a raw Spark analysis error: both readers now refuse
    them alike, with one evonb error."""
    t = evonb.create_table(tmp_path / "t", "id int, arr array<struct<p: int>>, "
                           "m map<string, struct<q: int>>", primary_key="id")
    t.write(spark.createDataFrame([(1, [(2,)], {"k": (3,)})], "id int, arr array<struct<p: int>>, "
                                  "m map<string, struct<q: int>>"))
    for read in (t.read, t.to_arrow):
        with pytest.raises(EvoError, match="names no column"):
            read(columns=[])
        for member, holder in (("arr.p", "arr"), ("arr.element.p", "arr"), ("m.value.q", "m")):
            with pytest.raises(EvoError, match=f"inside '{holder}', an array or a map"):
                read(columns=[member])
    assert t.read(columns=["arr"]).collect()[0]["arr"][0]["p"] == 2


def _timestamps(written_as: str) -> dict[str, str]:
    """The session settings that make Spark write ``timestamp`` values ``written_as``."""
    return {TIMESTAMP_TYPE_OPTION: "INT96"} if written_as == "INT96" else {}


@pytest.mark.spark
@pytest.mark.parametrize("written_as", ["INT96", "evonb's default"])
def test_timestamps_outside_the_nanosecond_range(spark, tmp_path, written_as):
    """Spark writes timestamps as INT96 by default, which pyarrow reads as nanoseconds by
    default: a timestamp before 1677 or after 2262 then overflows. The JVM-free reader reads
    them in microseconds and gives what Spark reads, on both table types (merge-on-read: base
    rows and log records), and a small copy-on-write upsert rewrites such a file in the
    driver; so do files evonb writes as INT64 microseconds."""
    import datetime as dt

    ddl = "id int not null, at timestamp, local timestamp_ntz, v int"
    cols = ddl.replace(" not null", "")
    far = [(1, dt.datetime(1500, 3, 1, 12), dt.datetime(1000, 1, 1), 1),
           (2, dt.datetime(2500, 12, 31, 23, 59, 59, 999999), dt.datetime(9999, 12, 31), 2),
           (3, dt.datetime(2024, 5, 1), None, 3)]
    for table_type in ("cow", "mor"):
        t = evonb.create_table(tmp_path / table_type, ddl, primary_key="id",
                               table_type=table_type)
        with temporary_settings(spark, _timestamps(written_as)):
            t.write(spark.createDataFrame(far, cols))
        t.write(spark.createDataFrame([(3, dt.datetime(1600, 6, 6), None, 30)], cols),
                "upsert")
        if table_type == "cow":
            assert t.timeline.last_completed().metadata["key_lookup"]["driver"] is True
        spark_rows = sorted(tuple(r) for r in t.read().collect())
        arrow = t.to_arrow()
        utc = [(r["id"], r["at"].replace(tzinfo=None) if r["at"] else None, r["local"], r["v"])
               for r in arrow.to_pylist()]
        assert sorted(utc) == spark_rows
        assert spark_rows[0][1] == dt.datetime(1500, 3, 1, 12)
        assert spark_rows[2] == (3, dt.datetime(1600, 6, 6), None, 30)


@pytest.mark.spark
@pytest.mark.parametrize("written_as", ["INT96", "evonb's default"])
def test_timestamp_filters_on_files_spark_wrote(spark, tmp_path, written_as):
    """A filter on a ``timestamp`` column of a file Spark wrote as INT96 (its default, which
    pyarrow reads without a time zone) failed as a corrupt file ("cannot compare timestamp
    with timezone to timestamp without timezone"): it was pushed into the file as stored. It
    now gives the rows Spark's filter gives, for files Spark and the driver wrote, base rows
    and log blocks; and so it does for the INT64 microseconds evonb writes."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    ddl = "id int not null, at timestamp, local timestamp_ntz"
    cols = ddl.replace(" not null", "")
    rows = [(i, dt.datetime(2026, 1, 1) + dt.timedelta(hours=i) if i % 4 else None,
             dt.datetime(2026, 1, 1) + dt.timedelta(minutes=i)) for i in range(12)]
    paris = ZoneInfo("Europe/Paris")
    filters = {  # the Arrow filter, the same as Spark SQL (the session's zone is UTC)
        "at >= 06:00 UTC": (pc.field("at") >= pa.scalar(dt.datetime(2026, 1, 1, 7, tzinfo=paris)),
                            "at >= timestamp'2026-01-01 06:00:00'"),
        "at = 06:00 UTC": (pc.field("at") == pa.scalar(dt.datetime(2026, 1, 1, 6,
                                                                   tzinfo=dt.UTC)),
                           "at = timestamp'2026-01-01 06:00:00'"),
        "at is null": (pc.field("at").is_null(), "at is null"),
        "local < 00:03": (pc.field("local") < pa.scalar(dt.datetime(2026, 1, 1, 0, 3)),
                          "local < timestamp_ntz'2026-01-01 00:03:00'")}
    for table_type in ("cow", "mor"):
        t = evonb.create_table(tmp_path / table_type, ddl, primary_key="id",
                               table_type=table_type)
        with temporary_settings(spark, _timestamps(written_as)):
            t.write(spark.createDataFrame(rows, cols))
        t.write(spark.createDataFrame([(5, dt.datetime(2026, 1, 2), dt.datetime(2026, 1, 2))],
                                      cols), "upsert")  # a driver rewrite, or a log block
        for label, (arrow_filter, sql) in filters.items():
            got = sorted(t.to_arrow(filter=arrow_filter).column("id").to_pylist())
            expected = sorted(r.id for r in t.read().filter(sql).collect())
            assert got == expected and got, (table_type, label, got, expected)
