"""A key stored more than once (two inserts of it: an insert checks only its own rows by
default; or ``evonb.write.insert_duplicates = 'allow'``) is left as it is by an upsert or a
delete of other keys, on every merge path of both table types.

Regression: the copy-on-write merge through Spark (the direct merge of small candidates, and
the one-window merge of rewrites up to ``evonb.write.split_merge.bytes``) kept one row per key
of every file it rewrote, so an upsert of key 2 deleted a row of key 1 that two inserts had
stored; only the split merge and the driver's rewrite kept both."""

from __future__ import annotations

from typing import Any

import pytest

import evonb
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = pytest.mark.spark



def _rows(t: Any) -> list[tuple[int, str]]:
    got = sorted((r.id, r.v) for r in t.read().collect())
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == got
    return got


@pytest.mark.parametrize("path", sorted(MERGE_PATHS))
@pytest.mark.parametrize("allow", [False, True])
def test_a_merge_leaves_every_stored_row_of_the_keys_that_do_not_come_in(
        spark: Any, tmp_path: Any, path: str, allow: bool) -> None:
    table_type, props = MERGE_PATHS[path]
    if allow:
        props = props | {"evonb.write.insert_duplicates": "allow"}
    made = []
    for mode in ("upsert", "delete"):
        t = evonb.create_table(tmp_path / mode, "id bigint not null, v string",
                               primary_key="id", table_type=table_type, properties=props)
        if allow:  # both rows of key 1 in one file
            t.write(spark.sql("select * from values (1L, 'a'), (1L, 'b'), (2L, 'c'), (3L, 'e')"
                              " as r(id, v)").coalesce(1))
        else:  # key 1 inserted twice: two files whose key ranges both hold key 2
            t.write(spark.sql("select * from values (1L, 'a'), (2L, 'c') as r(id, v)")
                    .coalesce(1))
            t.write(spark.sql("select * from values (1L, 'b'), (3L, 'e') as r(id, v)")
                    .coalesce(1))
        before = _rows(t)
        assert before == [(1, "a"), (1, "b"), (2, "c"), (3, "e")]
        # a frame Spark can size: small merges take the direct merge
        t.write(spark.sql("select 2L id, 'z' v"), mode=mode)
        made.append(t)
    upserted, deleted = (_rows(t) for t in made)
    assert upserted == [(1, "a"), (1, "b"), (2, "z"), (3, "e")], path
    assert deleted == [(1, "a"), (1, "b"), (3, "e")], path
