"""Read planning is pure data: checked here without Spark."""

from __future__ import annotations

from evonb.schema import Schema, SchemaUpdate
from evonb.table.layout import Layout, derive_layout
from evonb.table.read_plan import (
    Cast,
    Coalesce,
    Col,
    DefaultIn,
    GetField,
    Lit,
    StructOf,
    VersionFiles,
    one_scan_sets,
    plan_group,
    plan_merged,
    read_paths,
    type_paths,
)


def _versions():
    v1 = Schema.from_ddl("id int, a int, b string, s struct<x:int>")
    l1 = derive_layout(v1)
    v2 = (SchemaUpdate(v1).rename_column("a", "b2").drop_column("b")
          .add_column("b", "string", default="d").update_column_type("b2", "bigint")
          .rename_column("s.x", "y").apply(version_id="20260101000000000"))
    l2 = derive_layout(v2, (v1, l1))
    v3 = SchemaUpdate(v2).update_column_type("b2", "string").apply(
        version_id="20260102000000000")
    l3 = derive_layout(v3, (v2, l2))
    return (v1, l1), (v2, l2), (v3, l3)


def test_layouts_keep_names_and_start_generations():
    (_, l1), (_, l2), (_, l3) = _versions()
    assert l1.physical == {1: "id", 2: "a", 3: "b", 4: "s", 5: "x"}
    # rename keeps the physical name; the re-added b gets a fresh one; int -> bigint is native
    assert l2.name(2) == "a" and l2.name(6) == "b__6" and l2.name(5) == "x"
    # bigint -> string is not native: a new generation
    assert l3.name(2) == "b2"  # named after the current name, never used at that level


def test_per_version_plan():
    (v1, l1), (_, _), (v3, _) = _versions()
    group = plan_group(v3, v1, l1, ("f1",))
    cols = dict(group.columns)
    assert cols["b2"] == Cast(Col("a"), v3.find("b2").type)
    assert cols["b"] == Lit("d", v3.find("b").type)
    assert cols["s"] == StructOf(Col("s"), (("y", GetField(Col("s"), "x")),))


def test_layouts_keep_each_changed_type():
    (_, l1), (v2, l2), (v3, l3) = _versions()
    bigint, string = v2.find("b2").type, v3.find("b2").type
    int_ = _versions()[0][0].find("a").type
    assert l1.types == {} and l1.typed
    assert l2.types == {2: (int_, bigint)}
    assert l3.types == {2: (int_, bigint, string)}
    assert l3.history(1, v3.find("id").type) == (v3.find("id").type,)  # never changed
    again = Layout.from_dict(l3.to_dict())
    assert again == l3
    old = Layout.from_dict({"physical": {"1": "id"}, "used": {}})  # written before histories
    assert not old.typed and old.history(1, int_) is None


def test_a_value_is_read_through_every_type_it_had():
    (v1, l1), (v2, l2), (v3, l3) = _versions()
    bigint, string = v2.find("b2").type, v3.find("b2").type
    via = type_paths(v3, l3)
    assert via == {2: l3.types[2]}
    # a file of v1 (b2 is int there) read in v3 (string): through bigint
    cols = dict(plan_group(v3, v1, l1, ("f1",), via=via).columns)
    assert cols["b2"] == Cast(Cast(Col("a"), bigint), string)
    assert cols["id"] == Col("id")  # the same type everywhere: read as stored
    # a file of v2 itself: one cast
    assert dict(plan_group(v3, v2, l2, ("f2",), via=via).columns)["b2"] == Cast(Col("a"), string)
    merged = plan_merged(v3, [VersionFiles(v1, l1, frozenset({"f1"}))], ("f1",), via=via)
    assert dict(merged.columns)["b2"] == Cast(Cast(Col("a"), bigint), string)


