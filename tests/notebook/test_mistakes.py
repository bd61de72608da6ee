"""Mistakes in ``%evo`` magics: each is one readable message from one evonb error (never a
Python or Java trace), and the table is left as it was."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.errors import InvalidArgumentError, UnsupportedStatementError

pytestmark = pytest.mark.spark


def _refused(evo, line: str, cell: str | None = None) -> tuple[str, BaseException]:
    """The message shown for ``%evo line`` and the evonb error behind it."""
    with pytest.raises(UsageError) as info:
        evo(line, cell)
    return str(info.value), info.value.__context__


def _state(table) -> tuple:
    fresh = evonb.open_table(table.path)
    rows = sorted(tuple(r) for r in fresh.read().collect())
    return [c.instant for c in fresh.history()], rows, str(fresh.schema.struct)


BAD_OPTIONS = [
    ("clean trips --retain-commits abc", "--retain-commits", "a whole number of at least 1"),
    ("clean trips --retain-commits 0", "--retain-commits", "a whole number of at least 1"),
    ("clean trips --retain-commits 2.5", "--retain-commits", "a whole number of at least 1"),
    ("clean trips --retain-hours nan", "--retain-hours", "a finite number of at least 0"),
    ("clean trips --retain-hours=-1", "--retain-hours", "a finite number of at least 0"),
    ("clean trips --retain_hours inf", "--retain-hours", "a finite number of at least 0"),
    ("clean trips --keep-schema-versions 1e999", "--keep-schema-versions",
     "a whole number of at least 1"),
    ("read trips --limit 99999999999999999999999", "--limit",
     "a whole number from 0 to 2147483647"),
    ("read trips --limit -1", "--limit", "a whole number from 0 to 2147483647"),
    ("sql --limit 99999999999999999999999 select * from trips", "--limit",
     "a whole number from 0 to 2147483647"),
    ("sql --limit ten select * from trips", "--limit", "a whole number from 0 to 2147483647"),
]


def test_a_bad_numeric_option_names_the_option_and_its_range(evo, trips):
    before = _state(trips)
    for line, option, accepts in BAD_OPTIONS:
        message, cause = _refused(evo, line)
        assert type(cause) is InvalidArgumentError, line
        assert cause.name == option
        assert message.startswith(f"{option} must be {accepts}, not "), message
        assert f"Hint: give {option} {accepts}" in message
        assert "Traceback" not in message and "Exception" not in message
    assert _state(trips) == before


def test_good_numeric_options_still_work(evo, trips):
    preview = evo("read trips --limit 2")
    assert len(preview.pandas) == 2
    assert evo("clean trips --retain-commits 5 --retain-hours 1.5") is not None
    shown = evo("sql --limit 2147483647 select trip_id from trips")
    assert sorted(shown.pandas["trip_id"]) == [1, 2, 3]


def test_the_largest_limit_on_a_sorted_preview_keeps_the_session(evo, trips, spark):
    """Found by the magic fuzz test: a read is previewed sorted by key, and Spark's top-k of
    2147483647 rows allocated an array of twice that and took the JVM down."""
    preview = evo("read trips --limit 2147483647")
    assert sorted(preview.pandas["trip_id"]) == [1, 2, 3] and not preview.more
    shown = evo("sql --limit 2147483647 select trip_id from trips order by trip_id desc")
    assert list(shown.pandas["trip_id"]) == [3, 2, 1]
    assert spark.range(3).count() == 3  # the session is still there
    assert spark.conf.get("spark.sql.execution.topKSortFallbackThreshold", None) in (
        None, str(2**31 - 16))  # the preview's setting does not outlive it


CHANGES = [
    ("TRUNCATE TABLE trips", "TRUNCATE", "DELETE FROM trips"),
    ("ALTER TABLE trips ADD COLUMNS (x int)", "ALTER", "%evo alter table trips"),
    ("CREATE OR REPLACE TEMP VIEW trips AS SELECT 1 AS x", "CREATE", "%evo create table"),
]


def test_sql_that_changes_an_evonb_table_in_other_ways_is_refused(evo, trips):
    before = _state(trips)
    for statement, kind, instead in CHANGES:
        message, cause = _refused(evo, f"sql {statement}")
        assert type(cause) is UnsupportedStatementError, statement
        assert (cause.statement, cause.table) == (kind, "trips")
        assert message.startswith(f"%evo sql does not run {kind} on the evonb table 'trips'")
        assert "Nothing was changed" in message
        assert instead in message
        assert "INTERNAL_ERROR" not in message and "JVM" not in message
    assert _state(trips) == before


def test_drop_table_without_purge_is_refused(evo, trips):
    from evonb.errors import SQLStatementError

    before = _state(trips)
    for statement in ("DROP TABLE trips", "drop table if exists TRIPS"):
        message, cause = _refused(evo, f"sql {statement}")
        assert type(cause) is SQLStatementError, statement
        assert "add PURGE" in message and "data and its whole history" in message
    assert _state(trips) == before


def test_a_select_mentioning_change_words_still_runs(evo, trips):
    shown = evo("sql -- drop table trips\nSELECT trip_id, 'delete from trips' AS note "
                "FROM trips /* insert into trips */ WHERE fare > 10")
    assert sorted(shown.pandas["trip_id"]) == [1, 3]
    assert set(shown.pandas["note"]) == {"delete from trips"}


def test_create_at_a_location_that_cannot_be_created(evo, warehouse):
    from evonb.errors import TableLocationError

    message, cause = _refused(evo, "create table t (id bigint) location '/proc/nope'")
    assert type(cause) is TableLocationError
    assert message.startswith("Cannot create a table at /proc/nope: No such file or directory")
    assert "choose a folder you can create and write" in message
    assert "Traceback" not in message
    assert list(warehouse.iterdir()) == []
    _, cause = _refused(evo, "read t")
    assert type(cause) is evonb.TableNotFoundError  # nothing was remembered under the name
