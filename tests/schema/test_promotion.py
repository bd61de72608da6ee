"""Type changes: the whole ALTER COLUMN ... TYPE matrix, decimals, messages and write reconciling.

The expected table is written out here on its own: Hudi's "Y" cells (int -> bigint, float,
double, string, decimal; bigint -> float, double, string, decimal; float -> double, string,
decimal; double -> string, decimal; decimal -> string or a decimal that loses no digits; string
-> date, decimal; date -> string), plus tinyint -> smallint -> int (tinyint and smallint reach what
int reaches), date -> timestamp_ntz and decimal widening. Integral types go to a decimal only
when it holds every value (3, 5, 10, 19 integer digits).
"""

from __future__ import annotations

import itertools

import pytest

from evonb.errors import SchemaEvolutionError, WriteSchemaError
from evonb.schema import Schema, SchemaUpdate
from evonb.schema.promotion import (
    allowed_targets,
    can_change_type,
    casts_directly,
    check_type_change,
    is_narrowing,
    reconcile_write_type,
)
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    DecimalType,
    NestedField,
    StructType,
    Type,
    array_of,
    map_of,
)

DEC_S = DecimalType(10, 2)  # 8 integer digits
DEC_W = DecimalType(38, 4)  # 34 integer digits

TYPES: dict[str, Type] = {
    "boolean": BOOLEAN,
    "tinyint": TINYINT,
    "smallint": SMALLINT,
    "int": INT,
    "bigint": BIGINT,
    "float": FLOAT,
    "double": DOUBLE,
    "decimal(10,2)": DEC_S,
    "decimal(38,4)": DEC_W,
    "string": STRING,
    "binary": BINARY,
    "date": DATE,
    "timestamp": TIMESTAMP,
    "timestamp_ntz": TIMESTAMP_NTZ,
}

# What each type may become (besides itself).
ALLOWED: dict[str, set[str]] = {
    "boolean": set(),
    "tinyint": {"smallint", "int", "bigint", "float", "double", "string", "decimal(10,2)",
                "decimal(38,4)"},
    "smallint": {"int", "bigint", "float", "double", "string", "decimal(10,2)", "decimal(38,4)"},
    "int": {"bigint", "float", "double", "string", "decimal(38,4)"},
    "bigint": {"float", "double", "string", "decimal(38,4)"},
    "float": {"double", "string", "decimal(10,2)", "decimal(38,4)"},
    "double": {"string", "decimal(10,2)", "decimal(38,4)"},
    "decimal(10,2)": {"string", "decimal(38,4)"},
    "decimal(38,4)": {"string"},
    "string": {"date", "decimal(10,2)", "decimal(38,4)"},
    "binary": set(),
    "date": {"string", "timestamp_ntz"},
    "timestamp": set(),
    "timestamp_ntz": set(),
}

# The hint of a rejected change: what the old type can become.
HINTS: dict[str, str] = {
    "boolean": "boolean cannot change type in metadata; use Table.rewrite()",
    "tinyint": "tinyint can become: smallint, int, bigint, float, double, string, "
    "decimal(p,s) with p-s >= 3",
    "smallint": "smallint can become: int, bigint, float, double, string, "
    "decimal(p,s) with p-s >= 5",
    "int": "int can become: bigint, float, double, string, decimal(p,s) with p-s >= 10",
    "bigint": "bigint can become: float, double, string, decimal(p,s) with p-s >= 19",
    "float": "float can become: double, string, decimal(p,s)",
    "double": "double can become: string, decimal(p,s)",
    "decimal(10,2)": "decimal(10,2) can become: string, decimal(p,s) with p-s >= 8 and s >= 2",
    "decimal(38,4)": "decimal(38,4) can become: string, decimal(p,s) with p-s >= 34 and s >= 4",
    "string": "string can become: date, decimal(p,s)",
    "binary": "binary cannot change type in metadata; use Table.rewrite()",
    "date": "date can become: string, timestamp_ntz",
    "timestamp": "timestamp cannot change type in metadata; use Table.rewrite()",
    "timestamp_ntz": "timestamp_ntz cannot change type in metadata; use Table.rewrite()",
}

PAIRS = list(itertools.product(TYPES, TYPES))


