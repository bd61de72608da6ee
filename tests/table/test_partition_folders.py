"""The spelling of partition values in folder names (pure Python): Spark's, one per value."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from evonb.errors import DataValidationError
from evonb.table.fileio_base import object_key
from evonb.table.partition_folders import (
    NULL_FOLDER,
    check_folder_bytes,
    check_key_bytes,
    escape,
    floating_text,
    folder_value,
    instant_text,
    timestamp_text,
)

NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize(("value", "single", "text"), [
    (1e20, False, "1.0E20"), (1e7, False, "1.0E7"), (9999999.5, False, "9999999.5"),
    (100.0, False, "100.0"), (0.001, False, "0.001"), (1e-4, False, "1.0E-4"),
    (-1.25e-5, False, "-1.25E-5"), (123.456, False, "123.456"),
    (1.7976931348623157e308, False, "1.7976931348623157E308"), (0.0, False, "0.0"),
    (-0.0, False, "-0.0"), (math.nan, False, "NaN"), (math.inf, False, "Infinity"),
    (-math.inf, False, "-Infinity"), (0.10000000149011612, True, "0.1"),
    (3.4028234663852886e38, True, "3.4028235E38"), (16777216.0, True, "1.6777216E7"),
])
def test_floating_point_numbers_as_java_prints_them(value: float, single: bool, text: str
                                                    ) -> None:
    assert floating_text(value, single) == text


def test_timestamps_name_their_utc_time_and_wall_clock_times_stay() -> None:
    instant = datetime.datetime(2020, 1, 1, 0, 0, tzinfo=NEW_YORK)  # 05:00 UTC
    assert timestamp_text(instant) == "2020-01-01 05:00:00"
    assert timestamp_text(instant.astimezone(datetime.UTC)) == "2020-01-01 05:00:00"
    assert timestamp_text(datetime.datetime(2020, 1, 1, 5, 0, 0, 120_000)) == \
        "2020-01-01 05:00:00.12"
    assert timestamp_text(datetime.datetime(999, 12, 31, 23, 59, 59, 1)) == \
        "0999-12-31 23:59:59.000001"
    # a daylight-saving fold: the two 01:30s in New York are two instants, two folders
    first = datetime.datetime(2021, 11, 7, 1, 30, tzinfo=NEW_YORK, fold=0)
    second = datetime.datetime(2021, 11, 7, 1, 30, tzinfo=NEW_YORK, fold=1)
    assert timestamp_text(first) == "2021-11-07 05:30:00"
    assert timestamp_text(second) == "2021-11-07 06:30:00"


def test_folder_values_of_every_kind() -> None:
    assert folder_value(None) == NULL_FOLDER
    assert folder_value("") == NULL_FOLDER  # as Spark's writer files an empty string
    assert folder_value(True) == "true" and folder_value(False) == "false"
    assert folder_value(-3) == "-3"
    assert folder_value(Decimal("1.50")) == "1.50"
    assert folder_value(Decimal("1E-7")) == "0.0000001"  # plain digits, as Spark casts it
    assert folder_value(datetime.date(2024, 1, 31)) == "2024-01-31"
    assert folder_value(datetime.datetime(2020, 1, 1, tzinfo=NEW_YORK)) == \
        "2020-01-01 05%3A00%3A00"
    assert folder_value(0.10000000149011612, single=True) == "0.1"
    assert folder_value(0.10000000149011612) == "0.10000000149011612"
    assert folder_value("a/b:c d%é") == "a%2Fb%3Ac d%25é"


def test_escape_takes_hive_characters_only() -> None:
    assert escape("\x01\n\x1f\"#%'*/:=?\\\x7f{[]^") == (
        "%01%0A%1F%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5E")
    assert escape(" ,;@&$!()+-_.~<>|}`é€") == " ,;@&$!()+-_.~<>|}`é€"


def test_instant_text_reads_a_folder_as_utc_unless_it_has_an_offset() -> None:
    assert instant_text("2020-01-01 05:00:00") == "2020-01-01 05:00:00Z"
    assert instant_text("2020-01-01 05:00:00.12") == "2020-01-01 05:00:00.12Z"
    # folders an older writer named with an offset keep it
    assert instant_text("2020-01-01 05:00:00+00:00") == "2020-01-01 05:00:00+00:00"
    assert instant_text("2020-01-01 00:00:00-05:00") == "2020-01-01 00:00:00-05:00"


def test_a_folder_name_takes_at_most_255_bytes() -> None:
    check_folder_bytes("p", ("p", "__evo_p0"), 246)  # fits beside the longer name
    check_folder_bytes("p", ("p", "__evo_p0"), None)  # no value (all null): nothing to check
    with pytest.raises(DataValidationError, match=r"'p' has a value of 247 bytes .* the 246"):
        check_folder_bytes("p", ("p", "__evo_p0"), 247)
    with pytest.raises(DataValidationError, match=r"'région' .* the 241"):
        check_folder_bytes("région", ("région_long_", "__evo_p0"), 300)


@pytest.mark.parametrize(("path", "key"), [
    ("s3://bucket/a/b", "a/b"), ("s3a://bucket/a/b/", "a/b"), ("s3:/bucket/a", "a"),
    ("az:/container@account/x/y", "x/y"), ("s3://bucket", ""), ("/tmp/t", None)])
def test_object_key_is_the_path_in_its_bucket(path: str, key: str | None) -> None:
    assert object_key(path) == key


def test_a_data_file_key_takes_at_most_1024_bytes() -> None:
    # table key, "/", folders, "/", 128 bytes kept for a file's name
    check_key_bytes(["p"], "t" * 100, 1024 - 100 - 2 - 128)
    check_key_bytes(["p"], "é" * 50, 1024 - 100 - 2 - 128)  # bytes, not characters
    with pytest.raises(DataValidationError, match=r"Partition columns 'p', 'q': a folder of "
                       r"795 bytes .* table's key of 100 bytes .* key of 1025 bytes") as err:
        check_key_bytes(["p", "q"], "é" * 50, 1024 - 100 - 2 - 128 + 1)
    assert "prefix or a hash" in (err.value.hint or "")
