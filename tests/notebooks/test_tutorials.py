"""Every tutorial notebook runs top to bottom on a fresh kernel and shows what it says."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.notebooks.conftest import NOTEBOOKS

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
NAMES = [p.name for p in NOTEBOOKS]


def _notebook(executed: dict[str, Any], name: str) -> Any:
    nb, error = executed[name]
    if error is not None:
        pytest.fail(f"{name} did not run to the end:\n{error}")
    return nb


def _cell(nb: Any, cell_id: str) -> Any:
    for cell in nb.cells:
        if cell.get("id") == cell_id:
            return cell
    raise AssertionError(f"no cell {cell_id!r}")


def _text(cell: Any) -> str:
    """The plain-text form of a cell's outputs (results, displays and printed text)."""
    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(out.data.get("text/plain", ""))
    return "\n".join(parts)


def _result(cell: Any) -> Any:
    results = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert results, f"cell {cell.id} shows no result"
    return results[-1]


def _table(cell: Any) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a preview (``%evo read``/``sql``): caption, header, rows."""
    lines = _result(cell).data["text/plain"].splitlines()[1:]
    lines = [ln for ln in lines if ln.strip() and ln != "(more rows not shown)"]
    return lines[0].split(), [ln.split() for ln in lines[1:]]


def _frame(cell: Any) -> tuple[list[str], list[list[str]]]:
    """Header and rows (without the index) of a pandas DataFrame result's text form."""
    lines = [ln for ln in _result(cell).data["text/plain"].splitlines() if ln.strip()]
    return lines[0].split(), [ln.split()[1:] for ln in lines[1:]]


def _changes(cell: Any) -> list[str]:
    """The change lines of a diff widget's text form (``renamed  2: a -> b``)."""
    text = _result(cell).data["text/plain"]
    return [ln.strip() for ln in text.splitlines() if ln.startswith("  ")]


# ------------------------------------------------------------------------------- all
def test_every_tutorial_is_there():
    assert NAMES == ["01-quickstart.ipynb", "02-schema-evolution-on-write.ipynb",
                     "03-schema-on-read.ipynb", "04-time-travel.ipynb",
                     "05-table-services.ipynb", "06-exploring-history.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAMES)
def test_notebooks_are_stored_without_outputs(path):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, cell.id


@pytest.mark.parametrize("name", NAMES)
def test_runs_top_to_bottom_with_errors_only_where_shown_on_purpose(executed, name):
    nb = _notebook(executed, name)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        expected = "raises-exception" in cell.metadata.get("tags", [])
        errors = [o for o in cell.outputs if o.output_type == "error"]
        stderr = "".join(o.text for o in cell.outputs
                         if o.output_type == "stream" and o.name == "stderr")
        assert not errors, f"{name} [{cell.id}]: {errors}"
        assert "Traceback" not in stderr and "\tat org.apache" not in stderr, stderr
        if expected:
            assert stderr.startswith("UsageError: "), f"{name} [{cell.id}]: {stderr!r}"
        assert cell.execution_count is not None


@pytest.mark.parametrize("name", NAMES)
def test_widgets_have_html_and_text_fallbacks(executed, name):
    nb = _notebook(executed, name)
    widgets = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
               if o.output_type in ("execute_result", "display_data") and WIDGET_MIME in o.data]
    assert widgets
    for out in widgets:
        assert out.data["text/html"].strip() and out.data["text/plain"].strip()
    assert "widgets" in nb.metadata  # widget state saved, for nbconvert's HTML export


# ------------------------------------------------------------------------- quickstart
def test_quickstart(executed):
    nb = _notebook(executed, "01-quickstart.ipynb")
    assert "state: running" in _text(_cell(nb, "spark"))
    assert "1: trip_id: required bigint" in _text(_cell(nb, "create"))
    assert _changes(_cell(nb, "alter")) == ["added    6: tip (double)",
                                            "renamed  2: rider -> passenger"]
    html = _result(_cell(nb, "alter")).data["text/html"]
    assert 'data-field-id="2"' in html and "renamed (was rider)" in html
    assert "Needs a rewrite: fare: double -> int" in _text(_cell(nb, "preview"))
    header, rows = _table(_cell(nb, "write-2"))
    assert header == ["trip_id", "passenger", "fare", "tip", "city", "ts", "payment"]
    assert [r[1] for r in rows] == ["alice", "bob", "carol", "dave"]
    history = _text(_cell(nb, "history"))
    assert "History of trips: 4 commits" in history
    header, rows = _table(_cell(nb, "time-travel"))
    assert header == ["trip_id", "rider", "fare", "city", "ts"]
    assert rows == [["1", "alice", "12.5", "paris", "1"], ["2", "bob", "7.0", "oslo", "1"],
                    ["3", "carol", "22.0", "paris", "1"]]
    header, rows = _table(_cell(nb, "time-travel-latest"))
    assert header[:4] == ["trip_id", "passenger", "fare", "tip"]
    assert [r[1:4] for r in rows] == [["alice", "12.5", "0.0"], ["bob", "7.0", "0.0"],
                                      ["carol", "22.0", "0.0"]]
    assert _changes(_cell(nb, "diff")) == ["added    6: tip (double)",
                                           "added    7: payment (string)",
                                           "renamed  2: rider -> passenger"]
    assert _table(_cell(nb, "sql"))[1] == [["oslo", "1", "11.0"], ["paris", "2", "34.5"],
                                          ["rome", "1", "17.0"]]
    assert [r[1] for r in _table(_cell(nb, "sql-as-of"))[1]] == ["alice", "carol"]


