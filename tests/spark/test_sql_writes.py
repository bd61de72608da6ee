"""evonb.spark.sql_writes: statements split into their parts, Spark's store-assignment rule,
and statements run on a table without the notebook."""

from __future__ import annotations

import pytest

import evonb
from evonb.errors import SQLStatementError
from evonb.spark.sql_writes import assignable, execute, parse, target


def test_insert_parts():
    p = parse("INSERT INTO `t` (a, `b`) SELECT x, y FROM s WHERE (x > 1)")
    assert (p.kind, p.table, p.columns, p.query) == ("INSERT", "t", ["a", "b"],
                                                    "SELECT x, y FROM s WHERE (x > 1)")
    p = parse("insert overwrite table t (select 1, 2)")
    assert p.overwrite and p.columns is None and p.query == "(select 1, 2)"
    p = parse("WITH n AS (SELECT 1 AS a) INSERT INTO t BY NAME SELECT * FROM n")
    assert p.by_name and p.query == "WITH n AS (SELECT 1 AS a) SELECT * FROM n"


def test_update_and_delete_parts_skip_strings_comments_and_nesting():
    p = parse("UPDATE t AS x SET a = 'where, b = 1', b = CASE WHEN c = 1 THEN 2 END, "
              "c = f(1, 2) -- where\nWHERE a = ',' AND b IN (1, 2)")
    assert p.alias == "x"
    assert [(a.column, a.expr) for a in p.assigns] == [
        ("a", "'where, b = 1'"), ("b", "CASE WHEN c = 1 THEN 2 END"), ("c", "f(1, 2)")]
    assert p.condition == "a = ',' AND b IN (1, 2)"
    p = parse("delete from t /* all */")
    assert (p.kind, p.alias, p.condition) == ("DELETE", None, None)


def test_merge_parts():
    p = parse("MERGE INTO t USING (SELECT * FROM s WHERE k = 1) AS src ON t.k = src.k "
              "WHEN MATCHED AND src.op = 'd' THEN DELETE "
              "WHEN MATCHED THEN UPDATE SET * "
              "WHEN NOT MATCHED BY TARGET THEN INSERT (k, v) VALUES (src.k, coalesce(src.v, 0)) "
              "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = CASE WHEN v > 0 THEN 0 END")
    assert (p.table, p.alias, p.source_alias) == ("t", None, "src")
    assert p.source == "(SELECT * FROM s WHERE k = 1)" and p.condition == "t.k = src.k"
    assert [(c.match, c.condition, c.action.kind, c.action.star) for c in p.clauses] == [
        ("matched", "src.op = 'd'", "delete", False), ("matched", None, "update", True),
        ("not_matched", None, "insert", False), ("not_matched_by_source", None, "update",
                                                 False)]
    assert p.clauses[2].action.values == ["src.k", "coalesce(src.v, 0)"]
    assert p.clauses[3].action.assigns[0].expr == "CASE WHEN v > 0 THEN 0 END"


@pytest.mark.parametrize("bad, says", [
    ("MERGE INTO t USING (SELECT 1) ON t.a = 1 WHEN MATCHED THEN DELETE", "needs an alias"),
    ("MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN INSERT *", "only allowed in WHEN NOT"),
    ("MERGE INTO t USING s ON t.a = s.a", "at least one WHEN"),
    ("INSERT INTO db.t VALUES (1)", "Qualified names"),
    ("INSERT INTO t PARTITION (p = 1) VALUES (1)", "PARTITION clause"),
    ("TRUNCATE TABLE t", "Not a statement"),
])
def test_statements_it_does_not_run_are_refused_by_name(bad, says):
    with pytest.raises(SQLStatementError, match=says):
        parse(bad)
    assert target(bad) is None


def test_a_merge_source_may_be_a_qualified_spark_table():
    p = parse("MERGE INTO t USING db.`my src` ON t.k = `my src`.k WHEN MATCHED THEN DELETE")
    assert (p.source, p.source_alias) == ("`db`.`my src`", "my src")


def test_target_names_the_statement_and_table():
    assert target("DROP TABLE IF EXISTS t PURGE") == ("DROP", "t")
    assert target("merge into `my t` s using u on 1 = 1 when matched then delete") == (
        "MERGE", "my t")