def test_the_expected_table_covers_every_type() -> None:
    assert set(ALLOWED) == set(TYPES) == set(HINTS)
    assert all(targets <= set(TYPES) for targets in ALLOWED.values())
    assert len(PAIRS) == 196
    assert sum(len(v) for v in ALLOWED.values()) == 39


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_type_change_matrix(old: str, new: str) -> None:
    expected = old == new or new in ALLOWED[old]
    assert can_change_type(TYPES[old], TYPES[new]) is expected
    base = Schema((NestedField(1, "c", TYPES[old], comment="kept"), NestedField(2, "d", INT)))
    update = SchemaUpdate(base)
    if expected:
        after = update.update_column_type("c", TYPES[new]).apply()
        assert after.fields == (NestedField(1, "c", TYPES[new], comment="kept"),
                                NestedField(2, "d", INT))
        assert after.max_column_id == 2
        assert [op.kind for op in update.operations] == ([] if old == new else ["retype"])
        return
    with pytest.raises(SchemaEvolutionError) as exc:
        update.update_column_type("c", TYPES[new])
    err = exc.value
    assert err.message == (
        f"Cannot change column type: c: {old} -> {new} "
        "(not a widening evonb can do in metadata)"
    )
    expected_hint = HINTS[old]
    if "can become" in expected_hint:
        expected_hint += "; for other changes use Table.rewrite()"
    assert err.hint == expected_hint
    assert str(err) == f"{err.message}\nHint: {expected_hint}"
    assert (err.path, err.field_id, err.old, err.new) == ("c", 1, TYPES[old], TYPES[new])
    assert update.apply() == base
    assert not update


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_type_change_matrix_by_ddl_text(old: str, new: str) -> None:
    base = Schema.from_ddl(f"c {old}")
    update = SchemaUpdate(base)
    if old == new or new in ALLOWED[old]:
        assert str(update.update_column_type("c", new).apply().find("c").type) == new
    else:
        with pytest.raises(SchemaEvolutionError, match="Cannot change column type"):
            update.update_column_type("c", new)


# The only changes allowed both ways are Hudi's string <-> date and string <-> decimal cells.
BOTH_WAYS = {("string", "date"), ("string", "decimal(10,2)"), ("string", "decimal(38,4)")}


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_every_narrowing_is_rejected(old: str, new: str) -> None:
    """A widening cannot be undone by another ALTER, except the string <-> date/decimal cells."""
    if old == new or new not in ALLOWED[old]:
        return
    back = can_change_type(TYPES[new], TYPES[old])
    assert back is ((old, new) in BOTH_WAYS or (new, old) in BOTH_WAYS)
    assert is_narrowing(TYPES[new], TYPES[old]) is True
    assert is_narrowing(TYPES[old], TYPES[new]) is back
    assert not is_narrowing(TYPES[old], TYPES[old])


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        ((10, 2), (10, 2), True),
        ((10, 2), (12, 2), True),
        ((10, 2), (38, 2), True),
        ((10, 2), (12, 4), True),
        ((10, 2), (11, 3), True),
        ((10, 2), (11, 4), False),  # one integer digit lost
        ((10, 2), (9, 2), False),  # precision narrowed
        ((10, 2), (10, 0), False),  # fractional digits lost
        ((10, 2), (12, 1), False),  # one fractional digit lost
        ((10, 2), (9, 0), False),
        ((10, 2), (10, 3), False),
        ((1, 0), (38, 37), True),
        ((38, 0), (38, 1), False),
        ((5, 5), (6, 6), True),
        ((5, 5), (5, 4), False),
    ],
)
def test_decimal_to_decimal(old: tuple[int, int], new: tuple[int, int], ok: bool) -> None:
    assert can_change_type(DecimalType(*old), DecimalType(*new)) is ok


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        (TINYINT, (3, 0), True),
        (TINYINT, (2, 0), False),
        (TINYINT, (5, 2), True),
        (SMALLINT, (5, 0), True),
        (SMALLINT, (6, 2), False),
        (INT, (10, 0), True),
        (INT, (12, 2), True),
        (INT, (11, 2), False),
        (INT, (9, 0), False),
        (BIGINT, (19, 0), True),
        (BIGINT, (21, 2), True),
        (BIGINT, (20, 2), False),
        (BIGINT, (18, 0), False),
        (FLOAT, (1, 0), True),
        (DOUBLE, (38, 38), True),
        (STRING, (1, 1), True),
        (BOOLEAN, (38, 0), False),
        (DATE, (38, 0), False),
        (BINARY, (38, 0), False),
    ],
)
def test_to_decimal(old: Type, new: tuple[int, int], ok: bool) -> None:
    assert can_change_type(old, DecimalType(*new)) is ok


def test_decimal_goes_to_string_only_among_primitives() -> None:
    for t in TYPES.values():
        if not isinstance(t, DecimalType):
            assert can_change_type(DEC_S, t) is (t == STRING)


def test_allowed_targets() -> None:
    assert allowed_targets(INT) == ["bigint", "float", "double", "string",
                                    "decimal(p,s) with p-s >= 10"]
    assert allowed_targets(BOOLEAN) == []
    assert allowed_targets(DecimalType(7, 3)) == ["string",
                                                  "decimal(p,s) with p-s >= 4 and s >= 3"]
    assert allowed_targets(array_of(INT)) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (array_of(INT, element_id=1), array_of(BIGINT, element_id=1)),
        (StructType((NestedField(1, "a", INT),)), StructType((NestedField(1, "a", BIGINT),))),
        (map_of(STRING, INT, key_id=1, value_id=2), STRING),
        (INT, array_of(INT)),
        (StructType((NestedField(1, "a", INT),)), StructType((NestedField(2, "a", INT),))),
    ],
)
def test_nested_types_change_only_through_their_fields(old: Type, new: Type) -> None:
    assert not can_change_type(old, new)
    with pytest.raises(SchemaEvolutionError) as exc:
        check_type_change(old, new, path="p.q", field_id=9)
    err = exc.value
    assert err.message == (
        f"Cannot change column type: p.q: {old} -> {new} "
        "(nested types change through their fields, not as a whole)"
    )
    assert err.hint == "add, drop or retype the nested fields one by one"
    assert (err.path, err.field_id) == ("p.q", 9)


