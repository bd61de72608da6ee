"""Finding evonb tables and AS OF clauses in Spark SQL."""

from __future__ import annotations

from evonb.notebook.sqlrefs import TableRef, rewrite, tokens


def view(ref: TableRef) -> str:
    return f"{ref.name}__as_of_{ref.as_of}"


def test_plain_mentions_are_found_and_left_alone():
    query = "select t.a, count(*) from trips t join Rides r on t.id = r.id group by t.a"
    out, refs = rewrite(query, ["trips", "rides"], view)
    assert out == query
    assert refs == [TableRef("trips"), TableRef("rides")]


def test_as_of_becomes_a_view_aliased_to_the_table_name():
    out, refs = rewrite("select * from trips as of '20261122101500000' where fare > 1",
                        ["trips"], view)
    assert out == ("select * from `trips__as_of_20261122101500000` AS `trips` where fare > 1")
    assert refs == [TableRef("trips", "20261122101500000")]


def test_as_of_keeps_an_explicit_alias_and_reads_number_and_timestamp_forms():
    out, _ = rewrite("select * from trips TIMESTAMP AS OF 20261122101500000 t1 join trips as of "
                     "'@0' as t0 on t0.id = t1.id", ["trips"], view)
    assert out == ("select * from `trips__as_of_20261122101500000` t1 join "
                   "`trips__as_of_@0` as t0 on t0.id = t1.id")


def test_strings_comments_backquotes_and_qualified_names_are_not_tables():
    query = ("select 'trips as of x' as s, `trips` from db.trips -- trips\n"
             "/* trips */ where trips.x = 1")
    out, refs = rewrite(query, ["trips"], view)
    assert out == query
    assert refs == [TableRef("trips")]  # the backquoted column name only


def test_tokens_skip_whitespace_and_comments():
    kinds = [t.kind for t in tokens("select 1 -- c\n, 'a''b' /* x */ `q`")]
    assert kinds == ["word", "number", "other", "str", "quoted"]
    assert tokens("'a''b'")[0].value == "a'b"
