"""evonb schema <-> Avro record schema: exact output, Hudi-style input, round trips, errors."""

from __future__ import annotations

import decimal
import io
import json
import re
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings

from evonb.errors import SchemaEvolutionError
from evonb.schema.avro_convert import avro_name, schema_from_avro, schema_to_avro, type_to_avro
from evonb.schema.schema import INITIAL_VERSION, Schema
from evonb.schema.types import (
    BIGINT,
    BINARY,
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
    array_of,
    map_of,
)

try:  # shared strategies, imported as a package or from their folder
    from tests.schema.strategies import sample_schema, schemas
except ImportError:  # pragma: no cover
    from strategies import sample_schema, schemas  # type: ignore[no-redef]

AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# ----------------------------------------------------------------------------- exact output
def test_to_avro_exact() -> None:
    s = Schema(
        (
            NestedField(1, "id", BIGINT, False, comment="key"),
            NestedField(2, "t", TINYINT, default=1, write_default=2),
            NestedField(3, "p", StructType((NestedField(4, "x", DecimalType(9, 2), False),))),
            NestedField(5, "xs", array_of(TIMESTAMP, element_id=6, contains_null=False), False),
            NestedField(7, "m", map_of(STRING, TIMESTAMP_NTZ, key_id=8, value_id=9)),
            NestedField(10, "d", DATE),
            NestedField(11, "a b", SMALLINT, False),
        ),
        version_id="20240101000000000",
        max_column_id=12,
    )
    assert schema_to_avro(s, name="tbl") == {
        "type": "record",
        "name": "tbl",
        "evonb-version-id": "20240101000000000",
        "evonb-max-column-id": 12,
        "fields": [
            {"name": "id", "type": "long", "field-id": 1, "doc": "key"},
            {
                "name": "t",
                "type": ["null", {"type": "int", "evonb-type": "tinyint"}],
                "default": None,
                "field-id": 2,
                "evonb-default": 1,
                "evonb-write-default": 2,
            },
            {
                "name": "p",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "r_3",
                        "fields": [
                            {
                                "name": "x",
                                "type": {
                                    "type": "bytes",
                                    "logicalType": "decimal",
                                    "precision": 9,
                                    "scale": 2,
                                },
                                "field-id": 4,
                            }
                        ],
                    },
                ],
                "default": None,
                "field-id": 3,
            },
            {
                "name": "xs",
                "type": {
                    "type": "array",
                    "items": {"type": "long", "logicalType": "timestamp-micros"},
                    "element-id": 6,
                },
                "field-id": 5,
            },
            {
                "name": "m",
                "type": [
                    "null",
                    {
                        "type": "map",
                        "values": [
                            "null",
                            {"type": "long", "logicalType": "local-timestamp-micros"},
                        ],
                        "key-id": 8,
                        "value-id": 9,
                    },
                ],
                "default": None,
                "field-id": 7,
            },
            {
                "name": "d",
                "type": ["null", {"type": "int", "logicalType": "date"}],
                "default": None,
                "field-id": 10,
            },
            {
                "name": "_612062",
                "evonb-name": "a b",
                "type": {"type": "int", "evonb-type": "smallint"},
                "field-id": 11,
            },
        ],
    }


def test_schema_methods_delegate() -> None:
    s = sample_schema()
    assert s.to_avro() == schema_to_avro(s, name="record")
    assert Schema.from_avro(s.to_avro(), version_id=s.version_id) == s


# ----------------------------------------------------------------------------- Hudi-style input
HUDI_SCHEMA = {
    "type": "record",
    "name": "trips_record",
    "namespace": "hoodie.trips",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "uuid", "type": "string"},
        {
            "name": "fare",
            "type": [
                "null",
                {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
            ],
            "default": None,
        },
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {
            "name": "stops",
            "type": [
                "null",
                {
                    "type": "array",
                    "items": [
                        "null",
                        {
                            "type": "record",
                            "name": "stops",
                            "namespace": "hoodie.trips.trips_record",
                            "fields": [
                                {"name": "name", "type": ["null", "string"], "default": None},
                                {"name": "seq", "type": "int", "default": 0},
                            ],
                        },
                    ],
                },
            ],
            "default": None,
        },
        {
            "name": "attrs",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "attrs",
                    "fields": [{"name": "v", "type": ["double", "null"], "doc": "a value"}],
                },
            },
        },
        {
            "name": "rider",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "rider",
                    "fields": [
                        {"name": "name", "type": "string"},
                        {
                            "name": "address",
                            "type": [
                                "null",
                                {
                                    "type": "record",
                                    "name": "address",
                                    "fields": [
                                        {"name": "city", "type": ["null", "string"]},
                                        {"name": "zip", "type": "int"},
                                    ],
                                },
                            ],
                            "default": None,
                        },
                    ],
                },
            ],
            "default": None,
        },
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {
            "name": "status",
            "type": {"type": "enum", "name": "Status", "symbols": ["A", "B"]},
            "default": "A",
        },
        {"name": "Count", "type": ["long", "null"], "default": 7},
        {"name": "f", "type": "float"},
    ],
}


