"""Dictionary encoding only where it pays, in the Parquet files evonb writes with pyarrow."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evonb.spark.parquet_encoding import SAMPLE_ROWS, dictionary_columns, leaf_paths


def _encodings(table: pa.Table, **options) -> dict[str, tuple[str, ...]]:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **options)
    group = pq.read_metadata(pa.BufferReader(sink.getvalue())).row_group(0)
    return {group.column(i).path_in_schema: group.column(i).encodings
            for i in range(group.num_columns)}


def test_columns_of_distinct_values_are_written_plain():
    n = 1_000
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([f"name-{i}" for i in range(n)]),
        "cat": pa.array([f"c{i % 50}" for i in range(n)]),
        "half": pa.array([i // 2 for i in range(n)], pa.int64()),  # exactly half distinct
        "nulls": pa.array([None] * n, pa.string()),
        "flag": pa.array([i % 2 == 0 for i in range(n)]),
    })
    chosen = dictionary_columns(table)
    assert chosen == ["cat", "half", "nulls", "flag"]
    got = _encodings(table, use_dictionary=chosen)
    assert "RLE_DICTIONARY" not in got["id"] and "RLE_DICTIONARY" not in got["name"]
    assert "RLE_DICTIONARY" in got["cat"] and "RLE_DICTIONARY" in got["half"]


def test_nested_columns_keep_dictionaries_on_every_leaf_but_fixed_width_list_elements():
    table = pa.table({
        "s": pa.array([{"a": i, "b": "x"} for i in range(100)]),
        "l": pa.array([[i] for i in range(100)]),
        "m": pa.array([[("k", i)] for i in range(100)], pa.map_(pa.string(), pa.int64())),
        "id": pa.array(range(100), pa.int64()),
    })
    assert leaf_paths(table.schema) == (("s.a", "s.b"), ("l.list.element",),
                                        ("m.key_value.key", "m.key_value.value"), ("id",))
    chosen = dictionary_columns(table)
    assert chosen == ["s.a", "s.b", "m.key_value.key", "m.key_value.value"]
    got = _encodings(table, use_dictionary=chosen)
    assert all("RLE_DICTIONARY" in got[p] for p in chosen)
    assert "RLE_DICTIONARY" not in got["id"] and "RLE_DICTIONARY" not in got["l.list.element"]
    texts = pa.table({"t": pa.array([["a"], ["b"]]), "d": pa.array([[Decimal("1.5")]] * 2),
                      "ls": pa.array([[{"x": 1}]] * 2)})
    assert dictionary_columns(texts) == ["t.list.element", "d.list.element",
                                         "ls.list.element.x"]


@pytest.mark.spark
def test_an_all_null_list_element_column_reads_in_spark(spark, tmp_path):
    """Spark's vectorized reader failed on a list element column of integers, dates or
    doubles whose dictionary was empty (every element null) when the read transformed the
    list, as a read through a type history does (found by tests/model/test_type_chains.py:
    a copy-on-write delete rewritten by the driver wrote such a file)."""
    import datetime as dt

    table = pa.table({"i": pa.array([[None], [None, None]], pa.list_(pa.int32())),
                      "d": pa.array([[None], [None]], pa.list_(pa.date32())),
                      "f": pa.array([[None], [None]], pa.list_(pa.float64())),
                      "g": pa.array([[dt.date(2024, 1, 1)], [None]], pa.list_(pa.date32()))})
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, use_dictionary=dictionary_columns(table))
    got = spark.read.parquet(str(path)).selectExpr(
        *(f"transform({c}, x -> cast(x as string)) {c}" for c in "idfg")).collect()
    assert [list(map(list, r)) for r in got] == [
        [[None], [None], [None], ["2024-01-01"]], [[None, None], [None], [None], [None]]]


def test_the_first_rows_decide_and_an_empty_table_keeps_every_dictionary():
    # Distinct in the sampled rows, repeated after them: judged on the sample.
    values = list(range(SAMPLE_ROWS)) + [0] * (3 * SAMPLE_ROWS)
    assert dictionary_columns(pa.table({"v": pa.array(values, pa.int64())})) == []
    empty = pa.table({"id": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    assert dictionary_columns(empty) == ["id", "s"]
    chunked = pa.concat_tables([pa.table({"c": ["a"] * 10}), pa.table({"c": ["b"] * 10})])
    assert dictionary_columns(chunked) == ["c"]


def test_leaf_paths_are_the_paths_pyarrow_writes():
    schema = pa.schema([
        ("id", pa.int64()),
        ("s", pa.struct([("a", pa.list_(pa.struct([("x", pa.int32()), ("y", pa.string())]))),
                         ("m", pa.map_(pa.string(), pa.struct([("z", pa.float64())])))])),
        ("ll", pa.large_list(pa.list_(pa.int8()))),
    ])
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    meta = pq.read_metadata(pa.BufferReader(sink.getvalue()))
    written = [meta.schema.column(i).path for i in range(meta.num_columns)]
    assert [p for paths in leaf_paths(schema) for p in paths] == written
