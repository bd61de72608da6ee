"""``%evo revert <table> to <commit|vN> [--preview]`` and ``%evo preview revert``: the diff of a
schema revert, committed or not, and its usage errors."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.notebook.commands.ddl import RevertWidget


@pytest.fixture
def people(evo: Any, warehouse: Any) -> Any:
    """v0 create; v1 drop email; v2 add email again (a new ID, 4)."""
    evo("create table people (id bigint not null, name string, email string) "
        "tblproperties (primaryKey = 'id')")
    evo("alter table people drop column email")
    evo("alter table people add columns (email string)")
    return warehouse / "people"


def test_revert_commits_and_shows_the_diff(evo, people):
    widget = evo("revert people to v0")
    assert isinstance(widget, RevertWidget)
    assert widget.revert.committed and widget.revert.restored == (3,)
    assert [str(c) for c in widget.diff] == ["added    3: email (string)",
                                             "dropped  4: email (string)"]
    assert widget.labels == ("before", "after: v0's fields, new version v3")
    text = widget.fallback_text()
    assert text.startswith("Revert people to v0\nReverts the schema to v0 (00000000000000000). "
                           "Restored: email (ID 3)")
    assert "Removed: email (ID 4). Metadata only: no data file was rewritten." in text
    assert "added    3: email (string)" in text
    t = evonb.open_table(people)
    assert t.schema.field_ids() == [1, 2, 3] and t.schema.max_column_id == 4
    assert t.history()[-1].operation == "revert"


def test_preview_commits_nothing(evo, people):
    before = len(evonb.open_table(people).history())
    for line in ("revert people to v0 --preview", "preview revert people to @0"):
        widget = evo(line)
        assert not widget.revert.committed
        assert widget.labels == ("now", "after the revert to v0 (not committed)")
        assert widget.diff.kinds == ["added", "dropped"]
        assert widget.fallback_text().endswith(
            "dropped  4: email (string)") and "Nothing was committed." in widget.fallback_text()
    t = evonb.open_table(people)
    assert len(t.history()) == before and t.schema.find_id("email") == 4


def test_refusals_are_usage_errors(evo, people):
    with pytest.raises(UsageError, match=r"Nothing to revert: v2 \(\d{17}\) is the current "
                                         "schema of table 'people'"):
        evo("revert people to v2")
    with pytest.raises(UsageError, match=r"No such schema version: 'v7'"):
        evo("revert people to v7")
    with pytest.raises(UsageError, match=r"No such commit position: '@9'"):
        evo("revert people to @9")


def test_usage_errors(evo, people):
    with pytest.raises(UsageError, match=r"Missing table name\. Usage: %evo revert <table> to "):
        evo("revert")
    with pytest.raises(UsageError, match=r"Name the schema version or commit to revert to\. "
                                         r"Usage: %evo revert"):
        evo("revert people")
    with pytest.raises(UsageError, match="'to' needs a value"):
        evo("revert people to")
    with pytest.raises(UsageError, match="Unexpected words: 'v0 v0'"):
        evo("revert people v0 v0")
    with pytest.raises(UsageError, match="Unknown option --dry"):
        evo("revert people to v0 --dry")


def test_help_lists_revert(ip, capsys):
    ip.run_line_magic("evo", "help")
    out = capsys.readouterr().out
    assert ("  revert    make an older schema version's fields current again; shows the diff\n"
            "            %evo revert <table> to <commit|vN> [--preview]") in out
    assert "%evo preview revert <table> to <commit|vN>" in out
