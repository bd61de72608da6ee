"""Table names in the ``%evo`` magics stay in the warehouse: a name that is a path, climbs out
with ``..`` or reaches a link to elsewhere is refused, and nothing is created outside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from IPython.core.error import UsageError

import evonb
from evonb.errors import TableNameError
from evonb.notebook.context import warehouse_path


def _tree(folder: Path) -> set[str]:
    """Every path under ``folder`` (relative), links not followed."""
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


@pytest.mark.parametrize(("name", "reason"), [
    ("`../x`", "contains '..'"),
    ("../../etc", "contains '..'"),
    ("'../../etc'", "contains '..'"),
    ("`/tmp/x`", "contains '/'"),
    ("`~/x`", "contains '/'"),
    ("`~x`", "starts with '~'"),
    ("a/b", "contains '/'"),
    ("`a\\b`", "contains '\\'"),
    ("a..b", "contains '..'"),
    ("`a`.` `.`b`", "has an empty part"),
    (".x", "has an empty part"),
    ("x.", "has an empty part"),
    ("``", "is empty"),
    ("  ", "is empty"),
])
def test_names_that_are_paths_are_refused(warehouse: Path, name: str, reason: str) -> None:
    with pytest.raises(TableNameError) as info:
        warehouse_path(warehouse, name)
    assert info.value.name == name
    assert reason in info.value.message
    assert "LOCATION '...'" in (info.value.hint or "")


def test_plain_and_dotted_names_are_folders_in_the_warehouse(warehouse: Path) -> None:
    root = warehouse.resolve()
    assert warehouse_path(warehouse, "trips") == root / "trips"
    assert warehouse_path(warehouse, "`sales`.`eu`.orders") == root / "sales" / "eu" / "orders"
    assert warehouse_path(warehouse, " `odd name` ") == root / "odd name"


@pytest.mark.parametrize("name", ["`../x`", "`../../x`", "`/ABS/x`", "`~/x`", "`a/b`",
                                  "`a\\b`", "`..`.x"])
def test_create_table_with_a_path_for_a_name_creates_nothing(evo, warehouse: Path,
                                                             tmp_path: Path, monkeypatch,
                                                             name: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    name = name.replace("/ABS", str(tmp_path))
    before = _tree(tmp_path)
    with pytest.raises(UsageError) as info:
        evo(f"create table {name} (id bigint)")
    assert "Table name" in str(info.value)
    assert "LOCATION '...' in CREATE TABLE" in str(info.value)
    assert _tree(tmp_path) == before  # nothing inside or outside the warehouse


@pytest.mark.parametrize("command", ["describe", "history", "read"])
@pytest.mark.parametrize("name", ["'../../etc'", "../outside", "`/tmp/x`", "~/x", "a/b"])
def test_other_commands_refuse_paths_for_names(evo, spark, warehouse: Path, tmp_path: Path,
                                               command: str, name: str) -> None:
    evonb.create_table(tmp_path / "outside", "id bigint")  # a real table there
    with pytest.raises(UsageError, match="Table name"):
        evo(f"{command} {name}")


def test_alter_of_a_path_name_leaves_the_table_there_unchanged(evo, warehouse: Path,
                                                                tmp_path: Path) -> None:
    outside = evonb.create_table(tmp_path / "outside", "id bigint")
    with pytest.raises(UsageError, match=r"contains '\.\.'"):
        evo("alter table `../outside` add columns (x int)")
    assert evonb.open_table(outside.path).schema.column_names == ["id"]
    assert len(evonb.open_table(outside.path).history()) == 1


def test_a_table_outside_is_named_through_location(evo, warehouse: Path, tmp_path: Path) -> None:
    where = tmp_path / "elsewhere" / "t"
    evo(f"create table t (id bigint) location '{where}'")
    assert (where / ".evo" / "table.json").is_file()
    assert "Table t" in repr(evo("describe t"))
    with pytest.raises(UsageError, match="Table name"):  # not by its path
        evo(f"describe {where}")


def test_a_link_in_the_warehouse_to_elsewhere_is_not_followed(ip, evo, warehouse: Path,
                                                               tmp_path: Path, spark) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    table = evonb.create_table(outside / "t", "id bigint")
    (warehouse / "link").symlink_to(outside, target_is_directory=True)
    (warehouse / "tlink").symlink_to(outside / "t", target_is_directory=True)
    before = _tree(outside)

    with pytest.raises(UsageError, match="leads out of the warehouse"):
        evo("create table link.t2 (id bigint)")
    with pytest.raises(UsageError, match="leads out of the warehouse"):
        evo("create table `link`.`t3` (id bigint)")
    for command in ("describe tlink", "history tlink", "read tlink", "compact tlink",
                    "describe link.t"):
        with pytest.raises(UsageError, match="leads out of the warehouse"):
            evo(command)
    with pytest.raises(UsageError, match="leads out of the warehouse"):
        evo("alter table tlink add columns (x int)")
    assert _tree(outside) == before
    assert evonb.open_table(table.path).schema.column_names == ["id"]

    # Not listed as a table of the warehouse, so SQL does not read it either.
    magics = ip.magics_manager.registry["EvoMagics"]
    assert magics.context.table_names() == []
    with pytest.raises(UsageError) as info:
        evo("sql select * from tlink")
    assert "tlink" in str(info.value)


def test_links_within_the_warehouse_still_work(evo, warehouse: Path) -> None:
    (warehouse / "real").mkdir()
    (warehouse / "alias").symlink_to(warehouse / "real", target_is_directory=True)
    evo("create table alias.t (id bigint)")
    assert (warehouse / "real" / "t" / ".evo" / "table.json").is_file()
    assert "Table t" in repr(evo("describe alias.t"))


def test_a_link_loop_is_refused(warehouse: Path) -> None:
    os.symlink(warehouse / "b", warehouse / "a")
    os.symlink(warehouse / "a", warehouse / "b")
    with pytest.raises(TableNameError):
        warehouse_path(warehouse, "a.t")


@pytest.mark.parametrize("command", ["create table {} (id bigint)", "describe {}",
                                     "alter table {} add columns (x int)"])
def test_a_name_too_long_for_a_folder_is_a_clear_error(evo, warehouse: Path, tmp_path: Path,
                                                       command: str) -> None:
    """Found by the fuzz test: a 300-character name reached the file system (OSError)."""
    before = _tree(tmp_path)
    with pytest.raises(UsageError) as info:
        evo(command.format("t" * 300))
    assert "has a part of 300 bytes: a folder name holds at most 255" in str(info.value)
    assert _tree(tmp_path) == before
    assert warehouse_path(warehouse, "é" * 127) == warehouse.resolve() / ("é" * 127)
    with pytest.raises(TableNameError):
        warehouse_path(warehouse, "é" * 128)  # 256 bytes
