"""Columns nested as deep as an evonb table takes (``evonb.schema.nesting.MAX_NESTING``: a
struct one level, a list or a map two) work on every path: writes, upserts on each merge
path, renames, a type change and an added member at the deepest level, both readers; one
level more is refused by ``CREATE``, ``ALTER`` and a write alike, naming the column, with
the table unchanged. Before the limit, a write 99 structs deep failed with pyarrow's
``OSError`` after Spark had written its files, one 98 deep committed and then failed every
Spark read with an analyzer trace, and an upsert 64 deep failed in Arrow's IPC reader.

Heavy (``tests/conftest.py``): Spark takes seconds to plan each read and write of such a
schema. The merge paths are the driver's and Spark's of each table type."""

from __future__ import annotations

from typing import Any

import pytest

import evonb
from evonb.errors import SchemaEvolutionError
from evonb.schema.nesting import MAX_NESTING
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = pytest.mark.spark

ROUNDS = (MAX_NESTING - 2) // 2  # list and map wraps around the inner struct of the mix


def chain_type(depth: int, last: str = "a: int, b: int") -> str:
    """``struct<a: struct<a: ... struct<a: int, b: int>>>``, ``depth`` structs."""
    return "struct<a: " * (depth - 1) + f"struct<{last}>" + ">" * (depth - 1)


def chain_value(depth: int, *leaf: Any) -> Any:
    value: Any = tuple(leaf)
    for _ in range(depth - 1):
        value = (value,)
    return value


def mix_type(inner: str = "x: int, y: int") -> str:
    """``struct<z: array<map<string, array<... struct<x, y>>>>>``: as deep as allowed."""
    t = f"struct<{inner}>"
    for i in range(ROUNDS):
        t = f"array<{t}>" if i % 2 == 0 else f"map<string, {t}>"
    return f"struct<z: {t}>"


def mix_value(*leaf: Any) -> Any:
    value: Any = tuple(leaf)
    for i in range(ROUNDS):
        value = [value] if i % 2 == 0 else {"k": value}
    return (value,)


def mix_path() -> str:
    """The path of the mix's inner struct, outermost first."""
    steps = ["m", "z"] + ["element" if i % 2 == 0 else "value" for i in reversed(range(ROUNDS))]
    return ".".join(steps)


def normalized(v: Any, *, arrow: bool) -> Any:
    """A value as plain tuples and lists, however a reader gave it: Spark gives a struct as a
    ``Row`` and a map as a dict, Arrow a struct as a dict and a map as a list of pairs (so a
    map becomes its sorted pairs)."""
    if isinstance(v, dict):
        if arrow:
            return tuple(normalized(x, arrow=arrow) for x in v.values())
        return sorted((k, normalized(x, arrow=arrow)) for k, x in v.items())
    if isinstance(v, tuple):
        return tuple(normalized(x, arrow=arrow) for x in v)
    if isinstance(v, list):
        return [normalized(x, arrow=arrow) for x in v]
    return v


def test_nesting_depth_counts_as_parquet_does() -> None:
    from evonb.schema.nesting import nesting_depth
    from evonb.schema.type_text import parse_type

    assert MAX_NESTING == 60
    assert nesting_depth(parse_type(chain_type(MAX_NESTING))) == MAX_NESTING
    assert nesting_depth(parse_type(mix_type())) == MAX_NESTING
    assert nesting_depth(parse_type("struct<a: array<map<string, struct<b: int>>>>")) == 6
    assert nesting_depth(parse_type("int")) == 0


@pytest.mark.parametrize("path", ["cow-driver", "cow-split", "mor-driver", "mor-spark"])
def test_columns_as_deep_as_allowed_work_on_every_path(spark: Any, tmp_path: Any,
                                                       path: str) -> None:
    table_type, props = MERGE_PATHS[path]
    depth = MAX_NESTING
    schema = f"id bigint not null, s {chain_type(depth)}, m {mix_type()}"
    t = evonb.create_table(tmp_path / "t", schema, primary_key="id", table_type=table_type,
                           properties=props)
    rows = [(k, chain_value(depth, k, -k), mix_value(k, 10 * k)) for k in range(4)]
    t.write(spark.createDataFrame(rows, schema))
    t.write(spark.createDataFrame([(1, chain_value(depth, 100, 101), mix_value(102, 103)),
                                   (9, chain_value(depth, 9, 9), mix_value(9, 9))], schema),
            mode="upsert")
    expected = {k: (chain_value(depth, k, -k), mix_value(k, 10 * k)) for k in range(4)}
    expected[1] = (chain_value(depth, 100, 101), mix_value(102, 103))
    expected[9] = (chain_value(depth, 9, 9), mix_value(9, 9))

    inner = "s" + ".a" * (depth - 1)
    t.alter(f"ALTER TABLE t RENAME COLUMN {inner}.a TO c")
    t.alter(f"ALTER TABLE t ALTER COLUMN {inner}.b TYPE bigint")
    t.alter(f"ALTER TABLE t ADD COLUMN {inner}.e string")
    t.alter(f"ALTER TABLE t RENAME COLUMN {mix_path()}.x TO w")
    evolved = (f"id bigint not null, s {chain_type(depth, 'c: int, b: bigint, e: string')}, "
               f"m {mix_type('w: int, y: int')}")
    t.write(spark.createDataFrame([(2, chain_value(depth, 200, 201, "new"),
                                    mix_value(202, 203))], evolved), mode="upsert")
    expected = {k: (chain_value(depth, *_leaf(s, depth), None), m)
                for k, (s, m) in expected.items()}
    expected[2] = (chain_value(depth, 200, 201, "new"), mix_value(202, 203))
    want = sorted((k, *normalized(v, arrow=False)) for k, v in expected.items())

    got_spark = sorted(normalized(tuple(r), arrow=False) for r in t.read().collect())
    assert got_spark == want
    got_arrow = sorted(normalized(r, arrow=True) for r in t.to_arrow().to_pylist())
    assert got_arrow == want
    assert t.read().select(f"{inner}.c").where("id = 2").first()[0] == 200

    # one level more: refused by ALTER and by a write, the table unchanged
    commits = len(t.history())
    with pytest.raises(SchemaEvolutionError, match=rf"Column 's' would nest {depth + 1} "
                       rf"levels deep .* more than the {MAX_NESTING}"):
        t.alter(f"ALTER TABLE t ADD COLUMN {inner}.f struct<g: int>")
    last = "c: int, b: bigint, e: string, f: struct<g: int>"
    deeper = f"id bigint not null, s {chain_type(depth, last)}"
    with pytest.raises(SchemaEvolutionError, match=r"Column 's' would nest 61 levels deep"):
        t.write(spark.createDataFrame([(3, chain_value(depth, 1, 2, "x", (3,)))], deeper),
                mode="upsert")
    assert len(t.history()) == commits
    assert sorted(r.id for r in t.read().collect()) == [0, 1, 2, 3, 9]


def _leaf(s: Any, depth: int) -> tuple[Any, ...]:
    for _ in range(depth - 1):
        s = s[0]
    return tuple(s)


def test_create_refuses_a_column_nested_deeper_than_allowed(tmp_path: Any) -> None:
    for ddl, name in ((f"s {chain_type(MAX_NESTING + 1)}", "s"),
                      (f"l {'array<' * 31}int{'>' * 31}", "l")):
        with pytest.raises(SchemaEvolutionError, match=rf"Column '{name}' would nest"):
            evonb.create_table(tmp_path / name, f"id bigint, {ddl}")
        assert not (tmp_path / name).exists()
