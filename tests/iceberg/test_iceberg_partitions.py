"""Identity partitions of every type evonb partitions by, null partitions included, read by
pyiceberg (an independent reader) from the published Iceberg metadata: the same rows as evonb,
and filters on a partition column prune data files by the manifests' partition values."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from pyiceberg.expressions import EqualTo, IsNull
from pyiceberg.table import StaticTable

import evonb
from evonb.iceberg import sync
from evonb.iceberg.sync import UNPARTITIONED_SPEC_ID
from evonb.spark.session import temporary_settings
from evonb.spark.writer import TIMESTAMP_TYPE_OPTION
from tests.parquet_files import physical_types

pytestmark = pytest.mark.spark

# column, evonb type, Spark expression of k (0, 1, 2; k = 3 gives null), a value of k = 1
# as pyiceberg's filter takes it, and the same condition in Spark SQL.
COLUMNS = [
    ("p_tiny", "tinyint", "cast(k as tinyint)", 1, "p_tiny = 1"),
    ("p_small", "smallint", "cast(k as smallint)", 1, "p_small = 1"),
    ("p_int", "int", "cast(k - 1 as int)", 0, "p_int = 0"),
    ("p_big", "bigint", "k * 5000000000", 5000000000, "p_big = 5000000000"),
    ("p_bool", "boolean", "k = 1", True, "p_bool"),
    ("p_float", "float", "cast(cast(k as float) / 2 as float)", 0.5, "p_float = 0.5"),
    ("p_double", "double", "cast(k as double) / -4", -0.25, "p_double = -0.25"),
    ("p_dec", "decimal(9, 2)", "cast(cast(k as decimal(9, 2)) / 4 as decimal(9, 2))",
     Decimal("0.25"), "p_dec = 0.25"),
    ("p_str", "string", "concat('a/b=c %:', cast(k as string), ' é')", "a/b=c %:1 é",
     "p_str = 'a/b=c %:1 é'"),
    ("p_date", "date", "date_add(date'1969-12-30', cast(k as int))", date(1969, 12, 31),
     "p_date = date'1969-12-31'"),
    ("p_ts", "timestamp",
     "timestamp'2024-03-01 23:30:00.123456' + make_interval(0, 0, 0, cast(k as int))",
     datetime(2024, 3, 2, 23, 30, 0, 123456, tzinfo=UTC).isoformat(),
     "p_ts = timestamp'2024-03-02 23:30:00.123456'"),
    ("p_ntz", "timestamp_ntz",
     "timestamp_ntz'1965-06-01 08:00:00.5' + make_interval(0, 0, 0, 0, cast(k as int))",
     "1965-06-01T09:00:00.500000", "p_ntz = timestamp_ntz'1965-06-01 09:00:00.5'"),
    ("p_bin", "binary", "cast(concat('b', cast(k as string)) as binary)", b"b1",
     "p_bin = X'6231'"),
]
FILES = 4  # k = 0, 1, 2 and the all-null partition


def _utc(value):
    """Aware timestamps as naive UTC, as Spark's rows give them (the session is in UTC)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _rows(arrow_table) -> list[dict]:
    return sorted(({k: _utc(v) for k, v in r.items()} for r in arrow_table.to_pylist()),
                  key=lambda r: r["id"])


def _spark_rows(df) -> list[dict]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def _latest(t) -> StaticTable:
    meta = t.root / "metadata"
    n = int((meta / "version-hint.text").read_text().strip())
    return StaticTable.from_metadata(str(meta / f"v{n}.metadata.json"))


@pytest.fixture(scope="module", params=["INT96", "evonb's default"])
def typed(spark, tmp_path_factory, request):
    """A table partitioned by a column of every type, each value set by ``k = id % 4`` (null
    for k = 3), published when written; its ``timestamp`` values stored as INT96 (Spark's
    default, with no statistics: the partition values are read from the rows) or as evonb
    writes them (INT64 microseconds: taken from the footer)."""
    ddl = ", ".join(["id int not null", "v string",
                     *(f"{name} {typ}" for name, typ, *_ in COLUMNS)])
    t = evonb.create_table(tmp_path_factory.mktemp("ice_parts") / "t", ddl, primary_key="id",
                           partition_by=[c[0] for c in COLUMNS],
                           properties={"evonb.iceberg.enabled": "true"})
    exprs = ", ".join(f"case when k = 3 then null else {expr} end {name}"
                      for name, _, expr, *_ in COLUMNS)
    int96 = request.param == "INT96"
    with temporary_settings(spark, {TIMESTAMP_TYPE_OPTION: "INT96"} if int96 else {}):
        t.write(spark.sql(f"select cast(id as int) id, concat('v', id) v, {exprs} "
                          "from (select id, id % 4 k from range(0, 20))"))
    assert len(t.snapshot().files) == FILES
    stored = physical_types(t.root / t.snapshot().files[0].path)
    assert stored["p_ts"] == ("INT96" if int96 else "INT64")
    return t, _latest(t)


