"""Schema on write: an incoming schema reconciled with the table's, by name."""

from __future__ import annotations

import pytest

from evonb.errors import WriteSchemaError
from evonb.schema.schema import Schema
from evonb.table.write_schema import match_ids, reconcile

TABLE = Schema.from_ddl("id bigint not null, amount int, info struct<a: string>")


def test_new_columns_are_added_nullable_and_narrower_types_widen_the_table():
    incoming = Schema.from_ddl("ID bigint, amount bigint, info struct<a: string, b: int>, x date")
    new = reconcile(TABLE, incoming).apply()
    assert new.to_ddl() == "id bigint NOT NULL, amount bigint, info struct<a:string,b:int>, x date"
    assert new.find_id("amount") == TABLE.find_id("amount")


def test_matching_data_needs_no_change_and_missing_nullable_columns_are_filled():
    assert not reconcile(TABLE, Schema.from_ddl("id bigint, amount int, info struct<a: string>"))
    assert not reconcile(TABLE, Schema.from_ddl("id bigint"))


@pytest.mark.parametrize(("ddl", "options", "words"), [
    ("amount int", {}, "lacks required column 'id'"),
    ("id bigint, amount int, info struct<a: string>, x int", {"add_columns": False},
     "Incoming column 'x' (int) is not in the table"),
    ("id bigint", {"fill_missing": False}, "lacks column 'amount'"),
    ("id bigint, amount bigint", {"widen": False}, "evonb.write.type_widening is 'error'"),
    ("id bigint, info string", {}, "info: table has struct<a:string>, data has string"),
    ("id bigint, info string", {}, "the data must bring a struct here"),
    ("id bigint, amount struct<a: int>", {},
     "the data's amount must be int, or a type that widens to it"),
])
def test_data_that_cannot_be_written_is_refused_naming_the_column(ddl, options, words):
    with pytest.raises(WriteSchemaError) as err:
        reconcile(TABLE, Schema.from_ddl(ddl), **options)
    assert words in str(err.value)


def test_a_protected_key_column_cannot_change_type():
    with pytest.raises(WriteSchemaError,
                       match="key, partition and precombine columns cannot change type"):
        reconcile(Schema.from_ddl("id int"), Schema.from_ddl("id bigint"),
                  protected_ids=frozenset({Schema.from_ddl("id int").find_id("id")}))


def test_match_ids_gives_incoming_fields_the_ids_of_the_table_fields_they_write():
    table = TABLE.replace(fields=TABLE.fields[::-1])  # IDs no longer in name order
    incoming = Schema.from_ddl("amount int, info struct<a: string>, id bigint")
    matched = match_ids(incoming, table)
    assert [matched.find_id(p) for p in ("amount", "info", "info.a", "id")] == [
        TABLE.find_id(p) for p in ("amount", "info", "info.a", "id")]