def test_int_then_double_then_string_reads_the_double():
    """``int -> double`` keeps the physical column; ``double -> string`` starts a generation.
    An int stored first reads "5.0", whether or not a file of the double's time is live."""
    v1 = Schema.from_ddl("id int, a int")
    l1 = derive_layout(v1)
    v2 = SchemaUpdate(v1).update_column_type("a", "double").apply(version_id="20260101000000000")
    l2 = derive_layout(v2, (v1, l1))
    v3 = SchemaUpdate(v2).update_column_type("a", "string").apply(version_id="20260102000000000")
    l3 = derive_layout(v3, (v2, l2))
    double, string = v2.find("a").type, v3.find("a").type
    via = read_paths({v.version_id: (v, lay) for v, lay in
                      ((v1, l1), (v2, l2), (v3, l3))}.__getitem__, v3, v3.version_id)
    assert l2.name(2) == l1.name(2) != l3.name(2)
    alone = plan_merged(v3, [VersionFiles(v1, l1, frozenset({"f1"}))], ("f1",), via=via)
    both = plan_merged(v3, [VersionFiles(v2, l2, frozenset({"f2"})),
                            VersionFiles(v1, l1, frozenset({"f1"}))], ("f1", "f2"), via=via)
    assert dict(alone.columns)["a"] == Cast(Cast(Col("a"), double), string)
    # a live file of v2: the physical column is read as double, then cast once
    assert dict(both.columns)["a"] == Cast(Col("a"), string)
    assert both.read_type.fields[1].type == double
    # a layout written before histories: the old rule, as the snapshot shows it, then cast
    untyped = Layout(physical=l3.physical, used=l3.used, typed=False)
    assert type_paths(v3, untyped) is None
    assert type_paths(v3, untyped, v2) == {2: (double, string)}
    # as of a commit of v2, in v3: as the commit shows it (through its own types), then cast
    int_ = v1.find("a").type
    assert type_paths(v3, l3, v2, l2) == {2: (int_, double, string)}
    assert dict(plan_group(v3, v1, l1, ("f1",), via=type_paths(v3, l3, v2, l2)).columns)[
        "a"] == Cast(Cast(Col("a"), double), string)


def test_one_scan_plan():
    (v1, l1), (v2, l2), (v3, l3) = _versions()
    parts = [VersionFiles(v1, l1, frozenset({"f1"})), VersionFiles(v2, l2, frozenset({"f2"})),
             VersionFiles(v3, l3, frozenset({"f3"}))]
    group = plan_merged(v3, parts, ("f1", "f2", "f3"))
    assert [f.name for f in group.read_type.fields] == ["id", "b2", "s", "b__6", "a", "b"]
    cols = dict(group.columns)
    assert cols["id"] == Col("id")
    string = v3.find("b2").type
    assert cols["b2"] == Coalesce((Col("b2"), Cast(Col("a"), string)))
    assert cols["b"] == DefaultIn(frozenset({"f1"}), Lit("d", v3.find("b").type), Col("b__6"))


def test_one_scan_plan_with_reader_filled_defaults():
    """With ``native_defaults`` the re-added string column is a plain column whose default the
    reader fills in files that lack ``b__6``; binary and wide decimals keep the per-file choice."""
    (v1, l1), (v2, l2), (v3, l3) = _versions()
    parts = [VersionFiles(v1, l1, frozenset({"f1"})), VersionFiles(v2, l2, frozenset({"f2"})),
             VersionFiles(v3, l3, frozenset({"f3"}))]
    group = plan_merged(v3, parts, ("f1", "f2", "f3"), native_defaults=True)
    cols = dict(group.columns)
    assert cols["b"] == Col("b__6")
    assert group.read_defaults == (("b__6", Lit("d", v3.find("b").type)),)
    assert plan_merged(v3, parts, ("f1", "f2", "f3")).read_defaults == ()

    v4 = (SchemaUpdate(v3).add_column("raw", "binary", default=b"\x01")
          .add_column("big", "decimal(20,2)", default="1.50")
          .add_column("small", "decimal(18,2)", default="2.50")
          .apply(version_id="20260103000000000"))
    l4 = derive_layout(v4, (v3, l3))
    group = plan_merged(v4, [*parts, VersionFiles(v4, l4, frozenset({"f4"}))],
                        ("f1", "f2", "f3", "f4"), native_defaults=True)
    cols = dict(group.columns)
    assert isinstance(cols["raw"], DefaultIn) and isinstance(cols["big"], DefaultIn)
    assert cols["small"] == Col("small")
    assert [name for name, _ in group.read_defaults] == ["b__6", "small"]


