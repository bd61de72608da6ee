"""Every on-disk name of a table round-trips through its parser, names written by earlier
versions still parse, and names that follow no pattern parse to None."""

from __future__ import annotations

import pytest

from evonb.table import names
from evonb.table.names import (
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    DataFileName,
    LogBlockName,
    SchemaName,
    TimelineName,
    data_file_name,
    layout_file,
    log_block_name,
    log_block_path,
    log_block_temp,
    named_with_instant,
    parse_data_file,
    parse_log_block,
    parse_log_block_temp,
    parse_schema_file,
    parse_timeline_file,
    schema_file,
    staged_part_name,
    staged_task,
    timeline_file,
)

TS = "20261125154840542"
OTHER = "20261125154853413"

# Listed from tables written by evonb before this module existed (a partitioned copy-on-write
# table after a write and an ALTER, merge-on-read tables with Avro and Parquet log blocks).
WRITTEN_TIMELINE = {
    "20261125154836677.create": ("20261125154836677", "create", COMPLETED),
    "20261125154836677.create.requested": ("20261125154836677", "create", REQUESTED),
    "20261125154840542.commit": ("20261125154840542", "commit", COMPLETED),
    "20261125154840542.commit.inflight": ("20261125154840542", "commit", INFLIGHT),
    "20261125154840542.commit.requested": ("20261125154840542", "commit", REQUESTED),
    "20261125154852367.alter": ("20261125154852367", "alter", COMPLETED),
    "20261125154852367.alter.requested": ("20261125154852367", "alter", REQUESTED),
    "20261125154853413.deltacommit": ("20261125154853413", "deltacommit", COMPLETED),
    "20261125154853413.deltacommit.inflight": ("20261125154853413", "deltacommit", INFLIGHT),
    "20261125154853413.deltacommit.requested": ("20261125154853413", "deltacommit", REQUESTED),
}
WRITTEN_SCHEMAS = {
    "00000000000000000.layout.json": ("00000000000000000", "layout"),
    "00000000000000000.schema.json": ("00000000000000000", "schema"),
    "20261125154852367.layout.json": ("20261125154852367", "layout"),
    "20261125154852367.schema.json": ("20261125154852367", "schema"),
    # from the tests' fixtures
    "20200101000000001.schema.json": ("20200101000000001", "schema"),
}
WRITTEN_DATA = {
    "p=0/bd042dab541b4cb5bee0_0_20261125154840542.parquet":
        ("bd042dab541b4cb5bee0", 0, "20261125154840542"),
    "db4b4ceefcda4a82a392_0_20261125154840542.parquet":
        ("db4b4ceefcda4a82a392", 0, "20261125154840542"),
    "8cfa2266f4714f709f33_0_20261125154852481.parquet":
        ("8cfa2266f4714f709f33", 0, "20261125154852481"),
    # from the tests' fixtures
    "p=1/cccc_3_20200101000000000.parquet": ("cccc", 3, "20200101000000000"),
    "b_0_20260101000000000.parquet": ("b", 0, "20260101000000000"),
    "abc_0_20260101000000000.parquet": ("abc", 0, "20260101000000000"),
}
WRITTEN_LOGS = {
    ".8cfa2266f4714f709f33_0_20261125154852481.log.20261125154853413_0.avro":
        ("8cfa2266f4714f709f33_0_20261125154852481", "20261125154853413", 0, "avro"),
    ".b293fae2afd64230b17c_0_20261125154917129.log.20261125154917579_0.parquet":
        ("b293fae2afd64230b17c_0_20261125154917129", "20261125154917579", 0, "parquet"),
    # from the tests' fixtures
    "p=1/.abc_0_20260101000000000.log.20260101000000001_3.avro":
        ("abc_0_20260101000000000", "20260101000000001", 3, "avro"),
    ".x.log.20260101000000001_0.parquet": ("x", "20260101000000001", 0, "parquet"),
}


# ---------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("state", [REQUESTED, INFLIGHT, COMPLETED])
@pytest.mark.parametrize("action", ["create", "commit", "deltacommit", "alter",
                                    "replacecommit", "compaction", "clean", "rollback"])
def test_timeline_names_round_trip(action, state):
    name = timeline_file(TS, action, state)
    assert parse_timeline_file(name) == TimelineName(TS, action, state)
    assert parse_timeline_file(f".evo/timeline/{name}") == TimelineName(TS, action, state)


def test_timeline_file_names_per_state():
    assert timeline_file(TS, "commit") == f"{TS}.commit"
    assert timeline_file(TS, "commit", INFLIGHT) == f"{TS}.commit.inflight"
    assert timeline_file(TS, "commit", REQUESTED) == f"{TS}.commit.requested"


def test_schema_and_layout_names_round_trip():
    assert schema_file(TS) == f"{TS}.schema.json" and layout_file(TS) == f"{TS}.layout.json"
    assert parse_schema_file(schema_file(TS)) == SchemaName(TS, "schema")
    assert parse_schema_file(layout_file(TS)) == SchemaName(TS, "layout")


