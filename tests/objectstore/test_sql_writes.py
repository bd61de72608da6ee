"""``%evo sql`` on a table in a bucket: SELECT, INSERT, UPDATE, DELETE, MERGE and DROP TABLE
... PURGE run as on local disk (Spark evaluates the statement over the table's Python data
source; the write is evonb's connector-free write). Each statement is one commit with exactly
the rows it says; a bad statement leaves the table as it was."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.errors import ColumnNotFoundError, SQLStatementError
from evonb.notebook.sql_writes import Committed
from evonb.spark.sql_writes import execute
from evonb.table.check import check_table
from tests.notebook.conftest import evo, ip  # noqa: F401  (the magics' fixtures)
from tests.objectstore.conftest import keys

pytestmark = pytest.mark.spark

COLUMNS = "id bigint not null, name string, fare double, city string, ts bigint"

STATEMENTS = [
    "INSERT INTO rides VALUES (1, 'ann', 10.0, 'paris', 1), (2, 'bob', 20.0, 'oslo', 1), "
    "(3, 'cy', 30.0, 'paris', 1), (4, 'di', 40.0, 'rome', 1)",
    "UPDATE rides SET fare = fare * 2, ts = 2 WHERE city = 'paris'",
    "DELETE FROM rides WHERE id = 2",
    "MERGE INTO rides t USING (SELECT 4L AS id, 'dee' AS name, 44.0 AS fare, 'rome' AS city, "
    "3L AS ts UNION ALL SELECT 9L, 'eve', 90.0, 'oslo', 3L) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "ALTER TABLE rides RENAME COLUMN fare TO price",
    "UPDATE rides SET price = price + 1 WHERE id > 3",
    "INSERT OVERWRITE rides SELECT id, name, price, city, ts FROM rides WHERE id <> 9",
]


PARIS = [(1, "ann", 20.0, "paris", 2), (3, "cy", 60.0, "paris", 2)]
EXPECTED = [  # (the operation committed, the rows after the statement)
    ("insert", [(1, "ann", 10.0, "paris", 1), (2, "bob", 20.0, "oslo", 1),
                (3, "cy", 30.0, "paris", 1), (4, "di", 40.0, "rome", 1)]),
    ("upsert", [PARIS[0], (2, "bob", 20.0, "oslo", 1), PARIS[1], (4, "di", 40.0, "rome", 1)]),
    ("delete", [PARIS[0], PARIS[1], (4, "di", 40.0, "rome", 1)]),
    ("upsert", [*PARIS, (4, "dee", 44.0, "rome", 3), (9, "eve", 90.0, "oslo", 3)]),
    ("alter", [*PARIS, (4, "dee", 44.0, "rome", 3), (9, "eve", 90.0, "oslo", 3)]),
    ("upsert", [*PARIS, (4, "dee", 45.0, "rome", 3), (9, "eve", 91.0, "oslo", 3)]),
    ("overwrite", [*PARIS, (4, "dee", 45.0, "rome", 3)]),
]


def _rows(table: Any) -> list[tuple[Any, ...]]:
    """The rows of the latest snapshot, through Spark (the bucket's Python data source)."""
    return sorted(tuple(r) for r in table.read().collect())


def _arrow_rows(table: Any) -> list[tuple[Any, ...]]:
    """The same through the JVM-free reader (faster; the two are compared at the end)."""
    return sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_sql_statements_on_a_table_in_a_bucket_do_what_they_say(
        spark, bucket: str, s3_client, table_type: str) -> None:  # type: ignore[no-untyped-def]
    """Each statement is one commit of the operation it implies, with the rows it says;
    Spark and the JVM-free reader agree on the result. (The statements' semantics against a
    plain-Python model, on local disk, are tests/notebook/test_sql_writes.py's.)"""
    where = f"s3://{bucket}/rides"
    table = evonb.create_table(where, COLUMNS, name="rides", table_type=table_type,
                               primary_key="id", precombine="ts", partition_by="city")
    for statement, (mode, rows) in zip(STATEMENTS, EXPECTED, strict=True):
        if statement.startswith("ALTER"):
            table.alter(statement)
            assert _arrow_rows(table) == rows
            continue
        result = execute(table, statement, name="rides")
        assert result.commit is not None and result.mode == mode, statement
        assert result.commit.instant == evonb.open_table(where).history()[-1].instant
        assert _arrow_rows(table) == rows, statement
        if table_type == "mor" and mode == "upsert":  # changes by key are log blocks
            assert table.snapshot().logs, statement
    assert _rows(table) == EXPECTED[-1][1]
    assert table.read().columns == ["id", "name", "price", "city", "ts"]
    assert len(evonb.open_table(where).history()) == 1 + len(STATEMENTS)
    files = table.snapshot().files
    assert {f"rides/{f.path}" for f in files} <= set(keys(s3_client, bucket, "rides/"))
    assert check_table(where).ok


def test_evo_sql_reads_and_writes_a_table_created_at_a_bucket_location(
        ip, evo, spark, bucket: str) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    where = f"s3://{bucket}/trips"
    evo("", f"CREATE TABLE trips ({COLUMNS}) PARTITIONED BY (city) LOCATION '{where}' "
            "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', type = 'mor')")
    shown = evo("sql INSERT INTO trips VALUES (1, 'ann', 10.0, 'paris', 1), "
                "(2, 'bob', 20.0, 'oslo', 1)")
    assert isinstance(shown, Committed) and shown.result.mode == "insert"
    shown = evo("sql UPDATE trips SET fare = 15.0, ts = 2 WHERE name = 'ann'")
    assert isinstance(shown, Committed) and shown.result.mode == "upsert"
    evo("sql --to picked SELECT id, fare FROM trips WHERE city = 'paris'")
    assert [tuple(r) for r in ip.user_ns["picked"].collect()] == [(1, 15.0)]
    table = evonb.open_table(where)
    assert table.config.table_type == "mor"
    assert sorted(tuple(r) for r in table.read().select("id", "fare", "ts").collect()) == [
        (1, 15.0, 2), (2, 20.0, 1)]
    assert len(table.snapshot().logs) == 1  # the update is a log block in the bucket

    history = [c.instant for c in table.history()]
    with pytest.raises(UsageError, match="nope") as bad:
        evo("sql UPDATE trips SET nope = 1")
    assert "Traceback" not in str(bad.value)
    assert [c.instant for c in evonb.open_table(where).history()] == history
    assert check_table(where).ok


def test_a_bad_statement_leaves_the_table_in_the_bucket_unchanged(spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    t = evonb.create_table(f"s3://{bucket}/rides", COLUMNS, name="rides", primary_key="id")
    execute(t, "INSERT INTO rides VALUES (1, 'ann', 10.0, 'paris', 1)")
    before = [c.instant for c in t.history()], _rows(t)
    with pytest.raises(ColumnNotFoundError):
        execute(t, "UPDATE rides SET nmae = 'x'")
    with pytest.raises(SQLStatementError, match="cannot store"):
        execute(t, "INSERT INTO rides VALUES (2, 'bob', array(1), 'oslo', 1)")
    with pytest.raises(SQLStatementError, match="PURGE"):
        execute(t, "DROP TABLE rides")
    fresh = evonb.open_table(f"s3://{bucket}/rides")
    assert ([c.instant for c in fresh.history()], _rows(fresh)) == before
    assert check_table(f"s3://{bucket}/rides").ok
