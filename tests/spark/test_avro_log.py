"""Log blocks without Spark: names, the Avro schema with field IDs, writing and reading blocks
in both formats, and the per-key resolution of a file group's blocks."""

from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from evonb.schema.schema import Schema
from evonb.spark.avro_log import (
    DEL,
    VALID,
    _BlockSink,
    _read_block,
    arrow_schema,
    avro_supported,
    block_avro_schema,
    block_struct,
    log_path,
    parse_log_name,
    resolve_group,
)

INSTANTS = ("20260101000000001", "20260101000000002", "20260101000000003")


def test_log_names_carry_the_base_file_and_the_instant():
    rel = log_path("p=1/abc_0_20260101000000000.parquet", INSTANTS[0], 3, "avro")
    assert rel == f"p=1/.abc_0_20260101000000000.log.{INSTANTS[0]}_3.avro"
    assert parse_log_name(rel) == ("abc_0_20260101000000000", INSTANTS[0], 3, "avro")
    assert log_path("x.parquet", INSTANTS[0], 0, "parquet") == f".x.log.{INSTANTS[0]}_0.parquet"
    assert parse_log_name("abc_0_20260101000000000.parquet") is None


def test_block_schema_has_field_ids_and_hidden_columns():
    s = Schema.from_ddl("id bigint not null, s struct<a:int>, m map<string,int>")
    avro = block_avro_schema(s)
    fastavro.parse_schema(avro)
    assert [f["field-id"] for f in avro["fields"][:3]] == [1, 2, 4]
    assert avro["fields"][1]["type"][1]["fields"][0]["field-id"] == 3
    assert [f["name"] for f in avro["fields"][-4:]] == ["_evo_commit_time", "_evo_pos",
                                                        "_evo_over", "_evo_deleted"]
    assert avro["fields"][0]["type"] == ["null", "long"]  # a delete record holds only keys
    assert not avro_supported(Schema.from_ddl("id bigint, m map<int,string>"))


def _write(tmp_path: Path, schema: Schema, fmt: str, instant: str, rows: list[dict]) -> str:
    struct = block_struct(schema)
    arrow = arrow_schema(struct, "UTC")
    avro = block_avro_schema(schema) if fmt == "avro" else None
    timeline = tmp_path / ".evo" / "timeline"  # the write the block belongs to is under way
    timeline.mkdir(parents=True, exist_ok=True)
    (timeline / f"{instant}.deltacommit.requested").write_text("{}")
    sink = _BlockSink(str(tmp_path), instant, schema.version_id, 0, 0, fmt, avro, struct,
                      arrow, "null")
    full = [{f.name: r.get(f.name) for f in struct.fields} | {"_evo_commit_time": instant}
            for r in rows]
    sink.add("base_0_20260101000000000.parquet", pa.RecordBatch.from_pylist(full, arrow))
    sink.close()
    (rel, base, count, size), = sink.stats
    assert base == "base_0_20260101000000000.parquet" and count == len(rows) and size > 0
    return str(tmp_path / rel)


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_blocks_round_trip(tmp_path, fmt):
    schema = Schema.from_ddl("id bigint not null, s struct<a:int,b:string>, "
                             "tags array<string>, m map<string,int>")
    rows = [{"id": 1, "s": {"a": 1, "b": "x"}, "tags": ["t", None], "m": {"k": 2},
             "_evo_deleted": False},
            {"id": 2, "_evo_deleted": True}]
    path = _write(tmp_path, schema, fmt, INSTANTS[0], rows)
    if fmt == "avro":
        with open(path, "rb") as fh:
            reader = fastavro.reader(fh)
            assert reader.metadata["evonb.instant"] == INSTANTS[0]
            assert json.loads(reader.metadata["avro.schema"])["fields"][0]["field-id"] == 1
    struct = block_struct(schema)
    got = pa.Table.from_batches(list(_read_block(path, struct, arrow_schema(struct, "UTC"))))
    out = got.to_pylist()
    assert out[0]["s"] == {"a": 1, "b": "x"} and out[0]["tags"] == ["t", None]
    assert dict(out[0]["m"]) == {"k": 2}
    assert out[1]["_evo_deleted"] is True and out[1]["s"] is None


