"""Column lineage over hand-built schema histories: the exact events of every version, the
tree order of the columns, and the text and HTML forms."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evonb.schema.evolution import SchemaUpdate
from evonb.schema.lineage import Event, lineage, version_name
from evonb.schema.schema import Schema
from evonb.sql import ddl_to_update


def history(first: str, *steps: Callable[[SchemaUpdate], object]) -> list[Schema]:
    """The schema of ``first`` (DDL) and one version per step, ids 1, 2, ... as instants."""
    out = [Schema.from_ddl(first)]
    for n, step in enumerate(steps, 1):
        update = SchemaUpdate(out[-1], allow_set_not_null=True)
        step(update)
        out.append(update.apply(version_id=f"{20260101000000000 + n}"))
    return out


def test_version_names_are_ordinals():
    assert [version_name(i) for i in range(3)] == ["v0", "v1", "v2"]


def test_rename_drop_and_readd_with_the_same_name_is_a_new_column_id():
    schemas = history(
        "id bigint not null, rider string",
        lambda u: u.rename_column("rider", "passenger"),
        lambda u: u.drop_column("passenger"),
        lambda u: u.add_column("passenger", "string"),
    )
    lin = lineage(schemas, table_name="trips")
    assert lin.names == ("v0", "v1", "v2", "v3")
    assert lin.events() == [
        ("v0", 1, "born", "bigint"),
        ("v0", 2, "born", "string"),
        ("v1", 2, "renamed", "rider -> passenger"),
        ("v2", 2, "dropped", ""),
        ("v3", 3, "born", "string"),
    ]
    old, new = lin.column(2), lin.column(3)
    assert (old.name, old.dropped, old.present) == ("passenger", True,
                                                   (True, True, False, False))
    assert (new.name, new.dropped, new.present) == ("passenger", False,
                                                   (False, False, False, True))
    assert lin.column("PASSENGER").field_id == 2  # the first column of that last path


def test_nested_rename_inside_a_struct_in_a_list():
    schemas = history(
        "id bigint, points array<struct<x:double,y:double>>",
        lambda u: u.rename_column("points.element.x", "lon"),
    )
    lin = lineage(schemas)
    assert [(c.field_id, c.depth, c.name, c.path) for c in lin] == [
        (1, 0, "id", "id"),
        (2, 0, "points", "points"),
        (3, 1, "element", "points.element"),
        (4, 2, "lon", "points.element.lon"),
        (5, 2, "y", "points.element.y"),
    ]
    assert [e for e in lin.events() if e[0] == "v1"] == [("v1", 4, "renamed", "x -> lon")]
    assert lin.column(3).events[0] == (Event("born", "struct"),)


def test_type_widening_and_map_values():
    schemas = history(
        "n int, price float, m map<string,int>",
        lambda u: u.update_column_type("n", "bigint").update_column_type("price", "double"),
        lambda u: u.update_column_type("m.value", "bigint"),
    )
    lin = lineage(schemas)
    assert [e for e in lin.events() if e[0] != "v0"] == [
        ("v1", 1, "retyped", "int -> bigint"),
        ("v1", 2, "retyped", "float -> double"),
        ("v2", 5, "retyped", "int -> bigint"),
    ]
    assert [(c.path, c.depth) for c in lin][2:] == [("m", 0), ("m.key", 1), ("m.value", 1)]


def test_moves_defaults_nullability_and_docs():
    schemas = history(
        "id bigint, a int, b string",
        lambda u: u.move_first("b"),
        lambda u: u.set_default("a", 5).set_comment("b", "the b"),
        lambda u: u.require("a").set_comment("b", None),
        lambda u: u.make_optional("a").drop_default("a"),
    )
    assert [e for e in lineage(schemas).events() if e[0] != "v0"] == [
        ("v1", 3, "moved", "#2 -> #0"),
        ("v2", 2, "default", "write null -> 5"),
        ("v2", 3, "doc", "null -> 'the b'"),
        ("v3", 2, "required", ""),
        ("v3", 3, "doc", "'the b' -> null"),
        ("v4", 2, "default", "write 5 -> null"),
        ("v4", 2, "optional", ""),
    ]


def test_a_field_moved_into_a_struct_is_listed_under_its_last_parent():
    first = Schema.from_ddl("id bigint, loc struct<lat:double>, lon double")
    second = ddl_to_update(first, "ALTER TABLE t DROP COLUMN lon").apply(
        version_id="20260101000000001")
    third = ddl_to_update(second, "ALTER TABLE t ADD COLUMNS (loc.lon double)").apply(
        version_id="20260101000000002")
    lin = lineage([first, second, third])
    assert [(c.field_id, c.depth, c.path, c.dropped) for c in lin] == [
        (1, 0, "id", False), (2, 0, "loc", False), (3, 1, "loc.lat", False),
        (5, 1, "loc.lon", False), (4, 0, "lon", True)]
    assert ("v2", 5, "born", "double") in lin.events()


def test_a_dropped_field_id_that_comes_back_is_restored():
    first = Schema.from_ddl("id bigint, note string")
    second = SchemaUpdate(first).drop_column("note").apply(version_id="20260101000000001")
    third = first.with_version("20260101000000002")  # a schema reverted to the first one
    assert lineage([first, second, third]).events()[-2:] == [
        ("v1", 2, "dropped", ""), ("v2", 2, "restored", "string")]


def test_an_incomplete_history_starts_with_present_fields():
    schemas = history("id bigint", lambda u: u.add_column("x", "int"))
    lin = lineage(schemas[1:], names=["v4"], complete=False)
    assert lin.events() == [("v4", 1, "present", "bigint"), ("v4", 2, "present", "int")]
    with pytest.raises(ValueError, match="2 names for 1 schema versions"):
        lineage(schemas[1:], names=["v4", "v5"])


def test_text_form():
    schemas = history(
        "id bigint not null, rider string",
        lambda u: u.rename_column("rider", "passenger"),
        lambda u: u.drop_column("passenger"),
    )
    assert str(lineage(schemas, table_name="trips")).splitlines() == [
        "Lineage of trips: 2 columns, 3 schema versions (v0 .. v2)",
        "  v0 = 00000000000000000",
        "  v1 = 20260101000000001",
        "  v2 = 20260101000000002",
        "  1: id                      v0 born bigint",
        "  2: passenger               v0 born string; v1 renamed rider -> passenger; "
        "v2 dropped",
    ]


def test_html_grid_escapes_every_name_and_colours_cells_by_event():
    schemas = history(
        "id bigint, `<b>x</b>` string",
        lambda u: u.rename_column("`<b>x</b>`", "<script>alert(1)</script>"),
    )
    html = lineage(schemas, table_name="<i>t</i>")._repr_html_()
    assert "<script>" not in html and "<b>x</b>" not in html and "<i>t</i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "renamed &lt;b&gt;x&lt;/b&gt; -&gt; &lt;script&gt;" in html
    assert html.count('class="evonb-lineage-row"') == 2
    assert 'data-field-id="2"' in html
    assert 'data-version="v1" data-kinds="renamed"' in html
    assert 'data-version="v0" data-kinds="born"' in html
    assert "rgba(0,123,255,0.30)" in html  # the diff renderer's colour of a rename


def test_to_dict_lists_versions_and_events():
    schemas = history("id bigint", lambda u: u.rename_column("id", "key"))
    d = lineage(schemas).to_dict()
    assert d["versions"] == [{"name": "v0", "version_id": "00000000000000000"},
                             {"name": "v1", "version_id": "20260101000000001"}]
    assert d["columns"] == [{
        "field_id": 1, "name": "key", "path": "key", "type": "bigint", "parent_id": -1,
        "dropped": False, "events": [
            {"version": "v0", "kind": "born", "detail": "bigint"},
            {"version": "v1", "kind": "renamed", "detail": "id -> key"}]}]