def test_every_partition_type_reads_as_evonb_reads(typed):
    t, ice = typed
    got = ice.scan().to_arrow()
    assert got.column_names == t.to_arrow().column_names
    assert _rows(got) == _spark_rows(t.read()) == _rows(t.to_arrow())
    assert len(_rows(got)) == 20
    specs = ice.metadata.partition_specs
    assert [s.spec_id for s in specs] == [0]  # every file has one value per column
    assert [f.transform.__class__.__name__ for f in specs[0].fields] == [
        "IdentityTransform"] * len(COLUMNS)
    partitions = sorted((task.file.partition[2] for task in ice.scan().plan_files()),
                        key=lambda v: (v is None, v))
    assert partitions == [-1, 0, 1, None]  # p_int: the values, and null for k = 3


@pytest.mark.parametrize("column", COLUMNS, ids=[c[0] for c in COLUMNS])
def test_a_filter_on_each_partition_type_prunes_files(typed, column):
    t, ice = typed
    name, _, _, value, condition = column
    expected = _spark_rows(t.read().filter(condition))
    assert [r["id"] for r in expected] == [1, 5, 9, 13, 17]
    scan = ice.scan(row_filter=EqualTo(name, value))
    assert _rows(scan.to_arrow()) == expected
    assert len(list(scan.plan_files())) == 1  # of FILES: pruned by the partition value


@pytest.mark.parametrize("column", COLUMNS, ids=[c[0] for c in COLUMNS])
def test_a_null_partition_is_selected_with_is_null(typed, column):
    t, ice = typed
    name = column[0]
    scan = ice.scan(row_filter=IsNull(name))
    assert _rows(scan.to_arrow()) == _spark_rows(t.read().filter(f"{name} is null"))
    assert [r["id"] for r in _rows(scan.to_arrow())] == [3, 7, 11, 15, 19]
    tasks = list(scan.plan_files())
    assert len(tasks) == 1 and tasks[0].file.partition[[c[0] for c in COLUMNS].index(name)] is None


def test_null_and_empty_string_in_one_folder_are_listed_unpartitioned(spark, tmp_path):
    """Spark writes null and '' of a string partition column to one folder: that file holds
    two values, so it is listed under the unpartitioned spec (read right, not pruned); the
    other files keep their partition values."""
    t = evonb.create_table(tmp_path / "t", "id int not null, p string", primary_key="id",
                           partition_by="p")
    t.write(spark.sql("select cast(id as int) id, case id % 3 when 0 then 'x' when 1 then '' "
                      "end p from range(0, 9)"))
    assert sorted(f.partition for f in t.snapshot().files) == [
        "p=__HIVE_DEFAULT_PARTITION__", "p=x"]
    result = sync(t)
    assert result.blocked is None
    ice = StaticTable.from_metadata(result.metadata_file)
    assert _rows(ice.scan().to_arrow()) == _rows(t.to_arrow())
    assert [s.spec_id for s in ice.metadata.partition_specs] == [0, UNPARTITIONED_SPEC_ID]
    for flt, condition in [(EqualTo("p", ""), "p = ''"), (IsNull("p"), "p is null"),
                           (EqualTo("p", "x"), "p = 'x'")]:
        scan = ice.scan(row_filter=flt)
        expected = _spark_rows(t.read().filter(condition))
        assert len(expected) == 3 and _rows(scan.to_arrow()) == expected
    planned = {flt: [(task.file.spec_id, task.file.partition)
                     for task in ice.scan(row_filter=flt).plan_files()]
               for flt in (EqualTo("p", "x"), EqualTo("p", ""), IsNull("p"))}
    # 'x' by its partition value; the two-valued file by its column bounds and null count
    assert [(s, tuple(v)) for s, v in planned[EqualTo("p", "x")]] == [(0, ("x",))]
    assert [s for s, _ in planned[EqualTo("p", "")]] == [UNPARTITIONED_SPEC_ID]
    assert [s for s, _ in planned[IsNull("p")]] == [UNPARTITIONED_SPEC_ID]