# ---------------------------------------------------------- Hudi's "Schema Evolution in Action"
def test_schema_evolution_on_write(executed):
    nb = _notebook(executed, "02-schema-evolution-on-write.ipynb")
    header, rows = _table(_cell(nb, "write-1"))
    assert header == ["rowId", "partitionId", "preComb", "name", "versionId", "intToLong"]
    assert [r[3] for r in rows] == ["bob", "john", "tom"]
    header, rows = _table(_cell(nb, "write-2"))
    assert header == ["rowId", "partitionId", "preComb", "name", "versionId", "intToLong",
                      "newField"]
    assert rows == [
        ["row_1", "part_0", "0", "bob", "v_0", "0", "NULL"],
        ["row_2", "part_0", "5", "john", "v_3", "3", "newField_1"],
        ["row_3", "part_0", "0", "tom", "v_0", "0", "NULL"],
        ["row_5", "part_0", "5", "maroon", "v_2", "2", "newField_1"],
        ["row_9", "part_0", "5", "michael", "v_2", "2", "newField_1"],
    ]
    assert _changes(_cell(nb, "diff")) == ["added    7: newField (string)",
                                           "retyped  6: intToLong: int -> bigint"]
    assert "6: intToLong: optional bigint" in _text(_cell(nb, "describe"))
    header, rows = _table(_cell(nb, "time-travel"))
    assert header[-1] == "intToLong" and len(rows) == 3
    assert "Refused: Incompatible column type in write: intToLong" in _text(_cell(nb, "refused"))


# ---------------------------------------------------------------------- schema on read
def test_schema_on_read(executed):
    nb = _notebook(executed, "03-schema-on-read.ipynb")
    assert _changes(_cell(nb, "add")) == ["added    10: address.zip (string)",
                                          "added    9: email (string)"]
    assert _changes(_cell(nb, "rename")) == ["renamed  2: name -> full_name",
                                             "renamed  5: address.city -> address.town"]
    renamed = _text(_cell(nb, "read-rename"))
    assert "'town': 'Oslo'" in renamed and "Grace" in renamed
    assert _changes(_cell(nb, "reorder")) == ["moved    9: email: position 5 -> 1"]
    assert _changes(_cell(nb, "drop")) == ["dropped  6: tags (array<string>)"]
    header, rows = _table(_cell(nb, "read-default"))
    assert header[-1] == "country"
    assert [r[-1] for r in rows] == ["NO", "NO", "SE"]
    assert [r[-2] for r in rows] == ["NULL", "NULL", "NULL"]  # the re-added tags
    assert "Needs a rewrite: score: bigint -> date" in _text(_cell(nb, "preview"))
    typo = _text(_cell(nb, "typo"))
    lines = typo.splitlines()
    at = lines.index("alter table people add columns (age innt)")
    assert lines[at + 1] == " " * 36 + "^"
    assert "did you mean 'full_name'?" in _text(_cell(nb, "unknown"))
    assert _changes(_cell(nb, "diff-all")) == [
        "added    9: email (string)", "added    10: address.zip (string)",
        "added    11: tags (string)", "added    12: country (string)",
        "dropped  6: tags (array<string>)", "renamed  2: name -> full_name",
        "renamed  5: address.city -> address.town", "retyped  8: score: int -> bigint"]
    assert "renamed   address.town" in _text(_cell(nb, "column-history"))


# ------------------------------------------------------------------------- time travel
def test_time_travel(executed):
    nb = _notebook(executed, "04-time-travel.ipynb")
    header, rows = _table(_cell(nb, "as-of-c1"))
    assert header == ["order_id", "item", "amount", "ts"]
    assert rows == [["1", "apple", "3", "1"], ["2", "pear", "5", "1"], ["3", "plum", "2", "1"]]
    _, rows = _table(_cell(nb, "as-of-c2"))
    assert [r[:3] for r in rows] == [["1", "apple", "3"], ["2", "pear", "6"],
                                     ["3", "plum", "2"], ["4", "fig", "1"]]
    header, rows = _table(_cell(nb, "as-of-c2-latest"))
    assert header == ["order_id", "item", "quantity", "ts", "note"]
    assert {r[-1] for r in rows} == {"NULL"}
    assert [r[1] for r in _table(_cell(nb, "as-of-time"))[1]] == [
        "apple", "pear", "plum", "fig", "kiwi"]
    assert [r[1] for r in _table(_cell(nb, "latest"))[1]] == ["pear", "plum", "fig", "kiwi"]
    _, rows = _table(_cell(nb, "incremental"))
    assert rows == [["2", "pear", "6", "2"], ["4", "fig", "1", "2"]]
    assert "|       5|kiwi|       4|  3|gift|" in _text(_cell(nb, "incremental-api"))
    assert _table(_cell(nb, "sql-as-of"))[1] == [["2", "pear", "5", "6"],
                                                ["3", "plum", "2", "2"]]
    assert "History of orders: 6 commits" in _text(_cell(nb, "history"))


