"""evonb schema <-> Spark StructType: exact metadata, round trips, fresh IDs, literal parsing."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from pyspark.sql import types as T

from evonb.errors import InvalidDefaultError, SchemaEvolutionError
from evonb.schema.defaults import sql_literal
from evonb.schema.schema import INITIAL_VERSION, Schema
from evonb.schema.spark_convert import (
    field_to_spark,
    parse_sql_literal,
    schema_from_spark,
    schema_to_spark,
    type_from_spark,
    type_to_spark,
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
    array_of,
    map_of,
)

try:  # shared strategies, imported as a package or from their folder
    from tests.schema.strategies import default_values, primitive_types, sample_schema, schemas
except ImportError:  # pragma: no cover
    from strategies import (  # type: ignore[no-redef]
        default_values,
        primitive_types,
        sample_schema,
        schemas,
    )


def sf(name: str, dt_: T.DataType, nullable: bool = True, **meta: object) -> T.StructField:
    return T.StructField(name, dt_, nullable, meta)


def fid(i: int, **extra: object) -> dict[str, object]:
    return {"parquet.field.id": i, **extra}


EXPECTED_SPARK = T.StructType(
    [
        T.StructField(
            "flag",
            T.BooleanType(),
            True,
            fid(
                1,
                EXISTS_DEFAULT="true",
                CURRENT_DEFAULT="false",
                **{"evonb.schema": {"version-id": "20240102030405678", "max-column-id": 40}},
            ),
        ),
        T.StructField("tiny", T.ByteType(), True, fid(2, EXISTS_DEFAULT="-3Y")),
        T.StructField("small", T.ShortType(), True, fid(3, CURRENT_DEFAULT="300S")),
        T.StructField(
            "id",
            T.IntegerType(),
            False,
            fid(4, comment="primary key", EXISTS_DEFAULT="42", CURRENT_DEFAULT="43"),
        ),
        T.StructField("big", T.LongType(), True, fid(5, EXISTS_DEFAULT="1099511627776L")),
        T.StructField("ratio", T.FloatType(), True, fid(6, EXISTS_DEFAULT="CAST(1.5 AS FLOAT)")),
        T.StructField(
            "score",
            T.DoubleType(),
            True,
            fid(
                7,
                EXISTS_DEFAULT="CAST(-0.25 AS DOUBLE)",
                CURRENT_DEFAULT="CAST('Infinity' AS DOUBLE)",
            ),
        ),
        T.StructField(
            "price",
            T.DecimalType(10, 2),
            True,
            fid(8, EXISTS_DEFAULT="CAST(12.34 AS DECIMAL(10,2))"),
        ),
        T.StructField(
            "note",
            T.StringType(),
            True,
            fid(9, comment="free text", EXISTS_DEFAULT="'it\\'s a \\\\ test'"),
        ),
        T.StructField("blob", T.BinaryType(), True, fid(10, EXISTS_DEFAULT="X'0AFF'")),
        T.StructField("day", T.DateType(), True, fid(11, EXISTS_DEFAULT="DATE '2020-02-29'")),
        T.StructField(
            "at",
            T.TimestampType(),
            True,
            fid(12, EXISTS_DEFAULT="TIMESTAMP '2020-01-02 03:04:05.000006'"),
        ),
        T.StructField(
            "local",
            T.TimestampNTZType(),
            True,
            fid(13, CURRENT_DEFAULT="TIMESTAMP_NTZ '2021-06-07 08:09:10'"),
        ),
        T.StructField(
            "point",
            T.StructType(
                [
                    T.StructField(
                        "x", T.DoubleType(), False, fid(15, EXISTS_DEFAULT="CAST(0.0 AS DOUBLE)")
                    ),
                    T.StructField("y", T.DoubleType(), True, fid(16, comment="north")),
                ]
            ),
            True,
            fid(14, comment="a place"),
        ),
        T.StructField(
            "tags",
            T.ArrayType(
                T.StructType(
                    [
                        T.StructField("k", T.StringType(), False, fid(19)),
                        T.StructField("v", T.IntegerType(), True, fid(20, EXISTS_DEFAULT="1")),
                    ]
                ),
                containsNull=False,
            ),
            True,
            fid(17, **{"evonb.nested.ids": {"element": 18}}),
        ),
        T.StructField(
            "props",
            T.MapType(
                T.StringType(),
                T.StructType(
                    [
                        T.StructField("a", T.IntegerType(), True, fid(24)),
                        T.StructField(
                            "b",
                            T.ArrayType(T.StringType(), True),
                            True,
                            fid(25, **{"evonb.nested.ids": {"element": 26}}),
                        ),
                    ]
                ),
                valueContainsNull=True,
            ),
            True,
            fid(21, **{"evonb.nested.ids": {"key": 22, "value": 23}}),
        ),
        T.StructField(
            "grid",
            T.ArrayType(T.ArrayType(T.IntegerType(), True), True),
            False,
            fid(27, **{"evonb.nested.ids": {"element": 28, "element.element": 29}}),
        ),
        T.StructField(
            "deep",
            T.MapType(
                T.StringType(),
                T.ArrayType(T.MapType(T.StringType(), T.LongType(), False), True),
                True,
            ),
            True,
            fid(
                30,
                **{
                    "evonb.nested.ids": {
                        "key": 31,
                        "value": 32,
                        "value.element": 33,
                        "value.element.key": 34,
                        "value.element.value": 35,
                    }
                },
            ),
        ),
    ]
)


# ----------------------------------------------------------------------------- exact output
def test_to_spark_exact_metadata() -> None:
    out = schema_to_spark(sample_schema())
    assert [f.name for f in out.fields] == [f.name for f in EXPECTED_SPARK.fields]
    for got, want in zip(out.fields, EXPECTED_SPARK.fields, strict=True):
        assert got.metadata == want.metadata, got.name
        assert got.dataType == want.dataType, got.name
        assert got.nullable == want.nullable, got.name
    assert out == EXPECTED_SPARK


def test_schema_info_only_on_first_field() -> None:
    out = schema_to_spark(sample_schema())
    assert "evonb.schema" in out.fields[0].metadata
    assert all("evonb.schema" not in f.metadata for f in out.fields[1:])
    assert "evonb.schema" not in field_to_spark(sample_schema().fields[0]).metadata


def test_schema_method_delegates() -> None:
    s = sample_schema()
    assert s.to_spark() == EXPECTED_SPARK
    assert Schema.from_spark(EXPECTED_SPARK) == s


# ----------------------------------------------------------------------------- round trips
def test_round_trip_sample_keeps_version_and_max_column_id() -> None:
    s = sample_schema()
    assert s.max_column_id == 40 > max(s.field_ids())
    back = schema_from_spark(schema_to_spark(s))
    assert back == s
    assert back.version_id == "20240102030405678"
    assert back.max_column_id == 40


def test_round_trip_through_spark_json() -> None:
    s = sample_schema()
    text = schema_to_spark(s).json()
    assert schema_from_spark(T.StructType.fromJson(json.loads(text))) == s


def test_keyword_arguments_override_recorded_info() -> None:
    back = schema_from_spark(
        schema_to_spark(sample_schema()), version_id="20250101000000000", max_column_id=99
    )
    assert back.version_id == "20250101000000000"
    assert back.max_column_id == 99
    assert back.fields == sample_schema().fields


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas())
def test_round_trip_is_identity(s: Schema) -> None:
    spark = schema_to_spark(s)
    assert schema_from_spark(spark) == s
    assert schema_from_spark(T.StructType.fromJson(json.loads(spark.json()))) == s


# ----------------------------------------------------------------------------- fresh IDs
def test_plain_struct_type_gets_pre_order_ids() -> None:
    plain = T.StructType(
        [
            sf("a", T.IntegerType(), False),
            sf(
                "b",
                T.StructType(
                    [
                        sf("c", T.ArrayType(T.StructType([sf("d", T.StringType())]))),
                        sf("e", T.MapType(T.StringType(), T.ArrayType(T.LongType(), False))),
                    ]
                ),
            ),
            sf("f", T.VarcharType(10), comment="kept"),
        ]
    )
    want = Schema(
        (
            NestedField(1, "a", INT, False),
            NestedField(
                2,
                "b",
                StructType(
                    (
                        NestedField(
                            3,
                            "c",
                            array_of(
                                StructType((NestedField(5, "d", STRING),)), element_id=4
                            ),
                        ),
                        NestedField(
                            6,
                            "e",
                            map_of(
                                STRING,
                                array_of(BIGINT, element_id=9, contains_null=False),
                                key_id=7,
                                value_id=8,
                            ),
                        ),
                    )
                ),
            ),
            NestedField(10, "f", STRING, comment="kept"),
        ),
        version_id=INITIAL_VERSION,
        max_column_id=10,
    )
    got = schema_from_spark(plain)
    assert got == want
    assert got.version_id == "00000000000000000"
    assert got.max_column_id == 10


def test_missing_ids_continue_after_highest_present() -> None:
    partial = T.StructType(
        [
            sf("a", T.IntegerType()),
            sf("b", T.ArrayType(T.IntegerType()), **fid(7)),
            sf("c", T.StringType(), **fid(3)),
        ]
    )
    got = schema_from_spark(partial)
    assert [f.id for f in got.fields] == [8, 7, 3]
    assert got.fields[1].type.element.id == 9
    assert got.max_column_id == 9


def test_missing_ids_never_reuse_recorded_max_column_id() -> None:
    spark = schema_to_spark(Schema((NestedField(1, "a", INT),), max_column_id=5))
    spark = spark.add("b", T.LongType())
    got = schema_from_spark(spark)
    assert [f.id for f in got.fields] == [1, 6]
    assert got.max_column_id == 6


def test_char_varchar_and_spark_metadata_noise() -> None:
    spark = T.StructType(
        [
            sf("c", T.CharType(3), **fid(1)),
            sf("v", T.StringType(), **fid(2, __CHAR_VARCHAR_TYPE_STRING="varchar(5)")),
        ]
    )
    got = schema_from_spark(spark)
    assert got.fields == (NestedField(1, "c", STRING), NestedField(2, "v", STRING))


@pytest.mark.parametrize(
    "spark_type",
    [
        T.DayTimeIntervalType(),
        T.YearMonthIntervalType(),
        T.CalendarIntervalType(),
        T.VariantType(),
        T.NullType(),
        T.StringType("UTF8_LCASE"),
    ],
)
def test_unsupported_types_name_the_column(spark_type: T.DataType) -> None:
    spark = T.StructType(
        [sf("ok", T.IntegerType()), sf("outer", T.StructType([sf("inner", spark_type)]))]
    )
    with pytest.raises(SchemaEvolutionError, match=r"outer\.inner") as info:
        schema_from_spark(spark)
    assert info.value.path == "outer.inner"


def test_unsupported_type_inside_array_names_the_element() -> None:
    spark = T.StructType([sf("xs", T.ArrayType(T.VariantType()))])
    with pytest.raises(SchemaEvolutionError, match=r"xs\.element"):
        schema_from_spark(spark)


def test_bad_ids_are_rejected() -> None:
    with pytest.raises(SchemaEvolutionError, match="'a'"):
        schema_from_spark(T.StructType([sf("a", T.IntegerType(), **fid(0))]))
    with pytest.raises(SchemaEvolutionError, match="Duplicate field IDs"):
        schema_from_spark(
            T.StructType([sf("a", T.IntegerType(), **fid(1)), sf("b", T.LongType(), **fid(1))])
        )


# ----------------------------------------------------------------------------- types
def test_type_helpers_round_trip_primitives() -> None:
    for t in (BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, STRING, BINARY, DATE,
              TIMESTAMP, TIMESTAMP_NTZ, DecimalType(38, 10)):
        assert type_from_spark(type_to_spark(t)) == t
    assert type_to_spark(DecimalType(7, 3)) == T.DecimalType(7, 3)
    assert type_to_spark(array_of(INT, contains_null=False)) == T.ArrayType(T.IntegerType(), False)
    assert type_from_spark(T.ArrayType(T.IntegerType(), False)) == array_of(
        INT, contains_null=False
    )


# ----------------------------------------------------------------------------- defaults
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-42L", -42),
        ("42S", 42),
        ("42Y", 42),
        ("CAST(1.5 AS DOUBLE)", decimal.Decimal("1.5")),
        ("CAST(1.5 AS FLOAT)", decimal.Decimal("1.5")),
        ("CAST(-12.34 AS DECIMAL(10,2))", decimal.Decimal("-12.34")),
        ("CAST(0E-10 AS DECIMAL(20,10))", decimal.Decimal(0)),
        ("'it\\'s'", "it's"),
        ("'a\\\\b'", "a\\b"),
        ('"dq"', "dq"),
        ("'tab\\there'", "tab\there"),
        ("X'0A'", b"\n"),
        ("x'00ff'", b"\x00\xff"),
        ("DATE '2020-01-01'", "2020-01-01"),
        ("TIMESTAMP '2020-01-01 00:00:00'", "2020-01-01 00:00:00"),
        ("TIMESTAMP_NTZ '2020-01-01 00:00:00.5'", "2020-01-01 00:00:00.5"),
        ("true", True),
        ("FALSE", False),
        ("NULL", None),
        ("CAST('NaN' AS DOUBLE)", "NaN"),
        ("'abc'", "abc"),
        ("1.5", decimal.Decimal("1.5")),
        ("1.5D", decimal.Decimal("1.5")),
        ("1.50BD", decimal.Decimal("1.50")),
        ("1e3", decimal.Decimal("1e3")),
    ],
)
def test_parse_sql_literal(text: str, value: object) -> None:
    assert parse_sql_literal(text) == value


@pytest.mark.parametrize("text", ["", "current_date()", "'open", "'a' 'b'", "X'0G'"])
def test_parse_sql_literal_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_sql_literal(text)


def test_nan_and_negative_infinity_defaults_round_trip() -> None:
    s = Schema((NestedField(1, "a", DOUBLE, default=float("nan"),
                            write_default=float("-inf")),))
    back = schema_from_spark(schema_to_spark(s)).fields[0]
    assert math.isnan(back.default)
    assert back.write_default == float("-inf")


def test_spark_written_plain_literals_are_read() -> None:
    spark = T.StructType(
        [
            sf("d", T.DoubleType(), **fid(1, EXISTS_DEFAULT="1.5D", CURRENT_DEFAULT="1.5")),
            sf("s", T.StringType(), **fid(2, CURRENT_DEFAULT="'abc'")),
            sf("t", T.TimestampType(), **fid(3, EXISTS_DEFAULT="TIMESTAMP '2020-01-01 10:00:00'")),
        ]
    )
    d, s, t = schema_from_spark(spark).fields
    assert (d.default, d.write_default) == (1.5, 1.5)
    assert s.write_default == "abc"
    assert t.default == dt.datetime(2020, 1, 1, 10)


def test_unreadable_default_names_the_column() -> None:
    spark = T.StructType([sf("d", T.DateType(), **fid(1, CURRENT_DEFAULT="current_date()"))])
    with pytest.raises(InvalidDefaultError, match="'d'"):
        schema_from_spark(spark)


@settings(max_examples=300, deadline=None)
@given(primitive_types().flatmap(lambda t: default_values(t).map(lambda v: (t, v))))
def test_sql_literal_parses_back(pair: tuple) -> None:
    from evonb.schema.defaults import coerce_default

    t, value = pair
    assert coerce_default(parse_sql_literal(sql_literal(value, t)), t) == value


# ----------------------------------------------------------------------------- import hygiene
def test_module_imports_without_pyspark() -> None:
    code = (
        "import sys; import evonb.schema.spark_convert, evonb.schema.arrow_convert, "
        "evonb.schema.avro_convert; "
        "bad = [m for m in ('pyspark', 'pyarrow', 'fastavro') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
