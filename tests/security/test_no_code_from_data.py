"""No code is named by table data: a module, a package, a ``.pth`` file or a distribution
planted in a table's folder, and a ``module:attr`` value of ``evonb.lock.provider`` or
``evonb.conflict.policy`` in ``.evo/table.json`` or the table properties, never run.

The planted module writes a marker file when it is imported or run; every test checks that the
marker does not exist. The table folder is put on ``sys.path`` and made the working directory,
so an import of the planted module *would* succeed if evonb ever tried one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.api import Table
from evonb.errors import UnknownPluginError
from evonb.table.conflicts import Operation
from tests.concurrency.helpers import child_env, data_files, metadata_digest
from tests.plugins import POLICIES, install
from tests.security.planted import plant

SCHEMA = "id bigint not null, v string"
POLICY = "evonb.conflict.policy"
LOCK = "evonb.lock.provider"
PLANTED_NAMES = ["evil:run", "evil:Policy", "evil.Policy", "evil_pkg:run", "evil", "os:abort"]


def _rows(spark: Any, *rows: tuple[int, str]) -> Any:
    return spark.createDataFrame(list(rows), SCHEMA)


def _table(spark: Any, root: Path) -> Table:
    t = evonb.create_table(root, SCHEMA, primary_key="id")
    t.write(_rows(spark, (1, "a")))
    return t


def _set_in_table_json(root: Path, name: str, value: str) -> None:
    """Write a property into ``.evo/table.json`` directly, as anyone who can write the folder
    can."""
    path = root / ".evo" / "table.json"
    data = json.loads(path.read_text())
    data.setdefault("properties", {})[name] = value
    path.write_text(json.dumps(data))


def _planted(root: Path, marker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plant code in the table's folder and its ``.evo``, and make both importable."""
    plant(root, marker)
    plant(root / ".evo", marker)
    monkeypatch.syspath_prepend(str(root / ".evo"))
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.chdir(root)


def _state(root: Path) -> tuple[dict[str, str], set[str]]:
    return metadata_digest(root), data_files(root)


def _is_about(err: UnknownPluginError, prop: str, value: str) -> None:
    assert err.property == prop and err.value == value
    assert f"{prop}={value!r}" in err.message
    assert "default" in err.known or "file" in err.known


@pytest.mark.parametrize("value", PLANTED_NAMES)
def test_a_conflict_policy_named_in_table_json_never_runs(spark, warehouse: Path, marker: Path,
                                                         monkeypatch, value: str) -> None:
    t = _table(spark, warehouse / "t")
    _planted(t.root, marker, monkeypatch)
    _set_in_table_json(t.root, POLICY, value)
    before = _state(t.root)

    opened = evonb.open_table(t.root)  # opening and reading need no policy
    assert [tuple(r) for r in opened.read().collect()] == [(1, "a")]
    with pytest.raises(UnknownPluginError) as info:
        opened.write(_rows(spark, (2, "b")))
    _is_about(info.value, POLICY, value)
    with pytest.raises(UnknownPluginError) as info:
        opened.alter("ALTER TABLE t ADD COLUMNS (x int)")
    _is_about(info.value, POLICY, value)

    assert not marker.exists()
    assert _state(t.root) == before
    assert "evil" not in sys.modules and "evil_pkg" not in sys.modules


@pytest.mark.parametrize("value", PLANTED_NAMES)
def test_a_lock_provider_named_in_table_json_never_runs(spark, warehouse: Path, marker: Path,
                                                        monkeypatch, value: str) -> None:
    t = _table(spark, warehouse / "t")
    _planted(t.root, marker, monkeypatch)
    _set_in_table_json(t.root, LOCK, value)
    before = _state(t.root)

    opened = evonb.open_table(t.root)
    for attempt in (lambda: opened.write(_rows(spark, (2, "b"))),
                    lambda: opened.alter("ALTER TABLE t ADD COLUMNS (x int)"),
                    lambda: opened.set_properties({"owner": "me"}),
                    lambda: opened.clean()):
        with pytest.raises(UnknownPluginError) as info:
            attempt()
        _is_about(info.value, LOCK, value)

    assert not marker.exists()
    assert _state(t.root) == before
    assert "evil" not in sys.modules and "evil_pkg" not in sys.modules


@pytest.mark.parametrize("value", ["os:abort", "evil:run", "evil", "no-such-policy"])
def test_alter_set_tblproperties_refuses_an_unknown_policy(spark, warehouse: Path,
                                                           marker: Path, monkeypatch,
                                                           value: str) -> None:
    t = _table(spark, warehouse / "t")
    _planted(t.root, marker, monkeypatch)
    config = (t.root / ".evo" / "table.json").read_bytes()
    before = _state(t.root)
    schema = t.schema

    with pytest.raises(UnknownPluginError) as info:
        t.alter(f"ALTER TABLE t SET TBLPROPERTIES ('{POLICY}' = '{value}')")
    _is_about(info.value, POLICY, value)
    assert info.value.known == ["default", "rfc33", "strict"]
    with pytest.raises(UnknownPluginError):  # with a column change: neither is made
        t.alter(f"ALTER TABLE t ADD COLUMNS (x int);\n"
                f"ALTER TABLE t SET TBLPROPERTIES ('{POLICY}' = '{value}')")
    with pytest.raises(UnknownPluginError):
        t.set_properties({POLICY: value})

    assert (t.root / ".evo" / "table.json").read_bytes() == config
    assert _state(t.root) == before and evonb.open_table(t.root).schema == schema
    assert POLICY not in evonb.open_table(t.root).properties
    t.write(_rows(spark, (2, "b")))  # later writers are unaffected
    assert sorted(tuple(r) for r in evonb.open_table(t.root).read().collect()) == [
        (1, "a"), (2, "b")]
    assert not marker.exists()