def test_from_avro_hudi_style_schema() -> None:
    want = Schema(
        (
            NestedField(1, "_hoodie_commit_time", STRING, comment=""),
            NestedField(2, "uuid", STRING, False),
            NestedField(3, "fare", DecimalType(10, 2)),
            NestedField(4, "ts", TIMESTAMP),
            NestedField(
                5,
                "stops",
                array_of(
                    StructType((NestedField(7, "name", STRING), NestedField(8, "seq", INT, False))),
                    element_id=6,
                ),
            ),
            NestedField(
                9,
                "attrs",
                map_of(
                    STRING,
                    StructType((NestedField(12, "v", DOUBLE, comment="a value"),)),
                    key_id=10,
                    value_id=11,
                    value_contains_null=False,
                ),
                False,
            ),
            NestedField(
                13,
                "rider",
                StructType(
                    (
                        NestedField(14, "name", STRING, False),
                        NestedField(
                            15,
                            "address",
                            StructType(
                                (
                                    NestedField(16, "city", STRING),
                                    NestedField(17, "zip", INT, False),
                                )
                            ),
                        ),
                    )
                ),
            ),
            NestedField(18, "day", DATE, False),
            NestedField(19, "status", STRING, False),
            NestedField(20, "Count", BIGINT),
            NestedField(21, "f", FLOAT, False),
        ),
        version_id=INITIAL_VERSION,
        max_column_id=21,
    )
    assert schema_from_avro(HUDI_SCHEMA) == want
    assert schema_from_avro(json.dumps(HUDI_SCHEMA), version_id="20240101000000000") == (
        want.with_version("20240101000000000")
    )


def test_avro_defaults_are_not_evonb_defaults() -> None:
    got = schema_from_avro(HUDI_SCHEMA)
    assert all(info.default is None and info.write_default is None for info in got.fields)
    assert got.find("stops.element.seq").default is None


# ----------------------------------------------------------------------------- round trips
def test_round_trip_sample() -> None:
    s = sample_schema()
    avro = schema_to_avro(s)
    fastavro.parse_schema(avro)
    back = schema_from_avro(avro)
    assert back == s
    assert (back.version_id, back.max_column_id) == ("20240102030405678", 40)
    assert schema_from_avro(json.dumps(avro)) == s


def _avro_names(avro: Any) -> list[str]:
    out: list[str] = []
    if isinstance(avro, list):
        for branch in avro:
            out += _avro_names(branch)
    elif isinstance(avro, dict):
        if avro.get("type") == "record":
            out.append(avro["name"])
            for f in avro["fields"]:
                out.append(f["name"])
                out += _avro_names(f["type"])
        out += _avro_names(avro.get("items"))
        out += _avro_names(avro.get("values"))
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas(string_keys=True))
def test_round_trip_is_identity(s: Schema) -> None:
    avro = schema_to_avro(s)
    fastavro.parse_schema(avro)  # valid, and nested record names are unique
    assert all(AVRO_NAME.match(n) for n in _avro_names(avro))
    assert schema_from_avro(json.dumps(avro)) == s


def test_data_round_trip_through_fastavro() -> None:
    s = sample_schema()
    parsed = fastavro.parse_schema(schema_to_avro(s))
    row: dict[str, Any] = {f.name: None for f in s.fields}
    row.update(
        id=7,
        grid=[[1, None], []],
        price=decimal.Decimal("12.34"),
        tags=[{"k": "a", "v": None}],
        props={"x": {"a": 1, "b": ["u", None]}},
        deep={"k": [{"n": 5}, None]},
        point={"x": 1.0, "y": None},
    )
    buf = io.BytesIO()
    fastavro.writer(buf, parsed, [row])
    buf.seek(0)
    (back,) = list(fastavro.reader(buf))
    assert back == row
    buf.seek(0)
    assert schema_from_avro(fastavro.reader(buf).writer_schema) == s


# ----------------------------------------------------------------------------- names
def test_invalid_avro_names_are_encoded_and_restored() -> None:
    s = Schema(
        (
            NestedField(1, "a b", INT),
            NestedField(2, "x.y", INT),
            NestedField(3, "émoji✓", INT),
            NestedField(4, "_612062", INT),
            NestedField(5, "1st", StructType((NestedField(6, "in ner", STRING),))),
        )
    )
    avro = schema_to_avro(s)
    names = [f["name"] for f in avro["fields"]]
    assert names[0] == "_612062_1"  # the literal "_612062" column keeps its name
    assert names[3] == "_612062"
    assert names[1] == "_" + b"x.y".hex()
    assert len(set(names)) == len(names)
    assert all(AVRO_NAME.match(n) for n in _avro_names(avro))
    assert [f.get("evonb-name") for f in avro["fields"]] == ["a b", "x.y", "émoji✓", None, "1st"]
    assert schema_from_avro(avro) == s


def test_avro_name_helper() -> None:
    assert avro_name("ok_1", set()) == "ok_1"
    assert avro_name("a-b", set()) == "_612d62"
    assert avro_name("a-b", {"_612d62"}) == "_612d62_1"
    assert avro_name("a-b", {"_612d62", "_612d62_1"}) == "_612d62_2"


