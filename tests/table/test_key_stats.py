"""Record-key statistics without Spark: taking them from Parquet footers, their JSON form, and
the pruning rule (only a provably disjoint range skips a file)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

from evonb.schema.schema import Schema
from evonb.schema.types import (
    BIGINT,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    DecimalType,
)
from evonb.table.key_stats import (
    KeyRange,
    comparable,
    footer_stats,
    key_columns,
    may_hold,
    no_key_in_two,
    prune,
    stats_from_json,
    stats_to_json,
)
from evonb.table.layout import derive_layout
from evonb.table.snapshot import DataFile


def _footer(tmp_path, table, **kw):
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, **kw)
    return pq.read_metadata(path)


def test_footer_range_over_row_groups(tmp_path):
    t = pa.table({"id": pa.array([7, 9, 5, 1, 3, 2], pa.int64()),
                  "s": ["b", "c", "a", "é", "z", "A"]})
    md = _footer(tmp_path, t, row_group_size=3)
    assert md.num_row_groups == 2
    cols = {1: ("id", BIGINT), 2: ("s", STRING)}
    assert footer_stats(md, cols) == ((1, 1, 9), (2, "A", "é"))


def test_footer_skips_null_row_groups_and_drops_unknown_ones(tmp_path):
    t = pa.table({"id": pa.array([None, None, 4, 8], pa.int64())})
    md = _footer(tmp_path, t, row_group_size=2)
    assert footer_stats(md, {1: ("id", BIGINT)}) == ((1, 4, 8),)
    md = _footer(tmp_path, t, row_group_size=2, write_statistics=False)
    assert footer_stats(md, {1: ("id", BIGINT)}) is None
    md = _footer(tmp_path, pa.table({"id": pa.array([None], pa.int64())}))
    assert footer_stats(md, {1: ("id", BIGINT)}) is None
    md = _footer(tmp_path, pa.table({"other": [1]}))
    assert footer_stats(md, {1: ("id", BIGINT)}) is None


def test_footer_values_in_json_form(tmp_path):
    t = pa.table({
        "d": pa.array([dt.date(2026, 1, 2), dt.date(2025, 5, 6)]),
        "n": pa.array([Decimal("1.50"), Decimal("-2.25")], pa.decimal128(9, 2)),
        "ts": pa.array([dt.datetime(2026, 1, 1, 10), dt.datetime(2026, 1, 1, 9)],
                       pa.timestamp("us")),
        "b": pa.array([b"\xff", b"\x00"], pa.binary()),
    })
    md = _footer(tmp_path, t)
    cols = {1: ("d", DATE), 2: ("n", DecimalType(9, 2)), 3: ("ts", TIMESTAMP_NTZ),
            4: ("b", STRING)}
    assert footer_stats(md, cols) == (
        (1, "2025-05-06", "2026-01-02"), (2, "-2.25", "1.50"),
        (3, "2026-01-01T09:00:00", "2026-01-01T10:00:00"))  # bytes are not a string's range


def test_json_form_and_malformed_statistics():
    stats = ((1, 0, 9), (3, "a", "b"))
    assert stats_from_json(stats_to_json(stats)) == stats
    for bad in (None, [], {"x": {"min": 1, "max": 2}}, {"1": [1, 2]}, {"1": {"min": 1}},
                {"1": {"min": [1], "max": 2}}, {}):
        assert stats_from_json(bad) is None
    f = DataFile(path="a.parquet", version="v", instant="1" * 17, key_stats=stats)
    assert DataFile.from_dict(f.to_dict()) == f
    assert "key_stats" not in DataFile(path="a", version="v", instant="1" * 17).to_dict()


def test_key_columns_use_physical_names_and_skip_unordered_types():
    s1 = Schema.from_ddl("id bigint not null, d double, name string")
    layout = derive_layout(s1)
    s2 = Schema.from_ddl("id bigint not null, d double, name string")
    renamed = Schema(fields=(s2.fields[0].replace(name="key"), *s2.fields[1:]))
    cols = key_columns([1, 2, 3], renamed, layout)
    assert cols == {1: ("id", BIGINT), 3: ("name", STRING)}  # double keys get none


def _versions(**types):
    schemas = {v: Schema.from_ddl(f"k {t} not null, other string") for v, t in types.items()}
    return lambda v: (schemas[v], None)


def _file(version, lo, hi, fid=1):
    return DataFile(path=f"{version}-{lo}.parquet", version=version, instant="1" * 17,
                    key_stats=((fid, lo, hi),))


def test_bounds_are_inclusive():
    versions = _versions(a="bigint")
    f = _file("a", 10, 20)
    for lo, hi, expected in [(20, 30, True), (0, 10, True), (21, 30, False), (0, 9, False),
                             (12, 13, True), (0, 100, True)]:
        assert may_hold(f, [KeyRange(1, BIGINT, lo, hi)], versions) is expected


def test_files_without_statistics_are_kept():
    versions = _versions(a="bigint")
    bare = DataFile(path="x.parquet", version="a", instant="1" * 17)
    other_column = _file("a", 0, 1, fid=2)
    ranges = [KeyRange(1, BIGINT, 100, 200)]
    assert prune([bare, other_column, _file("a", 0, 1)], ranges, versions) == [bare, other_column]
    assert prune([_file("a", 0, 1)], None, versions) == [_file("a", 0, 1)]


def test_widened_types_compare_by_value():
    versions = _versions(i="int", d="date", dec="decimal(5,1)", s="string")
    # an int file against bigint keys beyond the int range
    assert not may_hold(_file("i", 0, 2**31 - 1), [KeyRange(1, BIGINT, 2**31, 2**40)], versions)
    assert may_hold(_file("i", 0, 2**31 - 1), [KeyRange(1, BIGINT, 5, 2**40)], versions)
    # decimals: by value, whatever the scale
    dec = _file("dec", "1.5", "9.9")
    assert not may_hold(dec, [KeyRange(1, DecimalType(10, 3), Decimal("10.000"),
                                       Decimal("11"))], versions)
    assert may_hold(dec, [KeyRange(1, DecimalType(10, 3), Decimal("9.900"), Decimal("11"))],
                    versions)
    # a date file read as timestamp_ntz: its days are midnights
    day = _file("d", "2026-01-01", "2026-01-31")
    jan31_noon = dt.datetime(2026, 1, 31, 12)
    assert may_hold(day, [KeyRange(1, TIMESTAMP_NTZ, jan31_noon, jan31_noon)], versions) is False
    assert may_hold(day, [KeyRange(1, TIMESTAMP_NTZ, dt.datetime(2026, 1, 31),
                                   jan31_noon)], versions)
    # a string file under an int key (a new generation): its order says nothing
    assert may_hold(_file("s", "5", "6"), [KeyRange(1, INT, 100, 200)], versions)


def test_composite_ranges_prune_on_any_disjoint_column():
    schema = Schema.from_ddl("a string not null, b int not null")
    versions = {"v": (schema, None)}.get
    f = DataFile(path="f", version="v", instant="1" * 17,
                 key_stats=((1, "eu", "eu"), (2, 0, 49)))
    both = [KeyRange(1, STRING, "eu", "us"), KeyRange(2, INT, 40, 60)]
    assert may_hold(f, both, versions)
    assert not may_hold(f, [KeyRange(1, STRING, "fr", "us"), KeyRange(2, INT, 0, 60)], versions)
    assert not may_hold(f, [KeyRange(1, STRING, "eu", "us"), KeyRange(2, INT, 50, 60)], versions)


def test_no_key_in_two_files_only_when_their_ranges_are_disjoint():
    versions = _versions(a="bigint", i="int", s="string")
    key = {1: BIGINT}
    assert no_key_in_two([_file("a", 20, 29), _file("a", 0, 9), _file("a", 10, 19)], key,
                         versions)
    assert no_key_in_two([_file("a", 0, 9)], key, versions)  # one file holds a key once
    assert no_key_in_two([], key, versions)
    # touching bounds share a key; overlapping ranges may
    assert not no_key_in_two([_file("a", 0, 10), _file("a", 10, 19)], key, versions)
    assert not no_key_in_two([_file("a", 0, 9), _file("a", 20, 29), _file("a", 5, 25)], key,
                             versions)
    # a file without statistics, or with none for the key, may hold any key
    bare = DataFile(path="x.parquet", version="a", instant="1" * 17)
    assert not no_key_in_two([_file("a", 0, 9), bare], key, versions)
    assert not no_key_in_two([_file("a", 0, 9), _file("a", 20, 29, fid=2)], key, versions)
    # widened: an int file and a bigint file compare by value
    assert no_key_in_two([_file("i", 0, 9), _file("a", 10, 19)], key, versions)
    # a string file under a bigint key (a new generation): its order says nothing
    assert not no_key_in_two([_file("s", "0", "1"), _file("a", 10, 19)], key, versions)


def test_no_key_in_two_composite_files_when_one_column_separates_them():
    schema = Schema.from_ddl("a string not null, b int not null")
    versions = {"v": (schema, None)}.get
    types = {1: STRING, 2: INT}

    def f(a, b):
        return DataFile(path=f"{a}{b}", version="v", instant="1" * 17,
                        key_stats=((1, *a), (2, *b)))

    # same region, disjoint numbers: no key in both
    assert no_key_in_two([f(("eu", "eu"), (0, 49)), f(("eu", "eu"), (50, 99))], types,
                         versions)
    # disjoint regions, same numbers: no key in both
    assert no_key_in_two([f(("eu", "eu"), (0, 49)), f(("us", "us"), (0, 49))], types,
                         versions)
    # overlapping on both columns: a key may be in both
    assert not no_key_in_two([f(("eu", "fr"), (0, 49)), f(("de", "eu"), (40, 99))], types,
                             versions)
    # pairwise separated, each pair by another column: not shown (one column must do)
    assert not no_key_in_two([f(("eu", "eu"), (0, 49)), f(("eu", "eu"), (50, 99)),
                              f(("us", "us"), (0, 99))], types, versions)


def test_timestamps_compare_as_instants():
    versions = _versions(t="timestamp")
    f = _file("t", "2026-01-01T00:00:00+00:00", "2026-01-01T01:00:00+00:00")
    micros = comparable(dt.datetime(2026, 1, 1, 1, tzinfo=dt.UTC), TIMESTAMP)
    assert may_hold(f, [KeyRange(1, TIMESTAMP, micros, micros + 1)], versions)
    assert not may_hold(f, [KeyRange(1, TIMESTAMP, micros + 1, micros + 2)], versions)
    assert comparable(dt.datetime(1970, 1, 1, 0, 0, 1), TIMESTAMP) == 1_000_000


def test_floating_point_keys_have_no_statistics(tmp_path):
    md = _footer(tmp_path, pa.table({"k": [1.0, float("nan")]}))
    s = Schema.from_ddl(f"k {DOUBLE} not null")
    assert key_columns([1], s, derive_layout(s)) == {}
    assert footer_stats(md, key_columns([1], s, derive_layout(s))) is None
