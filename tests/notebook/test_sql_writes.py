"""``%evo sql`` INSERT, UPDATE, DELETE, MERGE and DROP TABLE ... PURGE on evonb tables: one
commit each, the rows read back as a plain-Python model of the statement says, mistakes one
readable error with the table unchanged."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.errors import ColumnNotFoundError, SQLStatementError
from evonb.notebook.sql_writes import Committed

pytestmark = pytest.mark.spark

COLUMNS = "id bigint, name string, fare double, ts bigint, gone string"
ROWS = [(1, "ann", 10.0, 1, "x"), (2, "bob", 20.0, 1, "y"), (3, "cy", 30.0, 1, "z")]


def _evolved(spark, warehouse, table_type: str, *, keyed: bool = True):
    """A table ``rides`` whose history holds a rename (fare -> price) and a drop (gone)."""
    t = evonb.create_table(warehouse / "rides", COLUMNS, name="rides", table_type=table_type,
                           primary_key="id" if keyed else None,
                           precombine="ts" if keyed else None)
    t.write(spark.createDataFrame(ROWS, COLUMNS), "upsert" if keyed else "insert")
    t.alter("ALTER TABLE rides RENAME COLUMN fare TO price")
    t.alter("ALTER TABLE rides DROP COLUMN gone")
    return evonb.open_table(t.path)


def _rows(table) -> list[tuple]:
    """The rows of the latest snapshot, read with the Arrow reader (the same rows as Spark's
    read, as the reader's differential tests check; faster here)."""
    data = evonb.open_table(table.path).to_arrow()
    return sorted(tuple(r.values()) for r in data.to_pylist())


def _state(table) -> tuple:
    fresh = evonb.open_table(table.path)
    return [c.instant for c in fresh.history()], _rows(table)


def _run(evo, table, statement: str, cell: bool = False) -> Committed:
    """Run ``statement``; it must add exactly one commit."""
    before = len(evonb.open_table(table.path).history())
    shown = evo("", statement) if cell else evo(f"sql {statement}")
    assert isinstance(shown, Committed)
    assert len(evonb.open_table(table.path).history()) == before + 1, statement
    assert shown.result.commit is not None
    assert shown.result.commit.instant == evonb.open_table(table.path).history()[-1].instant
    return shown


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_each_statement_is_one_commit_with_the_rows_it_says(evo, spark, warehouse, table_type):
    t = _evolved(spark, warehouse, table_type)
    model = {r[0]: list(r[:4]) for r in ROWS}  # id -> [id, name, price, ts]

    def check() -> None:
        assert _rows(t) == sorted(tuple(v) for v in model.values())

    shown = _run(evo, t, "INSERT INTO rides VALUES (4, 'dee', 40, 1), (5, 'eve', 50.5, 2)")
    model[4], model[5] = [4, "dee", 40.0, 1], [5, "eve", 50.5, 2]
    check()
    assert shown.result.counts() == {"inserted": 2, "updated": 0, "deleted": 0}
    assert "rows inserted" in shown._repr_html_() and shown.result.commit.instant in repr(shown)

    _run(evo, t, "insert into rides (name, id) select upper(name), id + 10 from rides "
                 "where price > 35", cell=True)
    for k in (4, 5):
        model[k + 10] = [k + 10, model[k][1].upper(), None, None]
    check()

    shown = _run(evo, t, "UPDATE rides r SET price = r.price * 2, name = concat(name, '!') "
                         "WHERE id IN (1, 2)")
    for k in (1, 2):
        model[k][2] *= 2
        model[k][1] += "!"
    check()
    assert (shown.result.updated, shown.result.mode) == (2, "upsert")

    shown = _run(evo, t, "DELETE FROM rides WHERE price IS NULL OR id = 3")
    for k in (3, 14, 15):
        del model[k]
    check()
    assert (shown.result.deleted, shown.result.mode) == (3, "delete")

    shown = _run(evo, t, """MERGE INTO rides AS t
        USING (SELECT * FROM VALUES (1, 'ANN', 7.0), (2, 'BOB', 8.0), (9, 'ivy', 9.0)
               AS v(id, name, price)) AS s
        ON t.id = s.id
        WHEN MATCHED AND s.id = 2 THEN DELETE
        WHEN MATCHED THEN UPDATE SET name = s.name, price = s.price
        WHEN NOT MATCHED THEN INSERT (id, name, price, ts) VALUES (s.id, s.name, s.price, 0)
        WHEN NOT MATCHED BY SOURCE AND t.id = 5 THEN UPDATE SET ts = t.ts + 1""")
    model[1][1:3] = ["ANN", 7.0]
    del model[2]
    model[9] = [9, "ivy", 9.0, 0]
    model[5][3] += 1
    check()
    assert shown.result.counts() == {"inserted": 1, "updated": 2, "deleted": 1}

    operations = [c.operation for c in evonb.open_table(t.path).history()]
    assert operations[-5:] == ["insert", "insert", "upsert", "delete", "overwrite"]
    if table_type == "cow":
        # The precombine column lowered: an upsert would keep the stored row; the statement
        # still does what it says (rewriting the table).
        shown = _run(evo, t, "UPDATE rides SET ts = -5 WHERE id = 5")
        model[5][3] = -5
        check()
        assert shown.result.mode == "overwrite"


def test_a_keyless_table_is_exact_too(evo, spark, warehouse):
    t = _evolved(spark, warehouse, "cow", keyed=False)
    t.write(spark.createDataFrame([(1, "ann", 10.0, 1)], "id bigint, name string, "
                                  "price double, ts bigint"), "insert")  # a duplicate row
    model = [[1, "ann", 10.0, 1], [1, "ann", 10.0, 1], [2, "bob", 20.0, 1],
             [3, "cy", 30.0, 1]]

    def check() -> None:
        assert _rows(t) == sorted(tuple(v) for v in model)

    check()
    shown = _run(evo, t, "UPDATE rides SET price = price + 1 WHERE id = 1")
    for v in model:
        if v[0] == 1:
            v[2] += 1
    check()
    assert (shown.result.updated, shown.result.mode) == (2, "overwrite")
    _run(evo, t, "DELETE FROM rides WHERE name = 'bob'")
    model = [v for v in model if v[1] != "bob"]
    check()
    _run(evo, t, "MERGE INTO rides t USING (SELECT 3 AS id, 'CY' AS name, 0D AS price, "
                 "0L AS ts) s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET name = s.name "
                 "WHEN NOT MATCHED THEN INSERT *")
    model = [[v[0], "CY" if v[0] == 3 else v[1], v[2], v[3]] for v in model]
    check()
    _run(evo, t, "INSERT OVERWRITE rides SELECT id, name, price, ts FROM rides WHERE id = 3")
    model = [v for v in model if v[0] == 3]
    check()


def test_a_merge_reading_another_table_as_of_a_commit(evo, spark, warehouse):
    t = _evolved(spark, warehouse, "cow")
    first = t.history()[1].instant
    _run(evo, t, "DELETE FROM rides WHERE id > 1")
    # As of that commit the table had ``fare`` (renamed to ``price`` since): its schema then.
    _run(evo, t, f"MERGE INTO rides t USING rides AS OF '{first}' old ON t.id = old.id "
                 "WHEN NOT MATCHED THEN INSERT (id, name, price, ts) "
                 "VALUES (old.id, old.name, old.fare, old.ts)")
    assert _rows(t) == [tuple(r[:4]) for r in ROWS]


HOSTILE = [
    ("UPDATE rides SET nmae = 'x'", ColumnNotFoundError, "did you mean 'name'?"),
    ("DELETE FROM rides WHERE nope = 1", SQLStatementError, "UNRESOLVED_COLUMN"),
    ("UPDATE rides SET price = 'cheap'", SQLStatementError,
     "cannot store a string in column 'price' of type double"),
    ("INSERT INTO rides VALUES (7, 'x', 1.0)", SQLStatementError,
     "needs one value per column"),
    ("INSERT INTO rides (id, price) VALUES (7, date'2026-01-01')", SQLStatementError,
     "cannot store a date"),
    ("UPDATE rides SET ts = 1e30 WHERE id = 1", SQLStatementError, "CAST_OVERFLOW"),
    ("MERGE INTO rides t USING (SELECT 1 AS id, 1e30 AS ts) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET ts = s.ts", SQLStatementError, "CAST_OVERFLOW"),
    ("DELETE FORM rides WHERE id = 1", SQLStatementError, "PARSE_SYNTAX_ERROR"),
    ("UPDATE rides SET price = WHERE id = 1", SQLStatementError, "PARSE_SYNTAX_ERROR"),
    ("MERGE INTO rides t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET price = 0", SQLStatementError,
     "MERGE_CARDINALITY_VIOLATION"),
    ("INSERT INTO rides SELECT id, name, price, ts FROM nowhere", SQLStatementError,
     "TABLE_OR_VIEW_NOT_FOUND"),
    ("DROP TABLE rides", SQLStatementError, "add PURGE"),
]


def test_mistakes_are_one_readable_error_and_change_nothing(evo, spark, warehouse, ip, capsys):
    t = _evolved(spark, warehouse, "mor")
    before = _state(t)
    for statement, error, says in HOSTILE:
        with pytest.raises(UsageError) as info:
            evo(f"sql {statement}")
        message, cause = str(info.value), info.value.__context__
        assert type(cause) is error, (statement, cause)
        assert says in message, (statement, message)
        assert "JVM stacktrace" not in message and "\tat org.apache" not in message
        assert _state(t) == before, statement
    ip.run_cell("%evo sql UPDATE rides SET price = 'cheap'")
    text = "".join(capsys.readouterr())
    assert "cannot store a string" in text and "Traceback" not in text


def test_drop_table_purge_removes_the_folder(evo, spark, warehouse):
    t = _evolved(spark, warehouse, "cow")
    shown = evo("sql DROP TABLE rides PURGE")
    assert shown.result.mode == "drop" and "dropped" in repr(shown)
    assert not (warehouse / "rides").exists()
    with pytest.raises(UsageError, match="No table 'rides'"):
        evo("read rides")
    del t


def test_a_statement_that_changes_no_row_makes_no_commit(evo, spark, warehouse, ip):
    t = _evolved(spark, warehouse, "cow")
    before = _state(t)
    shown = evo("delete from rides where id = 99")  # the first word alone means sql
    assert shown.result.commit is None and shown.result.deleted == 0
    assert "no row changed" in repr(shown)
    shown = evo("sql --to outcome", "UPDATE rides\nSET name = 'x'\nWHERE id > 99")
    assert ip.user_ns["outcome"] is shown.result and shown.result.updated == 0
    assert _state(t) == before
