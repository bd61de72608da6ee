"""evonb schema <-> pyarrow schema: exact metadata, round trips, fresh IDs, accepted types."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from evonb.errors import SchemaEvolutionError
from evonb.schema.arrow_convert import (
    field_to_arrow,
    schema_from_arrow,
    schema_to_arrow,
    type_from_arrow,
    type_to_arrow,
)
from evonb.schema.schema import INITIAL_VERSION, Schema
from evonb.schema.types import (
    BINARY,
    DATE,
    INT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    NestedField,
    StructType,
    array_of,
    map_of,
)

try:  # shared strategies, imported as a package or from their folder
    from tests.schema.strategies import sample_schema, schemas
except ImportError:  # pragma: no cover
    from strategies import sample_schema, schemas  # type: ignore[no-redef]


def m(i: int, **extra: str) -> dict[bytes, bytes]:
    out = {b"PARQUET:field_id": str(i).encode()}
    out.update((k.encode(), v.encode()) for k, v in extra.items())
    return out


def fld(name: str, t: pa.DataType, i: int, nullable: bool = True, **extra: str) -> pa.Field:
    return pa.field(name, t, nullable, metadata=m(i, **extra))


DEF = "evonb.default"
WDEF = "evonb.write_default"

EXPECTED_ARROW = pa.schema(
    [
        fld("flag", pa.bool_(), 1, **{DEF: "true", WDEF: "false"}),
        fld("tiny", pa.int8(), 2, **{DEF: "-3"}),
        fld("small", pa.int16(), 3, **{WDEF: "300"}),
        fld("id", pa.int32(), 4, False, comment="primary key", **{DEF: "42", WDEF: "43"}),
        fld("big", pa.int64(), 5, **{DEF: "1099511627776"}),
        fld("ratio", pa.float32(), 6, **{DEF: "1.5"}),
        fld("score", pa.float64(), 7, **{DEF: "-0.25", WDEF: '"inf"'}),
        fld("price", pa.decimal128(10, 2), 8, **{DEF: '"12.34"'}),
        fld("note", pa.string(), 9, comment="free text", **{DEF: '"it\'s a \\\\ test"'}),
        fld("blob", pa.binary(), 10, **{DEF: '"Cv8="'}),
        fld("day", pa.date32(), 11, **{DEF: '"2020-02-29"'}),
        fld("at", pa.timestamp("us", tz="UTC"), 12, **{DEF: '"2020-01-02T03:04:05.000006"'}),
        fld("local", pa.timestamp("us"), 13, **{WDEF: '"2021-06-07T08:09:10"'}),
        fld(
            "point",
            pa.struct(
                [
                    fld("x", pa.float64(), 15, False, **{DEF: "0.0"}),
                    fld("y", pa.float64(), 16, comment="north"),
                ]
            ),
            14,
            comment="a place",
        ),
        fld(
            "tags",
            pa.list_(
                fld(
                    "element",
                    pa.struct(
                        [fld("k", pa.string(), 19, False), fld("v", pa.int32(), 20, **{DEF: "1"})]
                    ),
                    18,
                    False,
                )
            ),
            17,
        ),
        fld(
            "props",
            pa.map_(
                fld("key", pa.string(), 22, False),
                fld(
                    "value",
                    pa.struct(
                        [
                            fld("a", pa.int32(), 24),
                            fld("b", pa.list_(fld("element", pa.string(), 26)), 25),
                        ]
                    ),
                    23,
                ),
            ),
            21,
        ),
        fld(
            "grid",
            pa.list_(fld("element", pa.list_(fld("element", pa.int32(), 29)), 28)),
            27,
            False,
        ),
        fld(
            "deep",
            pa.map_(
                fld("key", pa.string(), 31, False),
                fld(
                    "value",
                    pa.list_(
                        fld(
                            "element",
                            pa.map_(
                                fld("key", pa.string(), 34, False),
                                fld("value", pa.int64(), 35, False),
                            ),
                            33,
                        )
                    ),
                    32,
                ),
            ),
            30,
        ),
    ],
    metadata={b"evonb.version_id": b"20240102030405678", b"evonb.max_column_id": b"40"},
)


def _assert_same_field(got: pa.Field, want: pa.Field) -> None:
    assert got.name == want.name
    assert got.nullable == want.nullable, got.name
    assert got.metadata == want.metadata, got.name
    assert got.type == want.type, got.name
    t, w = got.type, want.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _assert_same_field(t.field(i), w.field(i))
    elif pa.types.is_map(t):
        _assert_same_field(t.key_field, w.key_field)
        _assert_same_field(t.item_field, w.item_field)
    elif pa.types.is_list(t):
        _assert_same_field(t.value_field, w.value_field)


def test_to_arrow_exact_metadata() -> None:
    out = schema_to_arrow(sample_schema())
    assert out.metadata == EXPECTED_ARROW.metadata
    assert out.names == EXPECTED_ARROW.names
    for got, want in zip(out, EXPECTED_ARROW, strict=True):
        _assert_same_field(got, want)
    assert out.equals(EXPECTED_ARROW, check_metadata=True)


def test_schema_methods_delegate() -> None:
    s = sample_schema()
    assert s.to_arrow().equals(EXPECTED_ARROW, check_metadata=True)
    assert Schema.from_arrow(EXPECTED_ARROW) == s


def test_round_trip_sample() -> None:
    s = sample_schema()
    back = schema_from_arrow(schema_to_arrow(s))
    assert back == s
    assert (back.version_id, back.max_column_id) == ("20240102030405678", 40)


def test_round_trip_through_parquet_file(tmp_path) -> None:
    s = sample_schema()
    path = tmp_path / "empty.parquet"
    pq.write_table(schema_to_arrow(s).empty_table(), path)
    assert schema_from_arrow(pq.read_schema(path)) == s


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas())
def test_round_trip_is_identity(s: Schema) -> None:
    assert schema_from_arrow(schema_to_arrow(s)) == s


def test_keyword_arguments_override_schema_metadata() -> None:
    back = schema_from_arrow(EXPECTED_ARROW, version_id="20990101000000000", max_column_id=77)
    assert (back.version_id, back.max_column_id) == ("20990101000000000", 77)


def test_plain_arrow_schema_gets_pre_order_ids_and_accepts_large_types() -> None:
    plain = pa.schema(
        [
            pa.field("a", pa.large_string(), False),
            pa.field("b", pa.large_list(pa.struct([pa.field("c", pa.large_binary())]))),
            pa.field("d", pa.map_(pa.string(), pa.int32())),
            pa.field("e", pa.timestamp("ms", tz="Europe/Paris")),
            pa.field("f", pa.timestamp("ns")),
            pa.field("g", pa.dictionary(pa.int32(), pa.string())),
            pa.field("h", pa.date64()),
        ]
    )
    want = Schema(
        (
            NestedField(1, "a", STRING, False),
            NestedField(
                2, "b", array_of(StructType((NestedField(4, "c", BINARY),)), element_id=3)
            ),
            NestedField(5, "d", map_of(STRING, INT, key_id=6, value_id=7)),
            NestedField(8, "e", TIMESTAMP),
            NestedField(9, "f", TIMESTAMP_NTZ),
            NestedField(10, "g", STRING),
            NestedField(11, "h", DATE),
        ),
        version_id=INITIAL_VERSION,
        max_column_id=11,
    )
    assert schema_from_arrow(plain) == want


def test_missing_ids_continue_after_highest() -> None:
    partial = pa.schema([pa.field("a", pa.int32()), fld("b", pa.int32(), 5)])
    got = schema_from_arrow(partial)
    assert [f.id for f in got.fields] == [6, 5]


@pytest.mark.parametrize(
    "arrow_type",
    [pa.uint32(), pa.float16(), pa.time64("us"), pa.duration("s"), pa.null(), pa.decimal256(50, 2)],
)
def test_unsupported_types_name_the_column(arrow_type: pa.DataType) -> None:
    schema = pa.schema([pa.field("outer", pa.struct([pa.field("inner", arrow_type)]))])
    with pytest.raises(SchemaEvolutionError, match=r"outer\.inner"):
        schema_from_arrow(schema)


def test_unsupported_list_element_is_named_element() -> None:
    schema = pa.schema([pa.field("xs", pa.list_(pa.uint8()))])
    with pytest.raises(SchemaEvolutionError, match=r"'xs\.element'"):
        schema_from_arrow(schema)


def test_bad_field_id_is_rejected() -> None:
    with pytest.raises(SchemaEvolutionError, match="'a'"):
        bad = pa.field("a", pa.int32(), metadata={b"PARQUET:field_id": b"x"})
        schema_from_arrow(pa.schema([bad]))


def test_type_and_field_helpers() -> None:
    assert type_to_arrow(TIMESTAMP) == pa.timestamp("us", tz="UTC")
    assert type_to_arrow(TIMESTAMP_NTZ) == pa.timestamp("us")
    assert type_from_arrow(pa.list_(pa.int32())) == array_of(INT)
    f = field_to_arrow(NestedField(3, "d", DATE, default=dt.date(2000, 1, 1)))
    assert f.metadata == m(3, **{DEF: '"2000-01-01"'})