def test_from_avro_leaves_foreign_names_alone() -> None:
    avro = {"type": "record", "name": "r", "fields": [{"name": "Weird-Name", "type": "int"}]}
    assert schema_from_avro(avro).column_names == ["Weird-Name"]


# ----------------------------------------------------------------------------- IDs
def test_field_ids_are_kept_and_missing_ones_continue_after_highest() -> None:
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": "int", "field-id": 10},
            {"name": "b", "type": {"type": "array", "items": "int", "element-id": 3}},
            {"name": "c", "type": {"type": "map", "values": "long"}, "field-id": 4},
        ],
    }
    got = schema_from_avro(avro)
    assert [f.id for f in got.fields] == [10, 11, 4]
    assert got.fields[1].type.element.id == 3
    assert (got.fields[2].type.key.id, got.fields[2].type.value.id) == (12, 13)
    assert got.max_column_id == 13


# ----------------------------------------------------------------------------- type mapping
@pytest.mark.parametrize(
    ("avro_type", "want"),
    [
        ("boolean", "boolean"),
        ("int", INT),
        ("long", BIGINT),
        ("bytes", BINARY),
        ({"type": "fixed", "name": "f16", "size": 16}, BINARY),
        ({"type": "fixed", "name": "d", "size": 8, "logicalType": "decimal", "precision": 18,
          "scale": 3}, DecimalType(18, 3)),
        ({"type": "bytes", "logicalType": "decimal", "precision": 5}, DecimalType(5, 0)),
        ({"type": "int", "logicalType": "time-millis"}, INT),
        ({"type": "long", "logicalType": "time-micros"}, BIGINT),
        ({"type": "long", "logicalType": "timestamp-millis"}, TIMESTAMP),
        ({"type": "long", "logicalType": "local-timestamp-millis"}, TIMESTAMP_NTZ),
        ({"type": "long", "logicalType": "local-timestamp-micros"}, TIMESTAMP_NTZ),
        ({"type": "string", "logicalType": "uuid"}, STRING),
        ({"type": "string", "logicalType": "no-such-logical-type"}, STRING),
        ({"type": "enum", "name": "E", "symbols": ["X"]}, STRING),
        (["null", "float"], FLOAT),
        (["int"], INT),
    ],
)
def test_type_mapping(avro_type: Any, want: Any) -> None:
    from evonb.schema.types import PRIMITIVES

    if isinstance(want, str):
        want = PRIMITIVES[want]
    avro = {"type": "record", "name": "r", "fields": [{"name": "c", "type": avro_type}]}
    assert schema_from_avro(avro).fields[0].type == want


def test_named_type_references_are_resolved() -> None:
    avro = {
        "type": "record",
        "name": "r",
        "namespace": "ns",
        "fields": [
            {"name": "a", "type": {"type": "record", "name": "P", "fields": [
                {"name": "x", "type": "int"}]}},
            {"name": "b", "type": ["null", "P"]},
            {"name": "c", "type": ["null", "ns.P"]},
        ],
    }
    got = schema_from_avro(avro)
    assert [f.id for f in got.fields] == [1, 3, 5]
    assert got.fields[1].type == StructType((NestedField(4, "x", INT, False),))
    assert got.fields[2].nullable


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "bad_type",
    [
        ["null", "int", "string"],
        ["int", "string"],
        "null",
        {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2},
    ],
)
def test_unsupported_avro_types_name_the_column(bad_type: Any) -> None:
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {
                "name": "outer",
                "type": {
                    "type": "record",
                    "name": "o",
                    "fields": [{"name": "inner", "type": bad_type}],
                },
            }
        ],
    }
    with pytest.raises(SchemaEvolutionError, match=r"outer\.inner") as info:
        schema_from_avro(avro)
    assert info.value.path == "outer.inner"


def test_recursive_record_is_rejected() -> None:
    avro = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"]}],
    }
    with pytest.raises(SchemaEvolutionError, match=r"Recursive.*'next'"):
        schema_from_avro(avro)


def test_invalid_or_non_record_schemas_are_rejected() -> None:
    with pytest.raises(SchemaEvolutionError, match="does not parse"):
        schema_from_avro("{not json")
    with pytest.raises(SchemaEvolutionError, match="Not a valid Avro schema"):
        schema_from_avro({"type": "record", "name": "r", "fields": [{"name": "a", "type": "nope"}]})
    with pytest.raises(SchemaEvolutionError, match="must be a record"):
        schema_from_avro({"type": "array", "items": "int"})


def test_non_string_map_keys_are_rejected_naming_the_column() -> None:
    s = Schema((NestedField(1, "m", map_of(INT, STRING, key_id=2, value_id=3)),))
    with pytest.raises(SchemaEvolutionError, match="'m'") as info:
        schema_to_avro(s)
    assert info.value.path == "m"


def test_type_to_avro_helper() -> None:
    assert type_to_avro(BIGINT) == "long"
    assert type_to_avro(array_of(INT, element_id=4)) == {
        "type": "array",
        "items": ["null", "int"],
        "element-id": 4,
    }