def test_assignable_follows_ansi_store_assignment():
    from pyspark.sql import types as T

    assert assignable(T.IntegerType(), T.DoubleType())
    assert assignable(T.DecimalType(2, 1), T.LongType())
    assert assignable(T.LongType(), T.StringType())
    assert assignable(T.DateType(), T.TimestampType())
    assert assignable(T.NullType(), T.BooleanType())
    assert assignable(T.ArrayType(T.IntegerType()), T.ArrayType(T.LongType()))
    assert not assignable(T.StringType(), T.IntegerType())
    assert not assignable(T.DoubleType(), T.BooleanType())
    assert not assignable(T.DateType(), T.IntegerType())
    assert not assignable(T.StructType([T.StructField("a", T.IntegerType())]),
                          T.StructType([]))


@pytest.mark.spark
def test_execute_on_a_table_and_its_guards(spark, warehouse):
    t = evonb.create_table(warehouse / "kv", "k bigint not null, v string", primary_key="k",
                           name="kv")
    result = execute(t, "INSERT INTO kv VALUES (1, 'a'), (2, 'b');")
    assert (result.mode, result.inserted, len(t.history())) == ("insert", 2, 2)
    result = execute(t, "UPDATE kv SET v = upper(v) WHERE k = 2")
    assert (result.mode, result.updated) == ("upsert", 1)
    assert sorted(tuple(r) for r in t.read().collect()) == [(1, "a"), (2, "B")]
    with pytest.raises(SQLStatementError, match="changes 'other', not the table 'kv'"):
        execute(t, "DELETE FROM other")
    with pytest.raises(SQLStatementError, match="cannot store a string in column 'k'"):
        execute(t, "INSERT INTO kv SELECT 'x', 'y'")
    assert len(t.history()) == 3
    result = execute(t, "DROP TABLE kv PURGE")
    assert result.mode == "drop" and not (warehouse / "kv").exists()


@pytest.mark.spark
def test_a_statement_that_would_give_two_rows_one_key_is_refused(spark, warehouse):
    t = evonb.create_table(warehouse / "keys", "k bigint not null, v string", primary_key="k",
                           name="keys")
    execute(t, "INSERT INTO keys VALUES (1, 'a'), (2, 'b')")
    before = len(t.history())
    with pytest.raises(SQLStatementError, match=r"2 rows of 'keys' with the record key k = 2"):
        execute(t, "UPDATE keys SET k = 2 WHERE k = 1")
    with pytest.raises(SQLStatementError, match="record key k = 1"):
        execute(t, "MERGE INTO keys USING (SELECT 2 AS id) s ON keys.k = s.id "
                   "WHEN MATCHED THEN UPDATE SET k = 1")
    assert len(t.history()) == before
    assert sorted(tuple(r) for r in t.read().collect()) == [(1, "a"), (2, "b")]
    # A key moved to a value no other row holds is written (the whole table, exactly).
    result = execute(t, "UPDATE keys SET k = 3 WHERE k = 1")
    assert (result.mode, result.updated) == ("overwrite", 1)
    assert sorted(tuple(r) for r in t.read().collect()) == [(2, "b"), (3, "a")]
    # Two keys swapped in one statement end with one row per key.
    execute(t, "UPDATE keys SET k = CASE k WHEN 2 THEN 3 ELSE 2 END")
    assert sorted(tuple(r) for r in t.read().collect()) == [(2, "a"), (3, "b")]


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_an_insert_of_a_key_the_table_holds_is_refused(spark, warehouse, table_type):
    """An INSERT (or a MERGE whose ON is not the key) of a key a row already holds: two live
    rows of one key, after which every UPDATE of the table was refused. Found by a hostile
    test; now refused before anything is written, unless the table allows such inserts."""
    t = evonb.create_table(warehouse / "dk", "id bigint not null, v int, ts bigint",
                           primary_key="id", precombine="ts", table_type=table_type, name="dk")
    execute(t, "INSERT INTO dk VALUES (1, 10, 1), (2, 20, 1)")
    before = len(t.history())
    with pytest.raises(SQLStatementError, match=r"INSERT would leave 2 rows of 'dk' with the "
                       r"record key id = 1: the table holds a row") as err:
        execute(t, "INSERT INTO dk VALUES (3, 30, 1), (1, 11, 2)")
    assert "UPDATE" in (err.value.hint or "")
    with pytest.raises(SQLStatementError, match="record key id = 2"):
        execute(t, "MERGE INTO dk USING (SELECT 2L AS id, 99 AS v, 5L AS ts) s "
                   "ON dk.v = s.v WHEN NOT MATCHED THEN INSERT *")
    assert len(t.history()) == before
    assert sorted(tuple(r) for r in t.read().collect()) == [(1, 10, 1), (2, 20, 1)]
    assert sorted(r["v"] for r in t.to_arrow().to_pylist()) == [10, 20]
    with pytest.raises(SQLStatementError, match="record key id = 4"):
        execute(t, "INSERT OVERWRITE dk VALUES (4, 1, 1), (4, 2, 1)")
    execute(t, "INSERT INTO dk VALUES (3, 30, 1)")  # a new key goes in
    execute(t, "UPDATE dk SET v = v + 1")  # and UPDATE still works on the table
    assert sorted(tuple(r) for r in t.read().collect()) == [(1, 11, 1), (2, 21, 1), (3, 31, 1)]
    t.set_properties({"evonb.write.insert_duplicates": "allow"})  # as Table.write then does
    execute(t, "INSERT INTO dk VALUES (1, 50, 3)")
    assert sorted(r["v"] for r in t.read().collect() if r["id"] == 1) == [11, 50]


