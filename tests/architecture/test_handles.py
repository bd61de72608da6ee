"""The protocols that keep each package free of import cycles (``SchemaView``, ``DiffView``,
``TableHandle``, ``SparkTableHandle``, ``WriteJobHandle``) name every member their users read,
and the classes they stand for have every member they name."""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from pathlib import Path

import pytest

from evonb.schema.diffing import SchemaDiff
from evonb.schema.schema import Schema
from evonb.schema.views import DiffView, SchemaView
from evonb.spark.handles import SparkTableHandle, WriteJobHandle
from evonb.spark.table import SparkTable
from evonb.spark.writes import WriteJob
from evonb.table.handle import TableHandle
from evonb.table.table import BaseTable
from tests.architecture.imports import PACKAGE

PROTOCOLS = {p.__name__: p for p in (SchemaView, DiffView, TableHandle, SparkTableHandle,
                                     WriteJobHandle)}
RETURNS = {("DiffView", "before"): "SchemaView", ("DiffView", "after"): "SchemaView",
           ("WriteJobHandle", "table"): "SparkTableHandle"}
"""Members that are themselves read through a protocol."""


def members(proto: type) -> set[str]:
    """The members a protocol names, its bases' included."""
    out: set[str] = set()
    for cls in proto.__mro__:
        if cls is object or cls.__name__ in ("Protocol", "Generic"):
            continue
        out |= {n for n in vars(cls) if not n.startswith("_")}
        out |= set(getattr(cls, "__annotations__", {}))
    return out


def reads(path: Path) -> list[tuple[str, str, str]]:
    """``(function, protocol, member)`` for every attribute read on a name that holds a
    protocol in ``path``: a parameter annotated with one, a local assigned from a member
    that returns one (``table = job.table``), or such a member read directly."""
    out = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if not isinstance(fn, ast.FunctionDef):
            continue
        held = {a.arg: ast.unparse(a.annotation) for a in [*fn.args.args, *fn.args.kwonlyargs]
                if a.annotation is not None and ast.unparse(a.annotation) in PROTOCOLS}

        def kind(node: ast.expr, held: dict[str, str] = held) -> str | None:
            if isinstance(node, ast.Name):
                return held.get(node.id)
            if isinstance(node, ast.Attribute):
                outer = kind(node.value, held)
                return RETURNS.get((outer, node.attr)) if outer else None
            return None

        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                pairs = (zip(target.elts, value.elts, strict=False)
                         if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                         else [(target, value)])
                for t, v in pairs:
                    if isinstance(t, ast.Name) and kind(v):
                        held[t.id] = kind(v)  # type: ignore[assignment]
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and (proto := kind(node.value)):
                out.append((fn.name, proto, node.attr))
    return out


USERS = ["schema/arrow_fields.py", "schema/avro_fields.py", "schema/spark_fields.py",
         "schema/json_fields.py", "schema/diffing.py", "schema/render.py",
         "table/conflicts.py", "table/preview.py", "table/revert.py", "table/rollback.py",
         "table/transaction.py", "spark/mor.py", "spark/writes.py"]


@pytest.mark.parametrize("module", USERS)
def test_a_protocol_names_every_member_its_users_read(module: str) -> None:
    found = reads(PACKAGE / module)
    assert found, f"{module} reads nothing through a protocol: the check sees no use"
    missing = sorted({f"{fn}: {proto}.{attr}" for fn, proto, attr in found
                      if attr not in members(PROTOCOLS[proto])})
    assert missing == []


def test_the_read_finder_follows_locals_and_members() -> None:
    found = reads(PACKAGE / "spark" / "mor.py")
    assert ("write_delta", "WriteJobHandle", "config") in found
    # ``table, config, spark = job.table, ...`` then ``table.stored_rows_reader(...)``
    assert ("write_delta", "SparkTableHandle", "stored_rows_reader") in found
    assert ("_write_delta_in_driver", "SparkTableHandle", "root") in found  # job.table.root


def _init_attributes(cls: type) -> set[str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "self"}


@pytest.mark.parametrize(("proto", "cls"), [
    (SchemaView, Schema), (DiffView, SchemaDiff), (TableHandle, BaseTable),
    (SparkTableHandle, SparkTable), (WriteJobHandle, WriteJob)])
def test_the_class_has_every_member_its_protocol_names(proto: type, cls: type) -> None:
    have = set(dir(cls)) | set(getattr(cls, "__dataclass_fields__", {}))
    for klass in cls.__mro__:
        if klass is not object and "__init__" in vars(klass):
            with contextlib.suppress(OSError, TypeError):  # a generated __init__
                have |= _init_attributes(klass)
    assert sorted(members(proto) - have) == []
