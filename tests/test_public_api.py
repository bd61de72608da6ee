"""The public names: the example from the issue, run verbatim, with its exact results."""

from __future__ import annotations

import subprocess
import sys

import pytest

EXAMPLE = """\
from evonb import EvoError, DDLSyntaxError, SchemaEvolutionError, ColumnNotFoundError
from evonb.schema import Schema, SchemaUpdate, diff
import evonb
s = Schema.from_ddl("id bigint not null, name string, loc struct<lat:double,lon:double>")
s.find("loc.lat").id;  s.max_column_id;  s.version_id;  str(s.find("id").type) == "bigint"
s2 = SchemaUpdate(s).add_column("loc.alt", "double", after="lat").rename_column("name", "full_name").apply()
s3 = evonb.sql.apply_ddl(s2, "ALTER TABLE t ALTER COLUMN id COMMENT 'key'; ALTER TABLE t DROP COLUMN loc.lon")
d = diff(s, s3);  [c.kind for c in d.changes]
Schema.from_json(s3.to_json()) == s3;  Schema.from_spark(s3.to_spark()) == s3
"""  # noqa: E501


@pytest.fixture(scope="module")
def example() -> dict:
    namespace: dict = {}
    exec(compile(EXAMPLE, "<public-api example>", "exec"), namespace)
    return namespace


def test_example_runs_verbatim(example: dict) -> None:
    assert {"s", "s2", "s3", "d", "Schema", "SchemaUpdate", "diff", "evonb"} <= set(example)


def test_example_first_schema(example: dict) -> None:
    from evonb.schema import NestedField, StructType
    from evonb.schema.types import BIGINT, DOUBLE, STRING

    s = example["s"]
    assert s.find("loc.lat").id == 4
    assert s.max_column_id == 5
    assert s.version_id == "00000000000000000"
    assert str(s.find("id").type) == "bigint"
    assert s.fields == (
        NestedField(1, "id", BIGINT, False),
        NestedField(2, "name", STRING),
        NestedField(3, "loc", StructType((NestedField(4, "lat", DOUBLE),
                                          NestedField(5, "lon", DOUBLE)))),
    )


def test_example_update(example: dict) -> None:
    s2 = example["s2"]
    assert list(zip(s2.paths(), s2.field_ids(), strict=True)) == [
        ("id", 1), ("full_name", 2), ("loc", 3), ("loc.lat", 4), ("loc.alt", 6), ("loc.lon", 5),
    ]
    assert s2.max_column_id == 6
    assert s2.version_id == "00000000000000000"
    assert str(s2.find("loc").type) == "struct<lat:double,alt:double,lon:double>"


def test_example_ddl(example: dict) -> None:
    s3 = example["s3"]
    assert list(zip(s3.paths(), s3.field_ids(), strict=True)) == [
        ("id", 1), ("full_name", 2), ("loc", 3), ("loc.lat", 4), ("loc.alt", 6),
    ]
    assert s3.find("id").comment == "key"
    assert s3.find("id").nullable is False
    assert s3.max_column_id == 6  # the dropped ID 5 is never reused


def test_example_diff(example: dict) -> None:
    d = example["d"]
    assert [c.kind for c in d.changes] == ["added", "dropped", "renamed", "comment"]
    assert [(c.kind, c.field_id, c.old_path, c.new_path, c.old, c.new) for c in d.changes] == [
        ("added", 6, None, "loc.alt", None, "double"),
        ("dropped", 5, "loc.lon", None, "double", None),
        ("renamed", 2, "name", "full_name", "name", "full_name"),
        ("comment", 1, "id", "id", None, "key"),
    ]


def test_example_round_trips(example: dict) -> None:
    schema, s3 = example["Schema"], example["s3"]
    assert schema.from_json(s3.to_json()) == s3
    assert schema.from_spark(s3.to_spark()) == s3


def test_error_hierarchy() -> None:
    import evonb
    from evonb import ColumnNotFoundError, DDLSyntaxError, EvoError, SchemaEvolutionError

    for name in evonb.errors.__all__:
        cls = getattr(evonb, name)
        assert issubclass(cls, EvoError), name
        assert cls is getattr(evonb.errors, name)
    assert issubclass(DDLSyntaxError, EvoError)
    assert issubclass(SchemaEvolutionError, EvoError)
    assert issubclass(ColumnNotFoundError, EvoError)
    assert issubclass(evonb.InvalidDefaultError, SchemaEvolutionError)
    assert issubclass(evonb.WriteSchemaError, SchemaEvolutionError)


def test_example_errors() -> None:
    import evonb
    from evonb import ColumnNotFoundError, DDLSyntaxError, SchemaEvolutionError
    from evonb.schema import Schema, SchemaUpdate

    s = Schema.from_ddl("id bigint not null, name string, loc struct<lat:double,lon:double>")
    with pytest.raises(DDLSyntaxError):
        Schema.from_ddl("id bigint not null,")
    with pytest.raises(ColumnNotFoundError) as exc:
        s.find("loc.lag")
    assert exc.value.suggestion == "loc.lat"
    with pytest.raises(SchemaEvolutionError):
        SchemaUpdate(s).add_column("x", "int", nullable=False)
    with pytest.raises(SchemaEvolutionError):
        evonb.sql.apply_ddl(s, "ALTER TABLE t ALTER COLUMN id TYPE int")


def test_schema_package_exports() -> None:
    import evonb.schema

    for name in evonb.schema.__all__:
        assert getattr(evonb.schema, name) is not None, name
    assert evonb.schema.INITIAL_VERSION == "00000000000000000"
    assert evonb.schema.ROOT_ID == -1


def test_lazy_modules() -> None:
    import evonb
    import evonb.schema
    import evonb.sql

    assert evonb.schema is sys.modules["evonb.schema"]
    assert evonb.sql is sys.modules["evonb.sql"]
    assert evonb.__version__ == "0.1.0"
    with pytest.raises(AttributeError, match="module 'evonb' has no attribute 'nope'"):
        evonb.nope  # noqa: B018


def test_core_imports_without_pyspark() -> None:
    code = "import evonb, evonb.schema, evonb.sql, sys; assert 'pyspark' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr


def test_core_works_without_pyspark() -> None:
    """The schema core, JSON and DDL work (and stay Spark-free) when used, not only imported."""
    code = (
        "import sys\n"
        "from evonb.schema import Schema, SchemaUpdate, diff\n"
        "import evonb.sql\n"
        "s = Schema.from_ddl('a int, b struct<c:string>')\n"
        "t = SchemaUpdate(s).add_column('b.d', 'long').drop_column('a').apply()\n"
        "t = evonb.sql.apply_ddl(t, 'ALTER TABLE x RENAME COLUMN b.c TO e')\n"
        "assert Schema.from_json(t.to_json()) == t\n"
        "assert [c.kind for c in diff(s, t)] == ['added', 'dropped', 'renamed']\n"
        "str(t); repr(t); t.to_ddl(); t._repr_html_()\n"
        "assert 'pyspark' not in sys.modules, sorted(m for m in sys.modules if 'spark' in m)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
