"""The ``evonb`` command line: every command on tables made in a temporary folder without
Spark (Parquet files adopted by ``evonb.convert``), its ``--json`` output parsed, its exit codes
and its error lines. Each command runs at least once through the installed console script
(``pip install -e .`` installs it); further cases call :func:`evonb.__main__.main` in this
process, which is quicker."""

from __future__ import annotations

import contextlib
import datetime
import decimal
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evonb
from evonb.__main__ import main

SCRIPT = Path(sys.executable).with_name("evonb")
if not SCRIPT.exists():  # pragma: no cover (an interpreter outside its environment)
    SCRIPT = Path(shutil.which("evonb") or "evonb")


def evonb_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed console script."""
    assert SCRIPT.exists(), "the evonb console script is not installed: pip install -e ."
    return subprocess.run([str(SCRIPT), *args], input=stdin, capture_output=True, text=True,
                          timeout=180, check=False)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """:func:`main` in this process, as :func:`evonb_cli` reports it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def data(*args: str, script: bool = False) -> object:
    """The parsed JSON of a command that succeeds (``script``: through the console script)."""
    out = (evonb_cli if script else run)(*args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def make_people(root: Path) -> evonb.Table:
    """A table with two rows in schema v0 (id, name, price, day, ts, tags), then v1 (name
    renamed to full_name) and v2 (age added): made without Spark."""
    root.mkdir()
    pq.write_table(pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "name": ["ann", None],
        "price": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(10, 2)),
        "day": [datetime.date(2026, 1, 2), None],
        "ts": pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC), None],
                       pa.timestamp("us", tz="UTC")),
        "tags": [["a", "b"], []],
    }), root / "part-0.parquet")
    t = evonb.convert(root, primary_key="id")
    t.alter(f"ALTER TABLE {t.name} RENAME COLUMN name TO full_name")
    t.alter(f"ALTER TABLE {t.name} ADD COLUMN age int")
    return t


@pytest.fixture(scope="module")
def people(tmp_path_factory) -> evonb.Table:
    """A table the read-only tests share."""
    return make_people(tmp_path_factory.mktemp("cli") / "people")


@pytest.fixture
def fresh(tmp_path) -> evonb.Table:
    """A table of one test, which may change it."""
    return make_people(tmp_path / "people")


# ------------------------------------------------------------------------ read-only
def test_history_lists_every_commit_with_its_schema_name(people):
    rows = data("history", people.path, script=True)
    assert [(r["operation"], r["schema_name"], r["files_added"]) for r in rows] == [
        ("create", "v0", 0), ("convert", "v0", 1), ("alter", "v1", 0), ("alter", "v2", 0)]
    assert [r["instant"] for r in rows] == [c.instant for c in people.history()]
    text = run("history", people.path, "--last", "1")
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0] == "History of people: 4 commits"
    assert lines[1].split() == ["instant", "completed", "operation", "schema", "effect"]
    assert lines[3].split()[0] == rows[-1]["instant"] and " alter " in lines[3]
    assert len(lines) == 4


def test_schema_by_name_all_versions_and_ddl(people):
    latest = data("schema", people.path, script=True)
    assert latest["name"] == "v2"
    assert [f["name"] for f in latest["fields"]] == [
        "id", "full_name", "price", "day", "ts", "tags", "age"]
    v0 = data("schema", people.path, "--version", "v0")
    assert v0["name"] == "v0" and v0["fields"][1]["name"] == "name"
    assert v0["fields"][1]["id"] == latest["fields"][1]["id"]  # the same column by ID
    every = data("schema", people.path, "--all")
    assert [v["name"] for v in every] == ["v0", "v1", "v2"]
    assert every[2]["schema"]["fields"] == latest["fields"]
    ddl = run("schema", people.path, "--version", "v1", "--ddl")
    assert ddl.returncode == 0 and ddl.stdout.startswith("id bigint, full_name string,")
    text = run("schema", people.path).stdout
    assert text.startswith("v2: schema ") and "full_name: optional string" in text