def test_the_same_nested_type_is_no_change() -> None:
    t = StructType((NestedField(1, "a", INT),))
    assert can_change_type(t, t)
    check_type_change(t, t, path="s")


# ------------------------------------------------------------------------ writes
@pytest.mark.parametrize(
    ("table", "incoming", "result"),
    [
        (INT, INT, INT),
        (INT, BIGINT, BIGINT),  # the table widens
        (BIGINT, INT, BIGINT),  # narrower data is cast up
        (TINYINT, SMALLINT, SMALLINT),
        (FLOAT, DOUBLE, DOUBLE),
        (DOUBLE, FLOAT, DOUBLE),
        (INT, STRING, STRING),
        (STRING, INT, STRING),
        (BINARY, STRING, BINARY),
        (STRING, BINARY, STRING),
        (DATE, TIMESTAMP_NTZ, TIMESTAMP_NTZ),
        (DecimalType(10, 2), DecimalType(12, 2), DecimalType(12, 2)),
        (DecimalType(12, 2), DecimalType(10, 2), DecimalType(12, 2)),
        (DecimalType(10, 2), DecimalType(12, 0), DecimalType(14, 2)),
        (DecimalType(12, 0), DecimalType(10, 2), DecimalType(14, 2)),
        (DecimalType(10, 4), DecimalType(34, 0), DecimalType(38, 4)),
        (INT, DecimalType(12, 2), DecimalType(12, 2)),
        (DecimalType(12, 2), INT, DecimalType(12, 2)),
        # a write never converts: text stays text, dates and decimals written into it as text
        (STRING, DATE, STRING),
        (DATE, STRING, STRING),
        (STRING, DecimalType(5, 2), STRING),
        (DecimalType(5, 2), STRING, STRING),
        (STRING, DOUBLE, STRING),
        # decimals (Spark's literals: `id * 1.5`) are cast into a floating-point column
        (DOUBLE, DecimalType(5, 2), DOUBLE),
        (FLOAT, DecimalType(20, 2), FLOAT),
    ],
)
def test_reconcile_write_type(table: Type, incoming: Type, result: Type) -> None:
    assert reconcile_write_type(table, incoming, path="c") == result


@pytest.mark.parametrize(
    ("table", "incoming"),
    [
        (INT, BINARY),
        (BINARY, INT),
        (BOOLEAN, INT),
        (TIMESTAMP, DATE),
        (DecimalType(10, 4), DecimalType(38, 0)),  # would need 42 digits
        # ALTER converts these when asked; a write would lose the values that do not fit
        (DecimalType(5, 2), DOUBLE),
        (DecimalType(10, 2), FLOAT),
        (DecimalType(5, 2), INT),
        (INT, array_of(INT)),
        (StructType((NestedField(1, "a", INT),)), StructType((NestedField(1, "a", BIGINT),))),
    ],
)
def test_reconcile_write_type_rejects(table: Type, incoming: Type) -> None:
    with pytest.raises(WriteSchemaError) as exc:
        reconcile_write_type(table, incoming, path="a.b")
    err = exc.value
    assert err.message == (
        f"Incompatible column type in write: a.b: table has {table}, data has {incoming}"
    )
    assert (err.path, err.old, err.new) == ("a.b", table, incoming)
    assert isinstance(err, SchemaEvolutionError)


def test_a_cast_a_read_cannot_make_directly_is_one_the_type_rules_reach_through_text():
    """``casts_directly``: every change ALTER allows is one cast; a pair the rules reach only
    in steps and no cast joins (a number and a date) is reached only through ``string``, so a
    read that casts such a value through text takes the column's own way."""
    from evonb.schema.types import (
        DOUBLE,
        FLOAT,
        INT,
        SMALLINT,
        STRING,
        TIMESTAMP_NTZ,
        TINYINT,
        DecimalType,
    )

    types = [TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, STRING, DATE, TIMESTAMP_NTZ,
             DecimalType(5, 2), DecimalType(12, 2), DecimalType(38, 6)]

    def reach(start, without=None):
        seen, todo = set(), [start]
        while todo:
            a = todo.pop()
            for b in types:
                if b not in seen and b != without and b != a and can_change_type(a, b):
                    seen.add(b)
                    todo.append(b)
        return seen

    indirect = 0
    for a in types:
        for b in reach(a):
            if can_change_type(a, b):
                assert casts_directly(a, b), (a, b)
            if not casts_directly(a, b):
                indirect += 1
                assert a is not STRING and b not in reach(a, without=STRING), (a, b)
    assert indirect >= 10  # numbers to dates and timestamps, dates to numbers
    assert not casts_directly(INT, DATE) and not casts_directly(DATE, DecimalType(5, 2))
    assert casts_directly(DecimalType(38, 6), DecimalType(5, 2)) and casts_directly(INT, STRING)