def test_avro_fields_are_matched_by_id_not_name(tmp_path):
    old = Schema.from_ddl("id bigint not null, price double")
    path = _write(tmp_path, old, "avro", INSTANTS[0], [{"id": 1, "price": 2.5}])
    # the reader's version calls field 2 differently and has a field the block lacks
    new = Schema(fields=(old.fields[0], old.fields[1].replace(name="cost"),
                         *Schema.from_ddl("a int, b int, c string").fields[2:]))
    struct = block_struct(new)
    (row,) = pa.Table.from_batches(
        list(_read_block(path, struct, arrow_schema(struct, "UTC")))).to_pylist()
    assert row["cost"] == 2.5 and row["c"] is None


def test_resolution_of_a_file_group(tmp_path):
    schema = Schema.from_ddl("id bigint not null, v string, ts bigint")
    paths = [
        _write(tmp_path, schema, "avro", INSTANTS[0],
               [{"id": 1, "v": "a", "ts": 5}, {"id": 2, "v": "b", "ts": 5},
                {"id": 3, "v": "c", "ts": 5}, {"id": 4, "v": "d", "ts": None}]),
        _write(tmp_path, schema, "parquet", INSTANTS[1],
               [{"id": 1, "v": "low", "ts": 4}, {"id": 2, "_evo_deleted": True},
                {"id": 3, "v": "tie", "ts": 5}, {"id": 4, "v": "e", "ts": 1}]),
        _write(tmp_path, schema, "avro", INSTANTS[2],
               [{"id": 2, "v": "again", "ts": 0}, {"id": 5, "_evo_deleted": True}]),
    ]
    struct = block_struct(schema)
    arrow = arrow_schema(struct, "UTC")
    got = {r["id"]: r for r in resolve_group(paths, struct, arrow, ["id"], "ts").to_pylist()}
    assert (got[1]["v"], got[1][DEL], got[1][VALID]) == ("a", None, True)  # larger ts wins
    assert (got[2]["v"], got[2][DEL], got[2][VALID]) == ("again", INSTANTS[1], True)
    assert got[3]["v"] == "tie" and got[3]["_evo_commit_time"] == INSTANTS[1]  # later wins
    assert got[4]["v"] == "e"  # a null precombine loses
    assert (got[5][DEL], got[5][VALID]) == (INSTANTS[2], False)
    no_pre = {r["id"]: r for r in resolve_group(paths, struct, arrow, ["id"], None).to_pylist()}
    assert no_pre[1]["v"] == "low"  # without a precombine the latest record wins


def test_names_that_are_not_avro_names(tmp_path):
    schema = Schema.from_ddl("id bigint not null, `1st` int, `é` struct<`2nd`:string>")
    avro = block_avro_schema(schema)
    assert [f["name"] for f in avro["fields"][:3]] != ["id", "1st", "é"]
    path = _write(tmp_path, schema, "avro", INSTANTS[0],
                  [{"id": 1, "1st": 5, "é": {"2nd": "x"}}])
    struct = block_struct(schema)
    (row,) = pa.Table.from_batches(
        list(_read_block(path, struct, arrow_schema(struct, "UTC")))).to_pylist()
    assert row["1st"] == 5 and row["é"] == {"2nd": "x"}


def test_parquet_blocks_write_columns_of_distinct_values_plain(tmp_path):
    import pyarrow.parquet as pq

    schema = Schema.from_ddl("id bigint not null, name string, cat string")
    rows = [{"id": i, "name": f"name-{i}", "cat": f"c{i % 3}"} for i in range(300)]
    path = _write(tmp_path, schema, "parquet", INSTANTS[0], rows)
    meta = pq.read_metadata(path)
    encodings = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings
                 for i in range(meta.num_columns)}
    assert "RLE_DICTIONARY" not in encodings["id"] and "RLE_DICTIONARY" not in encodings["name"]
    assert "RLE_DICTIONARY" in encodings["cat"]
    assert meta.metadata[b"evonb.instant"] == INSTANTS[0].encode()
    struct = block_struct(schema)
    got = pa.Table.from_batches(list(_read_block(path, struct, arrow_schema(struct, "UTC"))))
    assert got.column("name").to_pylist() == [r["name"] for r in rows]