def test_diff_between_named_versions(people):
    d = data("diff", people.path, "v0", script=True)
    assert [(c["kind"], c["old_path"], c["new_path"]) for c in d["changes"]] == [
        ("added", None, "age"), ("renamed", "name", "full_name")]
    assert data("diff", people.path, "v1", "v2")["changes"][0]["new_path"] == "age"
    text = run("diff", people.path, "v0", "v1").stdout
    assert "renamed" in text and "name -> full_name" in text


def test_lineage_names_each_event(people):
    lin = data("lineage", people.path, script=True)
    assert [v["name"] for v in lin["versions"]] == ["v0", "v1", "v2"]
    col = next(c for c in lin["columns"] if c["name"] == "full_name")
    assert [(e["version"], e["kind"]) for e in col["events"]] == [
        ("v0", "born"), ("v1", "renamed")]
    assert run("lineage", people.path).stdout.startswith(
        "Lineage of people: 8 columns, 3 schema versions (v0 .. v2)")


def test_read_prints_a_table_and_json_records(people):
    rows = data("read", people.path, script=True)
    assert rows == [
        {"id": 1, "full_name": "ann", "price": "1.50", "day": "2026-01-02",
         "ts": "2026-01-02T03:04:05+00:00", "tags": ["a", "b"], "age": None},
        {"id": 2, "full_name": None, "price": None, "day": None, "ts": None, "tags": [],
         "age": None}]
    assert data("read", people.path, "--schema", "v0", "--columns", "id,name",
                "--limit", "1") == [{"id": 1, "name": "ann"}]
    assert data("read", people.path, "--as-of", "@0") == []  # the create commit: no file
    text = run("read", people.path, "--columns", "id,full_name,tags").stdout
    assert text.splitlines() == [
        "id  full_name  tags",
        "--  ---------  ----------",
        '1   ann        ["a", "b"]',
        "2   null       []",
        "(2 rows)"]
    capped = run("read", people.path, "--limit", "1").stdout
    assert capped.splitlines()[-1] == "(1 row; --limit 1 reached)"


def test_read_shows_dates_past_year_9999_as_spark_prints_them(tmp_path):
    """Spark's dates reach past year 9999, where Python's stop: such a value (a column, a
    struct member, a list element) is listed as Spark's text; before, the listing failed
    with ``ValueError: year 164111 is out of range``."""
    root = tmp_path / "far"
    root.mkdir()
    far = pa.array([59220784, None], pa.int32()).cast(pa.date32())  # +164111-01-01
    pq.write_table(pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "d": far,
        "s": pa.StructArray.from_arrays([far], names=["d"]),
        "l": pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), far),
        "near": pa.array([datetime.date(2024, 2, 29), None]),
    }), root / "part-0.parquet")
    t = evonb.convert(root, primary_key="id")
    assert data("read", t.path) == [
        {"id": 1, "d": "+164111-01-01", "s": {"d": "+164111-01-01"}, "l": ["+164111-01-01"],
         "near": "2024-02-29"},
        {"id": 2, "d": None, "s": {"d": None}, "l": [None], "near": None}]
    listing = run("read", t.path, "--columns", "id,d")
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines()[2].split() == ["1", "+164111-01-01"]


def test_check_and_iceberg_sync_from_the_console_script(fresh):
    ok = evonb_cli("check", fresh.path)
    assert ok.returncode == 0 and "OK: no problems" in ok.stdout
    assert data("check", fresh.path)["ok"] is True
    synced = evonb_cli("iceberg", "sync", fresh.path)
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.startswith(f"{fresh.path}/metadata/v1.metadata.json (published, ")
    assert run("iceberg", "sync", fresh.path).stdout.split()[1] == "(unchanged,"


