"""``%evo check`` (a table's health, JVM-free) and ``%evo help <command>`` (one command's usage
and examples; every example runs)."""

from __future__ import annotations

import re
import shutil

import pytest
from IPython.core.error import UsageError

from evonb.notebook.commands import COMMANDS, help_text
from evonb.notebook.commands.health import CHECK_USAGE
from evonb.table.check import CheckReport
from evonb.table.names import data_file_name

pytestmark = pytest.mark.spark


def test_help_of_one_command_shows_its_usage_and_examples(evo, capsys):
    evo("help check")
    shown = capsys.readouterr().out
    assert shown.startswith("%evo check: verify a table's timeline and files")
    assert CHECK_USAGE in shown and "%evo check trips --deep" in shown
    assert COMMANDS["cluster"].usage not in shown  # one command, not the list
    evo("help desc")  # an alias names its command
    assert capsys.readouterr().out.startswith("%evo describe: ")
    evo("help")
    everything = capsys.readouterr().out
    assert all(c.usage in everything for c in COMMANDS.values())
    assert "%evo help <command>" in everything
    evo("help help")
    assert capsys.readouterr().out == everything
    with pytest.raises(UsageError, match=r"Unknown %evo command 'chek'\. Did you mean 'check'"):
        evo("help chek")
    with pytest.raises(UsageError, match=r"Usage: %evo help \[<command>\]"):
        evo("help read sql")


def test_schema_is_describe_and_a_near_name_is_suggested(evo, trips):
    info = evo("schema trips")
    assert info.title == "Table trips" and "trip_id" in repr(info)
    with pytest.raises(UsageError, match="Did you mean 'describe'"):
        evo("describ trips")


def test_every_example_of_the_help_runs_in_order(evo, ip, capsys):
    """The examples are a session on two fresh tables: each runs as written, in the order of
    ``%evo help``, and together they leave the rows the statements among them make."""
    ran = 0
    for command in COMMANDS.values():
        if command.name == "spark":  # stop/restart would end this run's shared session
            continue
        assert command.examples, command.name
        for example in command.examples:
            assert example.startswith("%evo ") and example in help_text(command.name)
            evo(example.removeprefix("%evo "))
            ran += 1
        if command.name == "create":
            evo("sql insert into trips values (1, 'ann', 12.5, 1), (2, 'bob', 7.0, 2)")
            evo("sql insert into trips_mor values (1, 'a'), (2, 'b')")
            evo("sql update trips_mor set v = 'c' where id = 1")  # a log block to compact
    assert ran == sum(len(c.examples) for c in COMMANDS.values() if c.name != "spark")
    assert list(ip.user_ns["df"].columns) == ["id", "driver"]
    rows = evo("read trips")
    assert rows.pandas.to_dict("records") == [
        {"id": 1, "driver": "ANN", "fare": 12.5, "ts": 1},
        {"id": 2, "driver": "bob", "fare": 7.0, "ts": 2}]
    # the rollbacks undid the rewrite to float (and the revert had dropped tip)
    assert "fare: optional double" in repr(evo("describe trips")) and "tip" not in repr(rows)
    mor = evo("read trips_mor")
    assert mor.pandas.to_dict("records") == [{"id": 1, "v": "c"}, {"id": 2, "v": "b"}]
    assert evo("check trips").ok and evo("check trips_mor --deep").ok


def test_check_of_a_healthy_table(evo, ip, trips):
    result = evo("check trips --deep --to report")
    assert result.ok and isinstance(ip.user_ns["report"], CheckReport)
    assert ip.user_ns["report"] is result.report
    html = result._repr_html_()
    assert "check trips (every row read): OK, no problems" in html
    assert "live files" in html and "Problems" not in html
    assert repr(result) == result.report.render()
    assert result.report.stats["commits"] == 2


def test_check_finds_an_orphan_and_repair_removes_it(evo, trips):
    data = [f for f in trips.snapshot().files]
    live = trips.root / data[0].path
    orphan = live.with_name(data_file_name("19991231000000000", 0))  # an instant never used
    shutil.copyfile(live, orphan)
    found = evo("check trips")
    assert not found.ok
    kinds = [(p.kind, p.repairable) for p in found.report.problems]
    assert kinds == [("orphan-file", True)]
    html = found._repr_html_()
    assert "check trips: 1 problem (1 repairable: run %evo check trips --repair)" in html
    assert orphan.name in html and "Problems" in html
    assert orphan.exists()  # a check changes nothing
    repaired = evo("check trips --repair")
    assert repaired.ok and not orphan.exists() and live.exists()
    html = repaired._repr_html_()
    assert "Found before the repair" in html and "Repaired (1)" in html
    assert "OK, no problems, 1 repaired" in html
    assert sorted(tuple(r) for r in trips.read().collect()) == [
        (1, "alice", 12.5, "paris", 1), (2, "bob", 7.0, "oslo", 1), (3, "carol", 22.0, "paris", 1)]


def test_check_finds_a_truncated_data_file_that_repair_cannot_fix(evo, trips):
    live = trips.root / trips.snapshot().files[0].path
    size = live.stat().st_size
    with live.open("r+b") as fh:
        fh.truncate(size // 2)
    found = evo("check trips")
    assert not found.ok and all(not p.repairable for p in found.report.problems)
    assert any(p.path == trips.snapshot().files[0].path for p in found.report.problems)
    assert "repairable" not in found.summary()  # nothing to offer
    again = evo("check trips --repair")
    assert not again.ok and live.stat().st_size == size // 2  # data is never removed


@pytest.mark.parametrize(("line", "message"), [
    ("check", "Missing table name"),
    ("check trips --force", "--force needs --repair"),
    ("check trips --deep=yes", "--deep takes no value"),
    ("check trips --fast", "Unknown option --fast"),
    ("check trips other", "Unexpected words: 'other'"),
    ("check tripz", "did you mean 'trips'"),
    ("check ../trips", "would be a path, not a name"),
    ("check trips --to 1x", "Bad value for --to"),
])
def test_check_mistakes_are_one_message(evo, trips, line, message):
    with pytest.raises(UsageError, match=re.escape(message)) as info:
        evo(line)
    assert "Traceback" not in str(info.value)


def test_check_of_a_table_whose_config_is_damaged(evo, trips):
    """The table is located, not opened: a damaged config is a finding, not an error."""
    config = trips.root / ".evo" / "table.json"
    config.write_text("{not json")
    found = evo("check trips")
    assert [p.kind for p in found.report.problems] == ["corrupt-metadata"]
    assert ".evo/table.json" in found._repr_html_()
