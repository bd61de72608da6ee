"""``%evo lineage`` and schema versions named ``vN`` in the magics and the library: the exact
lineage of a small history, the names beside the instants, and the error for an unknown one."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

import evonb
import evonb.notebook.html as H
from evonb.errors import CommitNotFoundError
from evonb.notebook import SchemaDiffWidget
from evonb.notebook.display import TableInfo
from evonb.schema.lineage import Lineage

RIDES_DDL = "create table rides (id bigint not null, rider string, fare float, " \
            "stops array<struct<x:double,y:double>>) tblproperties (primaryKey = 'id')"


@pytest.fixture
def rides(evo: Any, warehouse: Any) -> Any:
    """A table with four schema versions: v1 renames rider, v2 widens fare and renames a
    field of the structs in the stops list, v3 drops passenger and adds it again (a new ID)."""
    evo(RIDES_DDL)
    evo("alter table rides rename column rider to passenger")
    evo("", "ALTER TABLE rides ALTER COLUMN fare TYPE double;\n"
            "ALTER TABLE rides RENAME COLUMN stops.element.x TO lon")
    evo("", "ALTER TABLE rides DROP COLUMN passenger;\n"
            "ALTER TABLE rides ADD COLUMNS (passenger string COMMENT 'who rode')")
    return evonb.open_table(warehouse / "rides")


def test_lineage_magic_lists_every_column_through_the_versions(evo, rides):
    lin = evo("lineage rides")
    assert isinstance(lin, Lineage)
    ids = rides.version_ids()
    assert len(ids) == 4 and lin.version_ids == tuple(ids)
    assert str(lin).splitlines() == [
        "Lineage of rides: 8 columns, 4 schema versions (v0 .. v3)",
        *(f"  v{n} = {v}" for n, v in enumerate(ids)),
        "  1: id                      v0 born bigint",
        "  2: passenger               v0 born string; v1 renamed rider -> passenger; "
        "v3 dropped",
        "  3: fare                    v0 born float; v2 retyped float -> double",
        "  4: stops                   v0 born array",
        "    5: element               v0 born struct",
        "      6: lon                 v0 born double; v2 renamed x -> lon",
        "      7: y                   v0 born double",
        "  8: passenger               v3 born string",
    ]
    html = lin._repr_html_()
    assert html.count('class="evonb-lineage-row"') == 8
    assert 'data-version="v2" data-kinds="retyped"' in html
    assert "renamed rider -&gt; passenger" in html
    assert str(rides.lineage()) == str(lin)


def test_lineage_usage_errors_and_help(evo, ip, capsys):
    with pytest.raises(UsageError, match=r"Missing table name. Usage: %evo lineage <table>"):
        evo("lineage")
    evo("create table solo (id bigint)")
    with pytest.raises(UsageError, match="Unexpected words: 'extra'"):
        evo("lineage solo extra")
    with pytest.raises(UsageError, match="tables in the warehouse: solo"):
        evo("lineage nosuch")
    ip.run_line_magic("evo", "help")
    out = capsys.readouterr().out
    assert "  lineage   every column's life through the schema versions v0..vN" in out
    assert "%evo lineage <table>" in out and "vN for the N-th schema version" in out


def test_versions_are_named_beside_their_instants(rides):
    ids = rides.version_ids()
    history = rides.history()
    assert [c.schema_name for c in history] == ["v0", "v1", "v2", "v3"]
    assert repr(history).splitlines()[2] == (
        f"  {history[1].instant} alter      schema v1 ({ids[1]}) +0/-0 files, 0 rows")
    assert "<td>v2</td>" in history._repr_html_()
    assert H.commit_line(history[2]).startswith(
        f"{history[2].instant} · alter · schema v2 ({ids[2]}) · ")
    assert ("schema version", f"v3 ({ids[3]})") in [
        (k, str(v)) for k, v in [r for r in _commit_rows(history[3])]]
    schemas = rides.schemas()
    assert schemas.names == ("v0", "v1", "v2", "v3")
    assert repr(schemas).splitlines()[1:3] == [
        f"  v0 {ids[0]}: struct<id:bigint,rider:string,fare:float,"
        "stops:array<struct<x:double,y:double>>>",
        f"  v1 {ids[1]}: struct<id:bigint,passenger:string,fare:float,"
        "stops:array<struct<x:double,y:double>>>",
    ]
    assert schemas.named("v2").version_id == ids[2]


def _commit_rows(commit: Any) -> list[tuple[str, str]]:
    """The key/value rows of :func:`H.commit_html`, read back from its cells."""
    import re

    cells = re.findall(r"<td[^>]*>(.*?)</td>", H.commit_html(commit))
    return list(zip(cells[::2], cells[1::2], strict=True))


def test_v_names_in_describe_and_diff(evo, rides):
    ids = rides.version_ids()
    old = evo("describe rides schema v0")
    assert isinstance(old, TableInfo) and old.title == "Table rides, schema v0"
    assert "2: rider: optional string" in repr(old)
    assert f"schema version: v0 ({ids[0]})" in repr(old)
    assert f"schema version: v3 ({ids[3]})" in repr(evo("describe rides"))
    assert "2: passenger" in repr(evo(f"describe rides schema {ids[1]}"))
    widget = evo("diff rides v0 v1")
    assert isinstance(widget, SchemaDiffWidget)
    assert [str(c) for c in widget.diff] == ["renamed  2: rider -> passenger"]
    assert widget.labels == ("before v0", "after v1")
    assert [str(c) for c in evo("diff rides V1 @1").diff] == []
    assert [c.kind for c in evo("diff rides v2").diff] == ["added", "dropped"]
    assert rides.diff("v1", "v2") == evo(f"diff rides {ids[1]} {ids[2]}").diff
    assert rides.resolve_schema(" v2 ").version_id == ids[2]
    assert rides.resolve_version("v3") == ids[3]
    with pytest.raises(UsageError, match="either 'as of'"):
        evo("describe rides as of @1 schema v0")


def test_an_unknown_version_name_is_an_evonb_error_naming_the_range(evo, rides):
    with pytest.raises(CommitNotFoundError, match=r"No such schema version: 'v99'") as err:
        rides.diff("v99")
    assert err.value.hint == "table 'rides' has 4 schema versions (v0 .. v3)"
    with pytest.raises(CommitNotFoundError, match="v99"):
        rides.resolve_schema("v99")
    with pytest.raises(UsageError, match=r"(?s)No such schema version: 'v99'.*\(v0 \.\. v3\)"):
        evo("describe rides schema v99")
    with pytest.raises(UsageError, match=r"\(v0 \.\. v3\)"):
        evo("diff rides v1 v4")


@pytest.mark.spark
def test_read_in_a_schema_named_by_version(evo, rides, spark):
    rides.write(spark.createDataFrame([(1, 9.5, [(1.0, 2.0)], "ann")],
                                      "id long, fare double, stops array<struct<lon:double,"
                                      "y:double>>, passenger string"))
    old = evo("read rides schema v0")
    assert list(old.pandas.columns) == ["id", "rider", "fare", "stops"]
    assert "in the schema of v0" in old.caption
    assert rides.read(schema="v1").columns == ["id", "passenger", "fare", "stops"]
    with pytest.raises(UsageError, match=r"has 4 schema versions \(v0 \.\. v3\)"):
        evo("read rides schema v9")