def test_read_only_commands_start_no_jvm(people):
    """history, schema, diff, lineage, read and check run without loading py4j (so no
    JVM gateway) nor starting a Spark session."""
    code = (
        "import contextlib, io, sys\n"
        "from evonb.__main__ import main\n"
        f"t = {people.path!r}\n"
        "runs = [['history', t], ['schema', t, '--all'], ['diff', t, 'v0', 'v2'],\n"
        "        ['lineage', t], ['read', t, '--as-of', 'latest', '--schema', 'v1'],\n"
        "        ['check', t, '--deep']]\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    codes = [main(r + ['--json']) for r in runs]\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('py4j', 'pyspark'))\n"
        "print(codes, loaded)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[0, 0, 0, 0, 0, 0] []"


def test_python_dash_m_evonb_is_the_same_program(people):
    out = subprocess.run([sys.executable, "-m", "evonb", "diff", people.path, "v1", "--json"],
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == data("diff", people.path, "v1")


def test_every_command_has_help(capsys):
    out = evonb_cli("--help")
    assert out.returncode == 0
    commands = ["history", "schema", "diff", "lineage", "read", "alter", "compact", "cluster",
                "clean", "rollback", "check", "iceberg"]
    assert all(f"    {c} " in out.stdout for c in commands)
    for command in commands:
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: evonb {command} ")


# ------------------------------------------------------------------------- changes
def test_alter_a_clause_a_statement_from_stdin_and_a_dry_run(fresh):
    path = fresh.path
    preview = data("alter", path, "ALTER COLUMN age TYPE bigint", "--dry-run")
    assert (preview["committed"], preview["cost"]) == (False, "metadata-only")
    assert [c["kind"] for c in preview["changes"]] == ["retyped"]
    assert len(fresh.history()) == 4  # nothing committed
    done = data("alter", path, "RENAME COLUMN full_name TO who", script=True)
    assert (done["committed"], done["after_name"]) == (True, "v3")
    assert done["changes"][0]["new_path"] == "who"
    piped = evonb_cli("alter", path, "-", stdin=(
        "ALTER TABLE people ADD COLUMN note string COMMENT 'x; y'; "
        "ALTER TABLE people DROP COLUMN age"))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.splitlines()[-1].startswith("schema v4 (")
    assert [f["name"] for f in data("schema", path)["fields"]][-2:] == ["tags", "note"]


def test_rollback_and_clean(fresh):
    path = fresh.path
    last = fresh.history()[-1].instant
    undone = data("rollback", path, script=True)
    assert undone["operation"] == "rollback" and last in undone["effect"]
    assert "age" not in [f["name"] for f in data("schema", path)["fields"]]
    refused = run("rollback", path, "@0")
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"evonb: error: Commit {fresh.history()[0].instant} (create) cannot be rolled back",
        "hint: only data, schema and service commits can be undone"]
    cleaned = data("clean", path, "--retain-commits", "1", "--keep-schema-versions", "1",
                   script=True)
    assert cleaned["action"] == "clean", cleaned
    assert data("read", path, "--columns", "id") == [{"id": 1}, {"id": 2}]
    assert run("clean", path, "--retain-commits", "1").stdout == "nothing to clean\n"


@pytest.mark.spark
def test_compact_rewrites_old_schema_files_with_spark(fresh, spark):
    """compact rewrites the file of schema v0 in v2 with the managed Spark session (here the
    shared one, in this process: a console script would start a JVM of its own); with nothing
    to do, the console script says so without Spark."""
    commit = data("compact", fresh.path)
    assert (commit["operation"], commit["files_added"], commit["files_removed"],
            commit["rows_written"], commit["schema_name"]) == ("compact", 1, 1, 2, "v2")
    again = evonb_cli("compact", fresh.path)
    assert (again.returncode, again.stdout) == (0, "nothing to compact\n")
    assert [r["id"] for r in data("read", fresh.path, "--columns", "id")] == [1, 2]


@pytest.mark.spark
def test_cluster_sorts_by_the_given_columns_then_has_nothing_to_do(fresh, spark):
    """cluster rewrites the adopted file in the latest schema, sorted by --by, and saves the
    order; run again, it has nothing to do; a column that cannot be sorted is refused."""
    commit = data("cluster", fresh.path, "--by", "price,id")
    assert (commit["operation"], commit["files_added"], commit["files_removed"],
            commit["rows_written"]) == ("cluster", 1, 1, 2)
    assert evonb.open_table(fresh.path).properties["evonb.clustering.sort.ids"] == ",".join(
        str(fresh.schema.find_id(c)) for c in ("price", "id"))
    assert run("cluster", fresh.path).stdout == "nothing to cluster\n"
    refused = run("cluster", fresh.path, "--by", "tags")
    assert refused.returncode == 1 and "Cannot cluster by 'tags'" in refused.stderr
    # in file order: sorted by price ascending, nulls first (id 2 has no price)
    assert [r["id"] for r in data("read", fresh.path, "--columns", "id")] == [2, 1]
    # --zorder: the same columns z-ordered, a new order, kept as such
    z = data("cluster", fresh.path, "--by", "price,id", "--zorder")
    assert (z["operation"], z["files_removed"], z["rows_written"]) == ("cluster", 1, 2)
    assert evonb.open_table(fresh.path).properties["evonb.clustering.sort.ids"] == (
        "zorder:" + ",".join(str(fresh.schema.find_id(c)) for c in ("price", "id")))
    refused = run("cluster", fresh.path, "--by", "price", "--zorder")
    assert refused.returncode == 1 and "two or more columns" in refused.stderr


# -------------------------------------------------------------------------- errors
@pytest.mark.parametrize(("args", "lines"), [
    (["history", "{missing}"],
     ["evonb: error: No evonb table at {missing}",
      "hint: expected table.json in its .evo folder; check the path or create the table "
      "first"]),
    (["schema", "{table}", "--version", "v99"],
     ["evonb: error: No such schema version: 'v99'",
      "hint: table 'people' has 3 schema versions (v0 .. v2)"]),
    (["alter", "{table}", "RENAME COLUMN nme TO x"],
     ["evonb: error: Column not found: 'nme'", "hint: did you mean 'full_name'?"]),
    (["diff", "{table}", "v0", "v3"],
     ["evonb: error: No such schema version: 'v3'",
      "hint: table 'people' has 3 schema versions (v0 .. v2)"]),
    (["read", "{table}", "--columns", "id,nope"],
     ["evonb: error: Column not found: 'nope'"]),
])
def test_evonb_errors_are_one_line_and_a_hint(people, tmp_path, args, lines):
    fill = {"missing": str(tmp_path / "missing"), "table": people.path}
    script = args[0] in ("history", "alter")  # the others in this process: quicker
    out = (evonb_cli if script else run)(*(a.format(**fill) for a in args))
    assert out.returncode == 1
    assert out.stdout == ""
    got = out.stderr.splitlines()
    assert got[:len(lines)] == [line.format(**fill) for line in lines]
    assert "Traceback" not in out.stderr


def test_usage_errors_exit_with_2(people):
    nothing = evonb_cli()
    assert nothing.returncode == 2 and nothing.stderr.startswith("usage: evonb ")
    unknown = evonb_cli("histroy", people.path)
    assert unknown.returncode == 2 and "invalid choice: 'histroy'" in unknown.stderr
    negative = run("read", people.path, "--limit", "-1")
    assert negative.returncode == 2
    assert negative.stderr.splitlines()[-1] == "evonb read: error: --limit must be 0 or more"
    empty = run("read", people.path, "--columns", " , ")
    assert empty.returncode == 2
    assert empty.stderr.splitlines()[-1] == "evonb read: error: --columns names no column"
    force = run("check", people.path, "--force")
    assert force.returncode == 2 and force.stderr.endswith("--force needs --repair\n")
