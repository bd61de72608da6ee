"""Default values: conversion to the column's type, JSON form and SQL literals."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evonb.errors import EvoError, InvalidDefaultError, SchemaEvolutionError
from evonb.schema.defaults import coerce_default, default_from_json, default_to_json, sql_literal
from evonb.schema.types import (
    BIGINT,
    BINARY,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    PRIMITIVES,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    DecimalType,
    StructType,
    array_of,
    map_of,
)
from tests.schema.strategies import decimal_types, default_values

D = decimal.Decimal
UTC2 = dt.timezone(dt.timedelta(hours=2))


# -------------------------------------------------------------------------- accepted
@pytest.mark.parametrize(
    ("value", "t", "expected"),
    [
        (5, INT, 5),
        (" 42 ", INT, 42),
        ("-7", TINYINT, -7),
        (3.0, BIGINT, 3),
        (D("12"), SMALLINT, 12),
        (D("12.000"), SMALLINT, 12),
        (-128, TINYINT, -128),
        (127, TINYINT, 127),
        (-(2**15), SMALLINT, -(2**15)),
        (2**31 - 1, INT, 2**31 - 1),
        (-(2**63), BIGINT, -(2**63)),
        (2**63 - 1, BIGINT, 2**63 - 1),
        (1.5, DOUBLE, 1.5),
        (2, DOUBLE, 2.0),
        ("1e3", DOUBLE, 1000.0),
        (D("0.25"), FLOAT, 0.25),
        ("inf", DOUBLE, math.inf),
        ("-Infinity", FLOAT, -math.inf),
        (3.4e38, FLOAT, 3.4e38),
        ("1.5", DecimalType(5, 2), D("1.50")),
        (1.5, DecimalType(5, 2), D("1.50")),
        (7, DecimalType(3, 0), D("7")),
        (D("999.99"), DecimalType(5, 2), D("999.99")),
        (D("-999.99"), DecimalType(5, 2), D("-999.99")),
        ("0.1", DecimalType(1, 1), D("0.1")),
        (0, DecimalType(38, 38), D("0")),
        ("1.230", DecimalType(4, 2), D("1.23")),
        (True, BOOLEAN, True),
        ("FALSE", BOOLEAN, False),
        (" true ", BOOLEAN, True),
        ("abc", STRING, "abc"),
        ("", STRING, ""),
        (12, STRING, "12"),
        (1.5, STRING, "1.5"),
        (D("1.50"), STRING, "1.50"),
        (True, STRING, "true"),
        (dt.date(2020, 1, 2), STRING, "2020-01-02"),
        (b"\x00\xff", BINARY, b"\x00\xff"),
        (bytearray(b"ab"), BINARY, b"ab"),
        ("é", BINARY, "é".encode()),
        (dt.date(2020, 2, 29), DATE, dt.date(2020, 2, 29)),
        ("2020-02-29", DATE, dt.date(2020, 2, 29)),
        ("2020-01-02 03:04:05", TIMESTAMP, dt.datetime(2020, 1, 2, 3, 4, 5)),
        (dt.date(2020, 1, 2), TIMESTAMP, dt.datetime(2020, 1, 2)),
        (dt.datetime(2020, 1, 2, tzinfo=UTC2), TIMESTAMP, dt.datetime(2020, 1, 2, tzinfo=UTC2)),
        (dt.datetime(2020, 1, 2, 3, tzinfo=UTC2), TIMESTAMP_NTZ, dt.datetime(2020, 1, 2, 3)),
        ("2021-06-07T08:09:10.000001", TIMESTAMP_NTZ, dt.datetime(2021, 6, 7, 8, 9, 10, 1)),
    ],
)
def test_coerce_default_accepts(value, t, expected) -> None:
    out = coerce_default(value, t, path="c")
    assert out == expected
    assert type(out) is type(expected)
    if isinstance(expected, D):
        assert out.as_tuple().exponent == -t.scale  # quantized to the column's scale


@pytest.mark.parametrize("t", [*PRIMITIVES.values(), DecimalType(10, 2)])
def test_none_is_no_default(t) -> None:
    assert coerce_default(None, t) is None


@pytest.mark.parametrize(
    ("value", "t", "reason"),
    [
        (True, INT, "a boolean is not a number"),
        ("abc", INT, "invalid literal for int()"),
        ("1.5", INT, "invalid literal for int()"),
        (1.5, BIGINT, "not a whole number"),
        (D("2.5"), INT, "not a whole number"),
        (math.inf, INT, "cannot convert float infinity to integer"),
        (128, TINYINT, "out of range -128..127"),
        (-129, TINYINT, "out of range -128..127"),
        (2**15, SMALLINT, "out of range -32768..32767"),
        (2**31, INT, "out of range -2147483648..2147483647"),
        (2**63, BIGINT, "out of range"),
        (b"1", INT, "expected a whole number, got bytes"),
        (False, DOUBLE, "a boolean is not a number"),
        ("x", DOUBLE, "could not convert string to float"),
        (dt.date(2020, 1, 1), DOUBLE, "expected a number, got date"),
        (3.5e38, FLOAT, "out of range for float"),
        ("1.234", DecimalType(5, 2), "more than 2 digits after the point"),
        (1000, DecimalType(5, 2), "more than 3 digits before the point"),
        ("1", DecimalType(1, 1), "more than 0 digits before the point"),
        ("NaN", DecimalType(5, 2), "not a finite number"),
        ("1e100", DecimalType(38, 2), ""),
        ("abc", DecimalType(5, 2), ""),
        (True, DecimalType(5, 2), "expected a number, got bool"),
        ("yes", BOOLEAN, "expected true or false, got 'yes'"),
        (1, BOOLEAN, "expected true or false, got 1"),
        (b"x", STRING, "expected a string, got bytes"),
        (5, BINARY, "expected bytes, got int"),
        (dt.datetime(2020, 1, 1), DATE, "a timestamp is not a date"),
        ("2020-13-01", DATE, "month must be in 1..12"),
        (20200101, DATE, "expected a date, got int"),
        ("tomorrow", TIMESTAMP, "Invalid isoformat string"),
        (5, TIMESTAMP_NTZ, "expected a timestamp, got int"),
        ("x", StructType(()), "columns of type struct<> take no default"),
        ("x", array_of(STRING), "columns of type array<string> take no default"),
        ("x", map_of(STRING, STRING), "columns of type map<string,string> take no default"),
    ],
)
def test_coerce_default_rejects_naming_the_column(value, t, reason: str) -> None:
    with pytest.raises(InvalidDefaultError) as exc:
        coerce_default(value, t, path="loc.alt")
    err = exc.value
    assert isinstance(err, SchemaEvolutionError) and isinstance(err, EvoError)
    shown = str(value) if isinstance(value, D) else repr(value)  # D("2.5") as 2.5
    assert err.message.startswith(f"Default {shown} does not convert to {t} for column 'loc.alt': ")
    assert reason in err.message
    assert (err.path, err.new) == ("loc.alt", value)
    assert err.hint == ("leave DEFAULT out; a struct's members can take defaults" if t.is_nested
                        else f"give a literal of type {t}")  # no literal of a nested type is


def test_a_number_literal_is_shown_as_written() -> None:
    """A DDL number literal reads as a Decimal; the message showed ``Decimal('1.5')``."""
    with pytest.raises(InvalidDefaultError) as exc:
        coerce_default(D("1.5"), INT, path="a")
    assert exc.value.message == ("Default 1.5 does not convert to int for column 'a': "
                                 "not a whole number")


def test_coerce_default_without_a_path() -> None:
    with pytest.raises(InvalidDefaultError) as exc:
        coerce_default("x", INT)
    assert exc.value.message.startswith("Default 'x' does not convert to int: ")
    assert exc.value.path is None


# ------------------------------------------------------------------------------ JSON
@pytest.mark.parametrize(
    ("value", "t", "as_json"),
    [
        (True, BOOLEAN, True),
        (-3, TINYINT, -3),
        (2**40, BIGINT, 2**40),
        (1.5, FLOAT, 1.5),
        (math.inf, DOUBLE, "inf"),
        (-math.inf, DOUBLE, "-inf"),
        (D("12.34"), DecimalType(10, 2), "12.34"),
        (D("0E-38"), DecimalType(38, 38), "0E-38"),
        ("it's", STRING, "it's"),
        (b"\x0a\xff", BINARY, "Cv8="),
        (b"", BINARY, ""),
        (dt.date(2020, 2, 29), DATE, "2020-02-29"),
        (dt.datetime(2020, 1, 2, 3, 4, 5, 6), TIMESTAMP, "2020-01-02T03:04:05.000006"),
        (dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC2), TIMESTAMP, "2020-01-02T03:04:05+02:00"),
        (dt.datetime(2021, 6, 7, 8, 9, 10), TIMESTAMP_NTZ, "2021-06-07T08:09:10"),
        (None, INT, None),
    ],
)
def test_default_json_form(value, t, as_json) -> None:
    assert default_to_json(value, t) == as_json
    back = default_from_json(as_json, t)
    assert back == value
    assert type(back) is type(value)


def test_nan_default_json_form() -> None:
    assert default_to_json(math.nan, DOUBLE) == "nan"
    assert math.isnan(default_from_json("nan", DOUBLE))


_SOME_TYPES = st.sampled_from([t for t in PRIMITIVES.values()]) | decimal_types()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_default_json_round_trip(data: st.DataObject) -> None:
    t = data.draw(_SOME_TYPES, label="type")
    with decimal.localcontext(prec=80):
        value = data.draw(default_values(t), label="value")
    value = coerce_default(value, t)
    back = default_from_json(default_to_json(value, t), t)
    assert back == value
    assert type(back) is type(value)
    assert coerce_default(back, t) == back  # a converted default converts to itself


# ---------------------------------------------------------------------- SQL literals
@pytest.mark.parametrize(
    ("value", "t", "literal"),
    [
        (None, INT, "NULL"),
        (True, BOOLEAN, "true"),
        (False, BOOLEAN, "false"),
        (-3, TINYINT, "-3Y"),
        (300, SMALLINT, "300S"),
        (42, INT, "42"),
        (2**40, BIGINT, "1099511627776L"),
        (1.5, FLOAT, "CAST(1.5 AS FLOAT)"),
        (-0.25, DOUBLE, "CAST(-0.25 AS DOUBLE)"),
        (1e300, DOUBLE, "CAST(1e+300 AS DOUBLE)"),
        (math.inf, DOUBLE, "CAST('Infinity' AS DOUBLE)"),
        (-math.inf, FLOAT, "CAST('-Infinity' AS FLOAT)"),
        (math.nan, DOUBLE, "CAST('NaN' AS DOUBLE)"),
        (D("12.34"), DecimalType(10, 2), "CAST(12.34 AS DECIMAL(10,2))"),
        (D("-7"), DecimalType(3, 0), "CAST(-7 AS DECIMAL(3,0))"),
        # Never exponent notation, which Spark would read as a double (losing digits).
        (D("0E-10"), DecimalType(20, 10), "CAST(0.0000000000 AS DECIMAL(20,10))"),
        (D("1.2345678901234567890123E-7"), DecimalType(38, 29),
         "CAST(0.00000012345678901234567890123 AS DECIMAL(38,29))"),
        ("it's a \\ test", STRING, "'it\\'s a \\\\ test'"),
        ("", STRING, "''"),
        (b"\x0a\xff", BINARY, "X'0AFF'"),
        (dt.date(2020, 2, 29), DATE, "DATE '2020-02-29'"),
        (dt.datetime(2020, 1, 2, 3, 4, 5, 6), TIMESTAMP, "TIMESTAMP '2020-01-02 03:04:05.000006'"),
        (dt.datetime(2021, 6, 7, 8, 9, 10), TIMESTAMP_NTZ, "TIMESTAMP_NTZ '2021-06-07 08:09:10'"),
    ],
)
def test_sql_literal(value, t, literal: str) -> None:
    assert sql_literal(value, t) == literal


def test_sql_literal_of_a_nested_type_is_an_error() -> None:
    with pytest.raises(TypeError, match="take no default"):
        sql_literal("x", StructType(()))
