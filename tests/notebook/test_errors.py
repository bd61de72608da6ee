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