def test_the_magics_refuse_an_unknown_policy_or_provider(evo, spark, warehouse: Path,
                                                         marker: Path) -> None:
    evo("create table t (id bigint not null, v string) tblproperties (primaryKey = 'id')")
    config = (warehouse / "t" / ".evo" / "table.json").read_bytes()
    with pytest.raises(UsageError) as info:
        evo(f"alter table t set tblproperties ('{POLICY}' = 'os:abort')")
    assert f"{POLICY}='os:abort'" in str(info.value) and "default, rfc33, strict" in str(
        info.value)
    assert (warehouse / "t" / ".evo" / "table.json").read_bytes() == config

    for prop, value in ((POLICY, "evil:run"), (LOCK, "os:abort"), (LOCK, "evil:Policy")):
        with pytest.raises(UsageError) as info:
            evo(f"create table u (id bigint) tblproperties ('{prop}' = '{value}')")
        assert f"{prop}={value!r}" in str(info.value)
        assert not (warehouse / "u").exists()
    assert not marker.exists()


@pytest.mark.parametrize(("prop", "value"), [(POLICY, "evil:run"), (POLICY, "os:abort"),
                                             (LOCK, "evil:Policy"), (LOCK, "os:abort")])
def test_create_table_refuses_an_unknown_name_and_creates_nothing(warehouse: Path,
                                                                  marker: Path, prop: str,
                                                                  value: str) -> None:
    with pytest.raises(UnknownPluginError) as info:
        evonb.create_table(warehouse / "t", SCHEMA, properties={prop: value})
    _is_about(info.value, prop, value)
    assert not (warehouse / "t").exists()
    assert not marker.exists()


@pytest.mark.parametrize(("prop", "value"), [(POLICY, "os:abort"), (LOCK, "evil:run")])
def test_adopting_data_refuses_an_unknown_name_and_changes_nothing(spark, tmp_path: Path,
                                                                   marker: Path, prop: str,
                                                                   value: str) -> None:
    folder = tmp_path / "data"
    _rows(spark, (1, "a")).write.parquet(str(folder))
    before = _tree_of(folder)
    with pytest.raises(UnknownPluginError) as info:
        evonb.convert(folder, properties={prop: value})
    _is_about(info.value, prop, value)
    assert _tree_of(folder) == before and not (folder / ".evo").exists()
    assert not marker.exists()


def _tree_of(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


CHILD = textwrap.dedent("""
    import evonb
    from evonb.errors import UnknownPluginError

    table = evonb.open_table(".")
    try:
        table.alter("ALTER TABLE t ADD COLUMNS (x int)")
    except UnknownPluginError as exc:
        print("refused:", exc.message)
    else:
        print("committed")
""")


@pytest.mark.parametrize("value", ["evil", "evil:Policy"])
def test_a_process_started_in_the_table_folder_runs_nothing_planted(warehouse: Path,
                                                                    marker: Path,
                                                                    value: str) -> None:
    """A new Python started in the table's folder has it on ``sys.path``: the planted module
    is importable there and the planted distribution registers ``evil``; neither is used."""
    t = evonb.create_table(warehouse / "t", SCHEMA, primary_key="id")
    plant(t.root, marker)
    _set_in_table_json(t.root, POLICY, value)
    before = _state(t.root)
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=t.root, capture_output=True,
                          text=True, env=child_env(), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"refused: Table property {POLICY}={value!r} names no known " \
                                  "conflict policy (known: default, rfc33, strict)"
    assert not marker.exists()
    assert _state(t.root) == before


class Counting:
    """A policy an installed package registers: counts the checks, lets everything commit."""

    checks: ClassVar[list[str]] = []

    def check(self, op: Operation, since: Any) -> str:
        self.checks.append(op.operation)
        return op.schema_version or (since[-1].schema_version if since
                                     else op.base_schema_version)


def test_a_policy_an_installed_package_registers_is_used_by_name(spark, warehouse: Path,
                                                                  tmp_path: Path,
                                                                  monkeypatch) -> None:
    install(monkeypatch, tmp_path / "site", "counting-policy",
            {POLICIES: {"counting": f"{__name__}:Counting"}})
    t = _table(spark, warehouse / "t")
    t.alter(f"ALTER TABLE t SET TBLPROPERTIES ('{POLICY}' = 'counting')")
    Counting.checks.clear()
    t.write(_rows(spark, (2, "b")), "upsert")
    t.alter("ALTER TABLE t ADD COLUMNS (x int)")
    assert Counting.checks == ["upsert", "alter"]
    with pytest.raises(UnknownPluginError) as info:
        t.alter(f"ALTER TABLE t SET TBLPROPERTIES ('{POLICY}' = '{__name__}:Counting')")
    assert info.value.known == ["counting", "default", "rfc33", "strict"]
    assert evonb.open_table(t.root).properties[POLICY] == "counting"
