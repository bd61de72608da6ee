"""The statements :func:`evonb.sql.parse_ddl` returns: small frozen dataclasses, one per kind.

Column paths are tuples of names (``("loc", "lat")``) so names holding dots stay unambiguous;
table names are dotted strings with backquotes where a part needs them (``db.`my t```).
Default values are plain Python values as written; the schema layer converts them to the
column's type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from evonb.schema.schema import Schema, format_path
from evonb.schema.types import Type

PositionKind = Literal["first", "after", "before"]


@dataclass(frozen=True, slots=True)
class ColumnPosition:
    """``FIRST``, ``AFTER col`` or ``BEFORE col``; ``column`` names a sibling (None for FIRST)."""

    kind: PositionKind
    column: str | None = None

    def __str__(self) -> str:
        return "FIRST" if self.kind == "first" else f"{self.kind.upper()} {self.column}"


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column of ``ADD COLUMNS``: ``path type [NOT NULL] [DEFAULT v] [COMMENT c] [position]``.

    ``has_default`` tells ``DEFAULT NULL`` (True, ``default`` None) from no DEFAULT clause.
    """

    path: tuple[str, ...]
    type: Type
    nullable: bool = True
    default: Any = None
    has_default: bool = False
    comment: str | None = None
    position: ColumnPosition | None = None

    @property
    def name(self) -> str:
        """The dotted path, backquoted where needed."""
        return format_path(self.path)


@dataclass(frozen=True, slots=True)
class AddColumns:
    """``ALTER TABLE t ADD COLUMN[S] ...``."""

    table: str
    columns: tuple[ColumnSpec, ...]


@dataclass(frozen=True, slots=True)
class DropColumns:
    """``ALTER TABLE t DROP COLUMN[S] [IF EXISTS] a, b.c``."""

    table: str
    paths: tuple[tuple[str, ...], ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameColumn:
    """``ALTER TABLE t RENAME COLUMN a.b TO c`` (``new_name`` is the new last name only)."""

    table: str
    path: tuple[str, ...]
    new_name: str


@dataclass(frozen=True, slots=True)
class AlterColumn:
    """``ALTER TABLE t ALTER|CHANGE [COLUMN] path <changes>``; unset fields are left alone.

    ``new_name`` comes from Hive's form ``CHANGE [COLUMN] old new type``; ``nullable`` is
    True for ``DROP NOT NULL`` and False for ``SET NOT NULL``; ``set_default`` marks
    ``SET DEFAULT v`` (``default`` may then be None for ``SET DEFAULT NULL``).
    """

    table: str
    path: tuple[str, ...]
    new_type: Type | None = None
    comment: str | None = None
    position: ColumnPosition | None = None
    nullable: bool | None = None
    default: Any = None
    set_default: bool = False
    drop_default: bool = False
    new_name: str | None = None


@dataclass(frozen=True, slots=True)
class CreateTable:
    """``CREATE TABLE [IF NOT EXISTS] t (columns) [USING p] [PARTITIONED BY (..)] ...``.

    ``properties`` holds ``TBLPROPERTIES`` and ``OPTIONS`` as strings. ``primary_key`` and
    ``precombine`` are read from the properties ``primaryKey``/``primary_key`` and
    ``preCombineField``/``precombine`` (a primary key may list several comma-separated columns).
    """

    table: str
    schema: Schema
    partition_by: tuple[str, ...] = ()
    properties: dict[str, str] = field(default_factory=dict)
    location: str | None = None
    comment: str | None = None
    using: str | None = None
    if_not_exists: bool = False
    primary_key: tuple[str, ...] = ()
    precombine: str | None = None


@dataclass(frozen=True, slots=True)
class SetProperties:
    """``ALTER TABLE t SET TBLPROPERTIES ('k' = 'v', ...)``: values as strings."""

    table: str
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UnsetProperties:
    """``ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)``."""

    table: str
    names: tuple[str, ...] = ()
    if_exists: bool = False


PropertyStatement = SetProperties | UnsetProperties
AlterStatement = AddColumns | DropColumns | RenameColumn | AlterColumn | PropertyStatement
Statement = AlterStatement | CreateTable

__all__ = [
    "AddColumns",
    "AlterColumn",
    "AlterStatement",
    "ColumnPosition",
    "ColumnSpec",
    "CreateTable",
    "DropColumns",
    "PropertyStatement",
    "RenameColumn",
    "SetProperties",
    "Statement",
    "UnsetProperties",
]
