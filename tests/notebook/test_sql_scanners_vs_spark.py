"""Differential: the tables evonb's SQL scanners find against the tables Spark's own parser finds.

Queries are built from table names in FROM/JOIN/DELETE positions, separated by what Spark hides
(whitespace with carriage returns, ``--`` comments ended by ``\\r``, ``\\n`` or continued by a
backslash, nested bracketed comments) and with decoy table names only inside comments, strings
(raw ones too) and backquoted column names. Spark's parsed plan names the relations it will
resolve; :func:`evonb.notebook.sqlrefs.rewrite` (which registers the views), the statement
target of :func:`evonb.spark.sql_writes.parse` and :func:`evonb.notebook.sql_writes.written_table`
must name the same ones: a table Spark reads that evonb misses resolves to whatever else has the
name (a stale view of deleted files was found that way).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evonb.notebook.sql_writes import written_table
from evonb.notebook.sqlrefs import rewrite
from evonb.schema.spark_comments import blank_comments
from evonb.spark.sql_writes import parse

TABLES = ("t", "u", "trips")
_RELATION = re.compile(r"UnresolvedRelation \[([^\]]*)\]")

decoy = st.sampled_from((*TABLES, "from", "select", "'", '"', "`", "*/", "/*", "--", ";", "\\"))
comment_text = st.lists(st.one_of(decoy, st.sampled_from([" ", "x", "\t"])), max_size=6).map(
    "".join)


@st.composite
def line_comment(draw: st.DrawFn) -> str:
    body = draw(comment_text).rstrip("\\")
    if draw(st.booleans()):  # a backslash before a line feed continues the comment
        body += "\\\n" + draw(st.sampled_from(TABLES))
    return "--" + body + draw(st.sampled_from(["\n", "\r", "\r\n"]))


@st.composite
def bracket_comment(draw: st.DrawFn) -> str:
    inner = draw(comment_text).replace("*/", "").replace("/*", "")
    if draw(st.booleans()):  # nested: Spark's comment ends at the matching */
        inner += "/* " + draw(st.sampled_from(TABLES)) + " */ " + draw(st.sampled_from(TABLES))
    return "/*" + inner.lstrip("+") + "*/"


hidden = st.lists(st.one_of(st.sampled_from([" ", "\n", "\r", "\t", "\r\n"]), line_comment(),
                            bracket_comment()), min_size=1, max_size=4).map("".join)


@st.composite
def sep(draw: st.DrawFn) -> str:
    """What may stand between two tokens: always something Spark hides, ending in blank."""
    return draw(hidden) + " "


literal = st.one_of(
    st.sampled_from(TABLES).map(lambda n: f"'{n} -- /*'"),
    st.sampled_from(TABLES).map(lambda n: f"r'{n} --\\'"),  # raw: the backslash escapes nothing
    st.sampled_from(TABLES).map(lambda n: f"\"{n}\"\" /* \""),
    st.sampled_from(TABLES).map(lambda n: f"`{n}--x`"),
    st.integers(0, 9).map(str),
)


@st.composite
def select_query(draw: st.DrawFn) -> tuple[str, set[str]]:
    first, second = draw(st.sampled_from(TABLES)), draw(st.sampled_from(TABLES))
    s = lambda: draw(sep())  # noqa: E731
    query = f"select{s()}{draw(literal)}{s()}from{s()}{first}"
    read = {first}
    if draw(st.booleans()):
        query += f"{s()}join{s()}{second}{s()}on{s()}{draw(literal)}{s()}={s()}{draw(literal)}"
        read.add(second)
    return query + draw(st.sampled_from(["", " ", s()])), read


@st.composite
def delete_query(draw: st.DrawFn) -> tuple[str, str]:
    target = draw(st.sampled_from(TABLES))
    s = lambda: draw(sep())  # noqa: E731
    return f"delete{s()}from{s()}{target}{s()}where{s()}{draw(literal)}{s()}={s()}1", target


def spark_relations(spark, query: str) -> set[str]:
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(query).toString()
    return {name.lower() for name in _RELATION.findall(plan)}


def evonb_reads(query: str) -> set[str]:
    _, refs = rewrite(query, TABLES, lambda ref: ref.name)
    return {ref.name for ref in refs}


@pytest.mark.parametrize("query, tables", [
    ("--limit=\r select * from t", {"t"}),  # the fuzzer's case: \r ends a -- comment
    ("select /* u /* t */ u */ 1 from trips", {"trips"}),
    ("select r'\\' from t --'", {"t"}),
    ("select 1 -- u\\\nfrom u\nfrom t", {"t"}),
    ("select '--' from t", {"t"}),
])
def test_known_cases_match_spark(spark, query: str, tables: set[str]) -> None:
    assert spark_relations(spark, query) == tables
    assert evonb_reads(query) == tables


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=select_query())
def test_tables_read_match_spark(spark, case: tuple[str, set[str]]) -> None:
    query, tables = case
    assert spark_relations(spark, query) == tables, query
    assert evonb_reads(query) == tables, query


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=delete_query())
@example(case=("--x\rdelete from u where 1 = 1", "u"))
def test_changed_table_matches_spark(spark, case: tuple[str, str]) -> None:
    query, target = case
    assert spark_relations(spark, query) == {target}, query
    assert parse(query).table.lower() == target, query
    assert written_table(query, {n: n for n in TABLES}) == target, query


def test_blanking_keeps_offsets_and_line_breaks() -> None:
    query = "select 1 /* a\r\n /* b */ c */ from t -- x\r where '--' = r'\\'"
    blank = blank_comments(query)
    assert len(blank) == len(query)
    assert blank == ("select 1 " + " " * 4 + "\r\n" + " " * 13 + " from t " + " " * 4
                     + "\r where '--' = r'\\'")