# ---------------------------------------------------------------------- table services
def test_table_services(executed):
    nb = _notebook(executed, "05-table-services.ipynb")
    compact = _text(_cell(nb, "compact"))
    assert "compacting readings: done" in compact and "compact readings: done" in compact
    assert re.search(r"compact +schema \d+ \+\d+/-6 files, 6 rows", compact), compact
    assert "1 values do not fit (e.g. 30.5)" in _text(_cell(nb, "rewrite-refused"))
    assert "rewrite readings: done" in _text(_cell(nb, "rewrite"))
    _, rows = _table(_cell(nb, "read-rewritten"))
    assert [r[2] for r in rows] == ["20", "30", "21", "NULL", "22", "30"]
    assert "rollback readings: done" in _text(_cell(nb, "rollback"))
    assert [r[0] for r in _table(_cell(nb, "read-rolled-back"))[1]] == [
        "1", "2", "3", "4", "5", "6"]
    check = _result(_cell(nb, "check"))
    assert check.data["text/plain"].endswith("OK: no problems")
    assert "check readings (every row read): OK, no problems" in check.data["text/html"]
    history = _text(_cell(nb, "history"))
    for operation in ("compact", "rewrite", "rollback", "clean"):
        assert f" {operation} " in history


# ---------------------------------------------------------------------- exploring history
def test_exploring_history(executed):
    nb = _notebook(executed, "06-exploring-history.ipynb")
    lineage = _text(_cell(nb, "lineage"))
    assert "Lineage of rides: 6 columns, 4 schema versions (v0 .. v3)" in lineage
    lines = [ln.split(None, 2) for ln in lineage.splitlines() if ln.startswith("  ")
             and ln.split()[0].endswith(":")]
    assert [(i, name, life.strip()) for i, name, life in lines] == [
        ("1:", "ride_id", "v0 born bigint"),
        ("2:", "passenger", "v0 born string; v1 renamed rider -> passenger"),
        ("3:", "fare", "v0 born float; v1 retyped float -> double"),
        ("4:", "zone", "v0 born string; v2 dropped"),
        ("5:", "ts", "v0 born bigint"),
        ("6:", "zone", "v3 born int")]
    header, rows = _frame(_cell(nb, "arrow-v0"))
    assert header == ["ride_id", "rider", "fare", "zone", "ts"]
    assert rows == [["1", "alice", "12.5", "north", "1"], ["2", "bob", "7.0", "south", "1"],
                    ["3", "carol", "22.0", "north", "1"]]
    header, rows = _frame(_cell(nb, "arrow-latest"))
    assert header == ["ride_id", "passenger", "fare", "ts", "zone"]
    assert [r[1] for r in rows] == ["alice", "bob", "carol"] and {r[-1] for r in rows} == {"NaN"}
    diff = _text(_cell(nb, "diff-data"))
    assert re.search(r"DataDiff rides in schema v3: \d{17} -> \d{17}, by ride_id: "
                     r"4 added, 1 removed, 1 changed", diff), diff
    assert "- ride_id=1, passenger='alice'" in diff
    assert "~ ride_id=2: fare: 7.0 -> 8.5; ts: 1 -> 2" in diff
    preview = _text(_cell(nb, "revert-preview"))
    assert "Restored: zone (ID 4)" in preview and "Removed: zone (ID 6)" in preview
    assert "Nothing was committed" in preview
    assert _changes(_cell(nb, "revert")) == ["added    4: zone (string)",
                                             "dropped  6: zone (int)"]
    header, rows = _frame(_cell(nb, "read-reverted"))
    assert header == ["ride_id", "passenger", "zone"]
    assert rows == [["2", "bob", "south"], ["3", "carol", "north"], ["4", "dave", "east"],
                    ["5", "erin", "None"], ["6", "frank", "None"], ["7", "grace", "None"]]
    after = _text(_cell(nb, "lineage-after"))
    assert "5 schema versions (v0 .. v4)" in after
    assert re.search(r"4: zone +v0 born string; v2 dropped; v4 restored string", after), after
    assert re.search(r"6: zone +v3 born int; v4 dropped", after), after
    assert re.search(r"\d{17} revert +schema v4 ", _text(_cell(nb, "history")))
