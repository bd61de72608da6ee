"""Errors shown to the user: one readable message, carets for DDL, no Spark plan or stack."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from evonb.errors import ColumnNotFoundError, DDLSyntaxError
from evonb.notebook.errors import format_evo_error, format_spark_error, user_errors
from evonb.sql import parse_ddl


def test_ddl_error_keeps_the_caret_under_the_token():
    with pytest.raises(DDLSyntaxError) as info:
        parse_ddl("ALTER TABLE t\nDORP COLUMN x")
    text = format_evo_error(info.value)
    lines = text.splitlines()
    at = lines.index("DORP COLUMN x")
    assert lines[at + 1] == "^"
    assert "line 2, column 1" in text


def test_hint_and_notes_are_included():
    exc = ColumnNotFoundError("nmae", ["name", "id"])
    exc.add_note("in DDL statement 1 of 2")
    text = format_evo_error(exc)
    assert "Column not found: 'nmae'" in text
    assert "did you mean 'name'?" in text
    assert text.endswith("in DDL statement 1 of 2")


class FakeSparkError(Exception):
    pass


def test_spark_error_loses_the_plan_and_the_jvm_stack():
    exc = FakeSparkError(
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `x` cannot be found. SQLSTATE: 42P01; "
        "line 1 pos 14;\n'Project [*]\n+- 'UnresolvedRelation [x], [], false\n\n"
        "JVM stacktrace:\norg.apache.spark.sql.AnalysisException\n\tat org.apache.Foo")
    assert format_spark_error(exc) == (
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `x` cannot be found. SQLSTATE: 42P01; "
        "line 1 pos 14")


def test_spark_parse_error_keeps_its_sql_excerpt():
    exc = FakeSparkError("\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'x'. SQLSTATE: 42601 "
                         "(line 1, pos 14)\n\n== SQL ==\nselect * form x\n--------------^^^\n")
    text = format_spark_error(exc)
    assert text.startswith("[PARSE_SYNTAX_ERROR]")
    assert text.endswith("select * form x\n--------------^^^")


def test_user_errors_turns_evo_errors_into_usage_errors():
    with pytest.raises(UsageError, match="Column not found"), user_errors():
        raise ColumnNotFoundError("x")
    with pytest.raises(KeyError), user_errors():
        raise KeyError("a bug stays a bug")


def test_an_evonb_check_in_a_spark_error_is_shown_after_sparks_lines():
    exc = FakeSparkError(
        "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:/t/a.avro. "
        "SQLSTATE: KD001\n\nJVM stacktrace:\norg.apache.spark.SparkException: ...\n"
        "\tat org.apache.Foo\nCaused by: java.lang.IllegalArgumentException: evonb: the log "
        "block reader cannot read column x of Avro type ENUM; set evonb.mor.read.jvm=false\n"
        "\tat org.evonb.Bar")
    assert format_spark_error(exc) == (
        "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:/t/a.avro. "
        "SQLSTATE: KD001\nevonb: the log block reader cannot read column x of Avro type ENUM; "
        "set evonb.mor.read.jvm=false")


@pytest.mark.spark
def test_a_check_failing_inside_the_jvm_is_one_readable_message(ip, evo, spark, warehouse):
    """A merge-on-read base file replaced in place by a longer one: evonb's Parquet source
    stops the read, and ``%evo read`` (with the Spark engine) shows its message, not py4j's
    report and the JVM stack."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import evonb
    from evonb.spark import position_source

    assert position_source.available(spark)
    t = evonb.create_table(warehouse / "m", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    t.write(spark.range(0, 50, 1, 1).selectExpr("id", "concat('b', id) AS v", "1L AS ts"),
            "insert")
    t.write(spark.createDataFrame([(3, "u", 2)], "id long, v string, ts long"), "upsert")
    assert sorted(r.v for r in t.read().collect() if r.id == 3) == ["u"]
    (base,) = t.snapshot().files
    path = t.root / base.path
    rows = pq.read_table(path)
    pq.write_table(pa.concat_tables([rows, rows]), path)  # 100 rows where 50 were written

    with pytest.raises(Exception) as raw:
        t.read().collect()
    want = (f"evonb: base file {path.name} has a row at position 50, past the 50 rows "
            "planned; read the table again")
    assert format_spark_error(raw.value) == want
    ip.run_line_magic("config", "Evo.engine = 'spark'")
    with pytest.raises(UsageError) as shown:
        evo("read m")
    assert str(shown.value) == want