@pytest.mark.spark
def test_a_spark_error_in_a_statement_is_one_message_without_helper_columns(
        spark, warehouse, capfd):
    """A statement naming an unknown column: one evonb error whose suggestions are the
    table's columns (not the statement's ``__evo_*`` helpers), and no JSON record of the JVM
    stack on stderr (PySpark's query-context logger wrote one as the error was raised)."""
    t = evonb.create_table(warehouse / "nz", "id bigint not null, v int", primary_key="id",
                           name="nz")
    execute(t, "INSERT INTO nz VALUES (1, 1)")
    capfd.readouterr()
    with pytest.raises(SQLStatementError, match="nope") as err:
        execute(t, "DELETE FROM nz WHERE nope = 1")
    assert "__evo_" not in str(err.value) and "`id`, `v`" in str(err.value)
    out, errors = capfd.readouterr()
    assert "SQLQueryContextLogger" not in errors and "AnalysisException" not in errors
    assert "org.apache.spark" not in out + errors
    assert len(t.history()) == 2


@pytest.mark.spark
@pytest.mark.parametrize("key", ["k", None])
def test_merge_insert_gives_left_out_columns_their_write_defaults(spark, warehouse, key):
    t = evonb.create_table(warehouse / "kv", "k bigint not null, v string", primary_key=key,
                           name="kv")
    execute(t, "INSERT INTO kv VALUES (1, 'a'), (2, 'b')")
    t.alter("ALTER TABLE kv ADD COLUMNS (color string DEFAULT 'red', n int DEFAULT 7, "
            "note string)")
    t.alter("ALTER TABLE kv ALTER COLUMN color SET DEFAULT 'blue'")
    # The rows as plain Python computes them: old rows read 'red' (the read default), new rows
    # that leave a column out get its write default ('blue', 7) or null (note).
    write_default = {"v": None, "color": "blue", "n": 7, "note": None}
    expected = {1: {"v": "a", "color": "red", "n": 7, "note": None},
                2: {"v": "b", "color": "red", "n": 7, "note": None}}

    def inserted(k, **given):
        expected[k] = {**write_default, **given}

    execute(t, "INSERT INTO kv (k, v) VALUES (3, 'c')")
    inserted(3, v="c")
    result = execute(t, "MERGE INTO kv USING (SELECT * FROM VALUES (2, 'B'), (4, 'd') "
                        "AS s(k, v)) s ON kv.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v "
                        "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, s.v)")
    expected[2]["v"] = "B"
    inserted(4, v="d")
    assert (result.inserted, result.updated) == (1, 1)
    execute(t, "MERGE INTO kv USING (SELECT 5 AS k) s ON kv.k = s.k "
               "WHEN NOT MATCHED AND s.k > 9 THEN INSERT (k, note) VALUES (s.k, 'never') "
               "WHEN NOT MATCHED THEN INSERT (k, n, note) VALUES (s.k, 1, 'x')")
    inserted(5, n=1, note="x")
    execute(t, "MERGE INTO kv USING (SELECT 6 AS k, 'f' AS v, 'green' AS color, 8 AS n, "
               "'y' AS note) s ON kv.k = s.k WHEN NOT MATCHED THEN INSERT *")
    inserted(6, v="f", color="green", n=8, note="y")
    rows = {r["k"]: {c: r[c] for c in ("v", "color", "n", "note")} for r in t.read().collect()}
    assert rows == expected
