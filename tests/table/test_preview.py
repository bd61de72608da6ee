"""``Table.preview_alter``: the diff and the cost of an ALTER, as ``%evo preview`` shows it;
a type change that needs a rewrite is reported, not raised."""

from __future__ import annotations

import pytest

import evonb
from evonb.errors import SchemaEvolutionError
from evonb.table.preview import AlterPreview

pytestmark = pytest.mark.spark


@pytest.fixture
def trips(spark, warehouse):
    t = evonb.create_table(warehouse / "trips", "id bigint not null, fare double, n int, ts bigint",
                           primary_key="id", precombine="ts")
    t.write(spark.createDataFrame([(1, 2.5, 3, 1)], "id bigint, fare double, n int, ts bigint"))
    return t


def test_a_type_change_that_needs_a_rewrite_is_previewed(trips):
    before = len(trips.history())
    preview = trips.preview_alter("ALTER TABLE trips ALTER COLUMN fare TYPE int")
    assert isinstance(preview, AlterPreview)
    assert preview.needs_rewrite and preview.cost == "needs a rewrite"
    assert [str(c) for c in preview.rewrites] == ["retyped  2: fare: double -> int"]
    assert [str(c) for c in preview] == ["retyped  2: fare: double -> int"]
    assert str(preview.after.find("fare").type) == "int"
    assert preview.note.startswith("Needs a rewrite: fare: double -> int is not a type change")
    assert "Table.rewrite(ddl)" in preview.note
    assert repr(preview).endswith("needs a rewrite: " + preview.note)
    assert repr(preview).startswith(
        f"SchemaDiff {trips.schema.version_id} -> (not committed): 1 change\n")
    assert "Needs a rewrite" in preview._repr_html_()
    assert len(trips.history()) == before and str(trips.schema.find("fare").type) == "double"


def test_a_rewrite_change_among_metadata_changes(trips):
    preview = trips.preview_alter("ALTER TABLE trips ALTER COLUMN fare TYPE int; "
                                  "ALTER TABLE trips RENAME COLUMN n TO count")
    assert preview.kinds == ["renamed", "retyped"]
    assert [c.old_path for c in preview.rewrites] == ["fare"]


def test_metadata_only_changes_say_so(trips):
    widened = trips.preview_alter("ALTER TABLE trips ALTER COLUMN n TYPE bigint")
    assert widened.cost == "metadata-only" and not widened.needs_rewrite
    assert widened.rewrites == ()
    assert widened.note == "Metadata only: no data file is touched. Nothing was committed."
    not_null = trips.preview_alter("ALTER TABLE trips ALTER COLUMN n SET NOT NULL")
    assert not_null.sets_not_null and not_null.note.startswith("Metadata only, after one scan")


def test_other_mistakes_still_raise(trips):
    with pytest.raises(SchemaEvolutionError, match="Key column 'ts' cannot be retyped"):
        trips.preview_alter("ALTER TABLE trips ALTER COLUMN ts TYPE int")
    with pytest.raises(SchemaEvolutionError):
        trips.preview_alter("ALTER TABLE trips ALTER COLUMN fare TYPE struct<a: int>")
    with pytest.raises(SchemaEvolutionError, match="cannot be dropped"):
        trips.preview_alter("ALTER TABLE trips DROP COLUMN id")


def test_the_previewed_change_is_what_rewrite_commits(trips):
    preview = trips.preview_alter("ALTER TABLE trips ALTER COLUMN fare TYPE int")
    trips.rewrite("ALTER TABLE trips ALTER COLUMN fare TYPE int", on_cast_error="null")
    assert [f.name for f in trips.schema.fields] == [f.name for f in preview.after.fields]
    assert str(trips.schema.find("fare").type) == "int"
    # 2.5 does not fit an int: null
    assert [tuple(r) for r in trips.read().collect()] == [(1, None, 3, 1)]


def test_a_nested_move_is_reported_on_the_field_moved(warehouse):
    t = evonb.create_table(warehouse / "m", "id int, s struct<aa: int, n: int>")
    ddl = "ALTER TABLE m ALTER COLUMN s.aa AFTER n"
    assert [str(c) for c in t.preview_alter(ddl)] == ["moved    3: s.aa: position 0 -> 1"]
    assert [str(c) for c in t.alter(ddl)] == ["moved    3: s.aa: position 0 -> 1"]
    assert t.history()[-1].metadata["changes"][0]["old_path"] == "s.aa"
