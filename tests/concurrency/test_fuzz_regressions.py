"""The fixed corpus of the fuzzing (tests/stress/test_fuzz_ddl.py), which draws fresh inputs
on every run: the failures it found, and inputs of every shape it draws, kept as regression
tests with the outcome each must have."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import evonb
from evonb.errors import DataValidationError, EvoError
from evonb.table.check import check_table
from tests.concurrency.helpers import metadata_digest
from tests.stress.test_fuzz_ddl import BASE

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("ddl", "nulls"), [
    ("ALTER TABLE t ALTER COLUMN tags.element SET NOT NULL", 1),  # was an AnalysisException
    ("ALTER TABLE t ALTER COLUMN loc.lat SET NOT NULL", 0),  # a null struct is no violation
    ("ALTER TABLE t ALTER COLUMN loc.lon SET NOT NULL", 1),
    ("ALTER TABLE t ALTER COLUMN m.value.n SET NOT NULL", 1),
    ("ALTER TABLE t ALTER COLUMN m.value SET NOT NULL", 0),
])
def test_set_not_null_on_nested_fields_counts_nulls(spark, warehouse, ddl: str, nulls: int) -> None:
    t = evonb.create_table(warehouse / "t", "id bigint not null, tags array<string>, "
                           "loc struct<lat:double, lon:double>, m map<string, struct<n:int>>",
                           primary_key="id")
    t.write(spark.createDataFrame([(1, ["a", None], None, {"k": {"n": None}}),
                                   (2, None, (1.0, None), None)], t.read().schema))
    if nulls:
        with pytest.raises(DataValidationError) as info:
            t.alter(ddl)
        assert info.value.count == nulls
    else:
        t.alter(ddl)


# ------------------------------------------------------------- the fixed DDL corpus
# Statements of the shapes the DDL fuzzing (tests/stress/test_fuzz_ddl.py) draws, against its
# table, with what each must do: "ok" (a new schema version), "no change", or the evonb error
# it raises; unless "ok", the table's metadata is byte-identical to before. The fuzzing draws
# fresh statements on every run; these stay.
DDL_CORPUS = [
    ("ALTER TABLE t ADD COLUMNS (`a b` int, `名前` string COMMENT 'x')", "ok"),
    ("ALTER TABLE t ADD COLUMNS (x int NOT NULL)", "SchemaEvolutionError"),
    ("ALTER TABLE t ADD COLUMNS (x int NOT NULL DEFAULT 0)", "ok"),
    ("ALTER TABLE t ADD COLUMNS (x decimal(39,2))", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x decimal(2,5))", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x struct<a int, a int>)", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x struct<>)", "SchemaEvolutionError"),
    ("ALTER TABLE t ADD COLUMNS (x char(0))", "ok"),
    ("ALTER TABLE t ADD COLUMNS (x int DEFAULT 99999999999999999999999)", "DDLDefaultError"),
    ("ALTER TABLE t ADD COLUMNS (x int DEFAULT 1e400)", "DDLDefaultError"),
    ("ALTER TABLE t ADD COLUMNS (x date DEFAULT DATE 'x')", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x string DEFAULT 'unterminated)", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x binary DEFAULT X'0')", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x tinyint DEFAULT 128Y)", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (loc.alt double AFTER loc.lat)", "ok"),
    ("ALTER TABLE t ADD COLUMNS (`` int)", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (ID int)", "SchemaEvolutionError"),
    ("ALTER TABLE t ADD COLUMNS (x int AFTER nope)", "ColumnNotFoundError"),
    ("ALTER TABLE t ADD COLUMNS (x\x00 int)", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (`x`` int)", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x int", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS x int)", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x int) /* ", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x int) -- note", "ok"),
    ("ALTER TABLE t DROP COLUMN id", "SchemaEvolutionError"),
    ("ALTER TABLE t DROP COLUMN IF EXISTS nope", "no change"),
    ("ALTER TABLE t DROP COLUMN `odd name`", "ok"),
    ("ALTER TABLE t DROP COLUMN attrs.value.n", "ok"),
    ("ALTER TABLE t DROP", "DDLSyntaxError"),
    ("ALTER TABLE t RENAME COLUMN name TO `it's`", "ok"),
    ("ALTER TABLE t RENAME COLUMN name TO `a.b`", "ok"),
    ("ALTER TABLE t RENAME COLUMN name TO ``", "DDLSyntaxError"),
    ("ALTER TABLE t RENAME COLUMN name TO price", "SchemaEvolutionError"),
    ("ALTER TABLE t RENAME COLUMN loc.lat TO latitude", "ok"),
    ("ALTER TABLE t RENAME COLUMN ` TO y", "DDLSyntaxError"),
    ("ALTER TABLE t ALTER COLUMN price TYPE int", "SchemaEvolutionError"),
    ("ALTER TABLE t ALTER COLUMN price TYPE strin", "DDLSyntaxError"),
    ("ALTER TABLE t ALTER COLUMN id TYPE int", "SchemaEvolutionError"),
    ("ALTER TABLE t ALTER COLUMN tags.element TYPE int", "SchemaEvolutionError"),
    ("ALTER TABLE t ALTER COLUMN name TYPE TYPE string", "DDLSyntaxError"),
    ("ALTER TABLE t ALTER COLUMN loc FIRST", "ok"),
    ("ALTER TABLE t ALTER COLUMN loc.lon FIRST", "ok"),
    ("ALTER TABLE t ALTER COLUMN name AFTER loc.lat", "DDLSyntaxError"),
    ("ALTER TABLE t ALTER COLUMN name BEFORE id", "ok"),
    ("ALTER TABLE t ALTER COLUMN name SET NOT NULL", "ok"),
    ("ALTER TABLE t ALTER COLUMN id DROP NOT NULL", "ok"),
    ("ALTER TABLE t ALTER COLUMN price SET DEFAULT 'text'", "InvalidDefaultError"),
    ("ALTER TABLE t ALTER COLUMN price SET DEFAULT 1.5 DROP DEFAULT", "DDLSyntaxError"),
    ("ALTER TABLE t ALTER COLUMN name COMMENT '💥' TYPE string FIRST", "ok"),
    ("ALTER TABLE t ALTER COLUMN", "DDLSyntaxError"),
    ("ALTER TABLE t ADD COLUMNS (x int); ALTER TABLE t DROP COLUMN x", "SchemaEvolutionError"),
    ("ALTER TABLE t ADD COLUMNS (x int); ALTER TABLE t ADD COLUMNS (x int)",
     "SchemaEvolutionError"),
    ("ALTER TABLE t DROP COLUMN name; ALTER TABLE t RENAME COLUMN price TO name", "ok"),
    ("ALTER TABLE t ADD COLUMNS (x int);", "ok"),
]


@pytest.fixture(scope="module")
def fuzz_table(tmp_path_factory) -> Path:
    """A table of the fuzzing's schema, never changed: each case works on a copy."""
    path = tmp_path_factory.mktemp("corpus") / "t"
    evonb.create_table(path, BASE, primary_key="id")
    return path