def test_one_scan_sets_split_only_names_shared_across_a_change_spark_cannot_widen():
    """Today's layouts read in one merged scan; a layout an older rule derived shares a name
    across ``tinyint -> decimal(5,2)`` (in a struct member and a list element too) or
    ``date -> timestamp_ntz``: the older version is read in a scan of its own."""
    v1 = Schema.from_ddl("id int, v tinyint, s struct<x:tinyint>, a array<date>, n int")
    l1 = derive_layout(v1)
    v2 = (SchemaUpdate(v1).update_column_type("v", "decimal(5,2)")
          .update_column_type("s.x", "decimal(5,2)")
          .update_column_type("a.element", "timestamp_ntz")
          .update_column_type("n", "bigint").apply(version_id="20260101000000000"))
    l2 = derive_layout(v2, (v1, l1))
    p1, p2 = VersionFiles(v1, l1, frozenset({"f1"})), VersionFiles(v2, l2, frozenset({"f2"}))
    assert one_scan_sets([p1, p2]) == [[p2, p1]]  # fresh names: one scan

    def sharing(*changed: str) -> Layout:
        """``l2`` as an older rule derived it: ``changed`` keep their first physical names."""
        ids = {v2.find_id(c) for c in changed}
        return Layout({i: (l1.name(i) if i in ids else n) for i, n in l2.physical.items()},
                      l2.used, l2.types)

    for changed in (["v"], ["s.x"], ["a"]):
        legacy = VersionFiles(v2, sharing(*changed), frozenset({"f2"}))
        assert one_scan_sets([p1, legacy]) == [[legacy], [p1]], changed
    v3 = SchemaUpdate(v2).update_column_type("n", "decimal(20,0)").apply(
        version_id="20260102000000000")
    l3 = derive_layout(v3, (v2, l2))
    p3 = VersionFiles(v3, l3, frozenset({"f3"}))
    assert l3.name(v3.find_id("n")) == "n"  # int -> bigint -> decimal(20,0): one name
    assert one_scan_sets([p1, p3, p2]) == [[p3, p2, p1]]


def test_one_scan_sets_see_a_struct_member_only_older_versions_have():
    """A member changed under an older rule and then dropped is still in the merged scan's
    read type (merged from the versions that have it): its oldest version reads apart."""
    v1 = Schema.from_ddl("id int, s struct<x:int, m:tinyint>")
    l1 = derive_layout(v1)
    v2 = SchemaUpdate(v1).update_column_type("s.m", "decimal(5,2)").apply(
        version_id="20260101000000000")
    l2 = derive_layout(v2, (v1, l1))
    m = v2.find_id("s.m")
    l2 = Layout({i: (l1.name(i) if i == m else n) for i, n in l2.physical.items()},
                l2.used, l2.types)
    v3 = SchemaUpdate(v2).drop_column("s.m").apply(version_id="20260102000000000")
    l3 = derive_layout(v3, (v2, l2))
    p1, p2, p3 = (VersionFiles(v, lay, frozenset({f})) for v, lay, f in
                  ((v1, l1, "f1"), (v2, l2, "f2"), (v3, l3, "f3")))
    assert one_scan_sets([p1, p2, p3]) == [[p3, p2], [p1]]
