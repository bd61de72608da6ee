"""Physical column names: kept through renames, new on a drop and re-add of a name and on a
type change Spark cannot read natively, never handed out twice at one level."""

from __future__ import annotations

from evonb.schema.evolution import SchemaUpdate
from evonb.schema.schema import Schema
from evonb.schema.type_text import parse_type
from evonb.schema.types import BIGINT, DATE, DOUBLE, INT, STRING, TIMESTAMP_NTZ, DecimalType
from evonb.table.layout import (
    META_COMMIT_TIME,
    Layout,
    derive_layout,
    keeps_physical_name,
    natively_readable,
    sanitize,
)


def _next(schema: Schema, layout: Layout, change) -> tuple[Schema, Layout]:
    new = change(SchemaUpdate(schema)).apply(version_id="20260101000000001")
    return new, derive_layout(new, (schema, layout))


def test_first_names_are_sanitized_business_names():
    schema = Schema.from_ddl("`order id` bigint, `_evo_commit_time` string, v string")
    layout = derive_layout(schema)
    assert [layout.name(i) for i in schema.field_ids()[:3]] == [
        "order_id", f"{META_COMMIT_TIME}__2", "v"]
    assert sanitize("a.b-c") == "a_b_c" and sanitize("") == "col"


def test_a_rename_keeps_the_name_and_a_re_added_name_gets_a_fresh_one():
    s0 = Schema.from_ddl("id bigint, v string")
    l0 = derive_layout(s0)
    s1, l1 = _next(s0, l0, lambda u: u.rename_column("v", "w"))
    assert l1.name(s1.find_id("w")) == "v"
    s2, l2 = _next(s1, l1, lambda u: u.drop_column("w"))
    s3, l3 = _next(s2, l2, lambda u: u.add_column("v", STRING))
    new_id = s3.find_id("v")
    assert new_id != s0.find_id("v") and l3.name(new_id) == f"v__{new_id}"
    assert Layout.from_dict(l3.to_dict()) == l3


def test_a_type_change_spark_cannot_widen_starts_a_new_generation():
    s0 = Schema.from_ddl("id int, amount int")
    l0 = derive_layout(s0)
    s1, l1 = _next(s0, l0, lambda u: u.update_column_type("amount", BIGINT))
    assert l1.name(s1.find_id("amount")) == "amount"  # read natively as bigint
    s2, l2 = _next(s1, l1, lambda u: u.update_column_type("amount", DOUBLE))
    amount = s2.find_id("amount")
    assert l2.name(amount) == f"amount__{amount}"  # bigint is cast to double


def test_native_reads_follow_what_spark_widens():
    assert natively_readable(INT, BIGINT) and natively_readable(INT, DOUBLE)
    assert not natively_readable(BIGINT, INT) and not natively_readable(BIGINT, DOUBLE)
    assert natively_readable(DATE, TIMESTAMP_NTZ)
    assert natively_readable(DecimalType(5, 2), DecimalType(7, 3))
    assert not natively_readable(DecimalType(5, 2), DecimalType(6, 1))
    # Spark's vectorized reader takes a Parquet INT32 as a decimal of 10 integer digits or
    # more, an INT64 of 20 or more, whatever the values (tests/spark/test_native_widening.py)
    def native(a: str, b: str) -> bool:
        return natively_readable(parse_type(a), parse_type(b))

    assert native("tinyint", "decimal(10,0)") and native("int", "decimal(12,2)")
    assert not native("tinyint", "decimal(5,2)") and not native("smallint", "decimal(9,0)")
    assert not native("bigint", "decimal(19,0)") and native("bigint", "decimal(20,0)")


def test_an_integer_to_a_decimal_spark_cannot_read_natively_starts_a_generation():
    """Found by the type-chain model: ``tinyint -> decimal(5,2)`` kept the physical name, and
    Spark's read of the older files failed (``PARQUET_COLUMN_DATA_TYPE_MISMATCH``)."""
    s0 = Schema.from_ddl("id int, v tinyint, w int")
    l0 = derive_layout(s0)
    s1, l1 = _next(s0, l0, lambda u: u.update_column_type("v", DecimalType(5, 2)))
    s2, l2 = _next(s1, l1, lambda u: u.update_column_type("w", DecimalType(10, 0)))
    v, w = s2.find_id("v"), s2.find_id("w")
    assert l2.name(v) == f"v__{v}" and l2.name(w) == "w"


def test_a_date_read_as_a_timestamp_starts_a_new_generation():
    """Spark widens a date to ``timestamp_ntz`` natively but fails the read on a date whose
    midnight no timestamp holds, where ``try_cast`` reads null: the change starts a generation
    (a top-level column, a list element and a map value alike)."""
    s0 = Schema.from_ddl("id int, d date, ds array<date>, dm map<string,date>, n int")
    l0 = derive_layout(s0)
    s1, l1 = s0, l0
    for path in ("d", "ds.element", "dm.value"):
        s1, l1 = _next(s1, l1, lambda u, p=path: u.update_column_type(p, TIMESTAMP_NTZ))
    s1, l1 = _next(s1, l1, lambda u: u.update_column_type("n", BIGINT))
    for name in ("d", "ds", "dm"):
        assert l1.name(s1.find_id(name)) == f"{name}__{s1.find_id(name)}", name
    assert l1.name(s1.find_id("n")) == "n"  # int -> bigint stays native
    assert natively_readable(DATE, TIMESTAMP_NTZ) and not keeps_physical_name(DATE, TIMESTAMP_NTZ)
    assert keeps_physical_name(INT, BIGINT)