@pytest.mark.parametrize(("ddl", "outcome"), DDL_CORPUS)
def test_ddl_corpus(fuzz_table, tmp_path, ddl: str, outcome: str) -> None:
    shutil.copytree(fuzz_table, tmp_path / "t")
    t = evonb.open_table(tmp_path / "t")
    before = metadata_digest(t.path)
    version = t.schema.version_id
    if outcome == "ok":
        t.alter(ddl)
        reopened = evonb.open_table(t.path)
        assert reopened.schema.version_id != version
        assert reopened.schema.to_dict() == t.schema.to_dict()
        assert check_table(t.path).ok
    elif outcome == "no change":
        t.alter(ddl)
        assert evonb.open_table(t.path).schema.version_id == version
    else:
        with pytest.raises(EvoError) as info:
            t.alter(ddl)
        assert type(info.value).__name__ == outcome, info.value
        assert metadata_digest(t.path) == before


# ------------------------------------------------------------ the fixed %evo corpus
# Lines of the magic fuzzing: each either works (the rows a read shows, the service that ran,
# the table created) or is refused with one UsageError ("usage") that carries no Java or
# Python trace; none leaves anything outside the warehouse.
LONG = "a" * 300
MAGIC_CORPUS = [
    ("read t --limit 2", ("rows", 2)),
    ("read t --limit 0", ("rows", 0)),
    ("read t --limit -1", "usage"),
    ("read t --limit nan", "usage"),
    ("read t --limit 1e400", "usage"),
    ("read t --limit 99999999999999999999999999999", "usage"),  # was a Java NumberFormatError
    ("sql --limit 99999999999999999999999999999 select * from t", "usage"),
    ("sql --limit inf select * from t", "usage"),
    ("sql --limit=\r select * from t", "usage"),  # read stale files via a left view
    ("sql --limit=1\r\n--c\rselect * from t", ("rows", 1)),  # \r ends a -- comment
    ("clean t --retain-commits 2", ("service", "clean")),
    ("clean t --retain-commits nan", "usage"),  # the four were TypeErrors
    ("clean t --retain-commits 1.5", "usage"),
    ("clean t --retain-commits [1]", "usage"),
    ("clean t --retain-commits 2**64", "usage"),
    ("clean t --retain-hours nan", "usage"),  # was a TypeError
    ("clean t --retain-hours 1e400", "usage"),  # was an OverflowError
    ("clean t --retain-hours -1", "usage"),
    ("clean t --keep-schema-versions -5", "usage"),
    ("clean t --keep-schema-versions 99999999999999999999999999", ("service", "clean")),
    ("rollback t @99999999999999999999", "usage"),
    ("describe t as of nan", "usage"),
    ("diff t @-99999", "usage"),
    ("read ''", "usage"),
    ("read ../t", "usage"),
    ("read /t", "usage"),
    ("read ~", "usage"),
    ("describe ~/t", "usage"),
    ("create table `..` (id bigint)", "usage"),
    ("create table `../x` (id bigint)", "usage"),  # was created beside the warehouse
    ("create table `x/../../y` (id bigint)", "usage"),
    ("create table `t\x00` (id bigint)", "usage"),
    (f"create table `{LONG}` (id bigint)", "usage"),  # an OSError (file name too long)
    (f"read {LONG}", "usage"),  # an OSError (file name too long)
    ("create table `名前` (id bigint)", ("table", "名前")),
    ("read `t`", ("rows", 2)),
]
TRACES = ("JVM stacktrace", "\tat org.", "java.lang.", "py4j", "Py4J", "Traceback")