@pytest.mark.parametrize("task", [0, 7, 12345])
def test_data_file_names_round_trip(task):
    name = data_file_name(TS, task)
    parsed = parse_data_file(name)
    assert parsed is not None and parsed.instant == TS and parsed.task == task
    assert len(parsed.file_id) == names.FILE_ID_LENGTH
    assert data_file_name(TS, task, parsed.file_id) == name
    assert parse_data_file(f"p=1/q=x/{name}") == parsed
    assert named_with_instant(f"p=1/{name}", TS) and not named_with_instant(name, OTHER)
    assert data_file_name(TS, task) != name  # a fresh file id each time


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_log_block_names_round_trip(fmt):
    base = f"p=1/{data_file_name(TS, 2, 'f' * 20)}"
    rel = log_block_path(base, OTHER, 5, fmt)
    stem = f"{'f' * 20}_2_{TS}"
    assert rel == f"p=1/{log_block_name(stem, OTHER, 5, fmt)}"
    assert rel == f"p=1/.{stem}.log.{OTHER}_5.{fmt}"
    assert parse_log_block(rel) == LogBlockName(stem, OTHER, 5, fmt)
    assert log_block_path(f"{stem}.parquet", OTHER, 5, fmt) == log_block_name(stem, OTHER, 5,
                                                                              fmt)
    temp = log_block_temp(rel, 1)
    assert parse_log_block_temp(temp) == OTHER
    assert parse_log_block(temp) is None and parse_data_file(rel) is None


def test_staged_names():
    assert staged_part_name(3) == "part-00003.parquet"
    assert staged_task(staged_part_name(42)) == 42
    assert staged_task("part-00007-0f6b5b3c-c000.snappy.parquet") == 7
    assert staged_task("other.parquet") == 0


# -------------------------------------------------------------------- written by evonb before
@pytest.mark.parametrize("name", sorted(WRITTEN_TIMELINE))
def test_timeline_names_written_before_parse(name):
    assert parse_timeline_file(name) == TimelineName(*WRITTEN_TIMELINE[name])
    parsed = parse_timeline_file(name)
    assert timeline_file(parsed.instant, parsed.action, parsed.state) == name


@pytest.mark.parametrize("name", sorted(WRITTEN_SCHEMAS))
def test_schema_names_written_before_parse(name):
    version, kind = WRITTEN_SCHEMAS[name]
    assert parse_schema_file(name) == SchemaName(version, kind)
    assert (schema_file if kind == "schema" else layout_file)(version) == name


@pytest.mark.parametrize("path", sorted(WRITTEN_DATA))
def test_data_file_names_written_before_parse(path):
    file_id, task, instant = WRITTEN_DATA[path]
    assert parse_data_file(path) == DataFileName(file_id, task, instant)
    assert path.endswith(data_file_name(instant, task, file_id))
    assert named_with_instant(path, instant)


@pytest.mark.parametrize("path", sorted(WRITTEN_LOGS))
def test_log_block_names_written_before_parse(path):
    parsed = parse_log_block(path)
    assert parsed == WRITTEN_LOGS[path]
    assert path.endswith(log_block_name(*parsed))
    assert parse_log_block_temp(f"{path}.0.tmp") == parsed.instant


# ------------------------------------------------------------------------------ no match
@pytest.mark.parametrize("name", [
    "", "table.json", "lock", f"{TS}.requested", f"{TS}.inflight", f"{TS}", f"{TS}.Commit",
    f"{TS[:-1]}.commit", f"{TS}0.commit", f"{TS}.commit.done", f"{TS}.commit.requested.x",
    f".{TS}.commit.abc.tmp", f"{TS}.1commit", "x.commit",
])
def test_not_timeline_names(name):
    assert parse_timeline_file(name) is None


@pytest.mark.parametrize("name", [
    f"{TS}.schema", f"{TS}.other.json", f"{TS[:-1]}.schema.json", f"x{TS}.layout.json",
    f".{TS}.schema.json.x1y2.tmp", f"{TS}.schema.json.tmp",
])
def test_not_schema_names(name):
    assert parse_schema_file(name) is None


@pytest.mark.parametrize("name", [
    "part-00000.parquet", f"abc_{TS}.parquet", f"abc_x_{TS}.parquet", f"abc_0_{TS}.avro",
    f"abc_0_{TS[:-1]}.parquet", "data.parquet", f"abc_0_{TS}.parquet.tmp",
    f".abc_0_{TS}.log.{OTHER}_0.avro", "_SUCCESS",
])
def test_not_data_file_names(name):
    assert parse_data_file(name) is None


@pytest.mark.parametrize("name", [
    f"abc_0_{TS}.parquet", f"abc_0_{TS}.log.{OTHER}_0.avro", f".abc.log.{OTHER}_0.orc",
    f".abc.log.{OTHER}_x.avro", f".abc.log.{OTHER[:-1]}_0.avro", f".abc.log.{OTHER}.avro",
    f"..log.{OTHER}_0.avro", f".abc.log.{OTHER}_0.avro.0.tmp",
])
def test_not_log_block_names(name):
    assert parse_log_block(name) is None


@pytest.mark.parametrize("name", [
    f".abc.log.{OTHER}_0.avro", f"abc.log.{OTHER}_0.avro.0.tmp", f".abc.log.{OTHER}.tmp",
    f".abc_0_{TS}.parquet.x.tmp",
])
def test_not_half_written_log_block_names(name):
    assert parse_log_block_temp(name) is None
