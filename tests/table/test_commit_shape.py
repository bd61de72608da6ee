"""``commit_defect``: the shape every completed commit must have before it is replayed."""

from __future__ import annotations

import pytest

from evonb.table.commit_shape import FILE_KINDS, commit_defect

V = "20260101000000000"
W = "20260101000000001"


def entry(**changes):
    base = {"path": f"a_0_{W}.parquet", "version": V, "instant": W, "rows": 1, "bytes": 10}
    base.update(changes)
    return base


def test_a_well_formed_commit_has_no_defect():
    assert commit_defect({"schema_version": V, "added": [entry()], "removed": ["old.parquet"],
                          "completion_time": W}) is None
    assert commit_defect({"added": []}, require_schema=False) is None
    assert commit_defect({"added": []}) == "schema_version must be a 17-digit instant, not None"


@pytest.mark.parametrize(("bad", "words"), [
    (entry(path="/abs/a.parquet"), "added[0].path must be a relative path"),
    (entry(path="../up.parquet"), "added[0].path must be a relative path"),
    (entry(instant="2026"), "added[0].instant must be a 17-digit instant"),
    (entry(rows=-1), "added[0].rows must be a non-negative integer"),
    (entry(bytes=True), "added[0].bytes must be a non-negative integer"),
    (entry(kind="log"), "added[0] is a log block without a base file"),
])
def test_a_bad_file_entry_is_named(bad, words):
    defect = commit_defect({"schema_version": V, "added": [bad]})
    assert defect is not None and defect.startswith(words)


def test_only_known_file_kinds_are_accepted():
    assert FILE_KINDS == ("base", "log", "adopted")
    for kind in ("log", "adopted"):
        assert commit_defect({"schema_version": V,
                              "added": [entry(kind=kind, base="b.parquet")]}) is None
    # An entry of a kind this version does not know would be replayed as a live base file.
    assert commit_defect({"schema_version": V, "added": [entry(kind="bsae")]}) == \
        "added[0].kind must be one of base, log, adopted, not 'bsae'"


def test_removed_and_completion_fields_are_checked():
    assert commit_defect({"schema_version": V, "removed": ["../x"]}) == \
        "removed must be a list of relative paths"
    assert commit_defect({"schema_version": V, "removed": "a.parquet"}) == \
        "removed must be a list of relative paths"
    assert commit_defect({"schema_version": V, "base_completion": 5}) == \
        "base_completion must be a 17-digit instant, not 5"
    assert commit_defect([V]) == "commit metadata must be a JSON object, not list"