@pytest.fixture(scope="module")
def magic_table(spark, tmp_path_factory) -> Path:
    """The table ``t`` of the magic fuzzing (two rows, two commits), never changed: each case
    works on a copy."""
    path = tmp_path_factory.mktemp("corpus") / "t"
    t = evonb.create_table(path, "id bigint not null, v string", primary_key="id")
    t.write(spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, v string"))
    t.alter("ALTER TABLE t ADD COLUMNS (w int)")
    return path


@pytest.fixture
def ip(warehouse):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("evonb")
    magics = shell.magics_manager.registry["EvoMagics"]
    magics.context.locations.clear()
    shell.run_line_magic("config", f"Evo.warehouse = {str(warehouse)!r}")
    yield shell
    magics.context.locations.clear()


def outside(root: Path, warehouse: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p != warehouse and warehouse not in p.parents}


@pytest.mark.parametrize(("line", "outcome"), MAGIC_CORPUS,
                         ids=[f"{i}" for i in range(len(MAGIC_CORPUS))])
def test_magic_corpus(spark, magic_table, ip, warehouse, line: str, outcome: Any) -> None:
    from IPython.core.error import UsageError

    shutil.copytree(magic_table, warehouse / "t")
    before = outside(warehouse.parent, warehouse)
    if outcome != "usage":
        result = ip.run_line_magic("evo", line)
        what, expected = outcome
        if what == "rows":
            assert len(result.rows) == expected
        elif what == "service":
            assert result.service == expected and result.table.name == "t"
        else:
            assert f"Table {expected}" in repr(result)
            assert evonb.open_table(warehouse / expected).name == expected
    else:
        with pytest.raises(UsageError) as info:
            ip.run_line_magic("evo", line)
        assert not any(trace in str(info.value) for trace in TRACES), str(info.value)
    assert outside(warehouse.parent, warehouse) == before
