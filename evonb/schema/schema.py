"""``Schema``: a versioned, immutable tree of fields with IDs, and lookups by path or ID."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evonb.errors import ColumnNotFoundError, SchemaEvolutionError
from evonb.schema.types import (
    ELEMENT,
    KEY,
    VALUE,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
    with_children,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql.types import StructType as SparkStructType

    from evonb.schema.diffing import SchemaDiff

INITIAL_VERSION = "00000000000000000"
ROOT_ID = -1
"""The parent ID of top-level columns."""

Path = str | tuple[str, ...]


def parse_path(path: Path) -> tuple[str, ...]:
    """Split a dotted path into names. Backquotes protect dots: ```a.b`.c`` -> ``("a.b", "c")``.

    A tuple is taken as it is, so names containing dots can always be addressed.
    """
    if isinstance(path, tuple):
        if not path or not all(isinstance(p, str) and p for p in path):
            raise ColumnNotFoundError(repr(path), context="(empty name in path)")
        return path
    if not isinstance(path, str) or not path.strip():
        raise ColumnNotFoundError(repr(path), context="(empty path)")
    parts: list[str] = []
    buf: list[str] = []
    i, quoted, text = 0, False, path.strip()
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted and i + 1 < len(text) and text[i + 1] == "`":
                buf.append("`")
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    if quoted or any(not p for p in parts):
        raise ColumnNotFoundError(path, context="(malformed path)")
    return tuple(parts)


def format_path(names: tuple[str, ...]) -> str:
    """Join names with dots, backquoting any name that contains a dot or a backquote (or starts
    or ends with whitespace, which :func:`parse_path` would strip)."""
    return ".".join(
        "`" + n.replace("`", "``") + "`" if ("." in n or "`" in n or n != n.strip()) else n
        for n in names
    )


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """Where a field sits: its path from the root and the ID of its parent field."""

    field: NestedField
    path: tuple[str, ...]
    parent_id: int

    @property
    def dotted(self) -> str:
        return format_path(self.path)


def walk(fields: tuple[NestedField, ...], parent_id: int = ROOT_ID,
         prefix: tuple[str, ...] = ()) -> Iterator[FieldInfo]:
    """Every field under ``fields`` in pre-order, with its path and parent ID."""
    for f in fields:
        path = (*prefix, f.name)
        yield FieldInfo(f, path, parent_id)
        yield from walk(f.type.children(), f.id, path)


def transform_fields(
    fields: tuple[NestedField, ...],
    fn: Callable[[NestedField, int], NestedField | None],
    parent_id: int = ROOT_ID,
) -> tuple[NestedField, ...]:
    """Post-order rebuild: children are transformed first, then ``fn(field, parent_id)``.

    ``fn`` returns the field to keep (possibly changed) or None to drop it.
    """
    out: list[NestedField] = []
    for f in fields:
        if f.type.is_nested:
            kids = transform_fields(f.type.children(), fn, f.id)
            if kids != f.type.children():
                f = f.replace(type=with_children(f.type, kids))
        g = fn(f, parent_id)
        if g is not None:
            out.append(g)
    return tuple(out)


def check_names(fields: tuple[NestedField, ...], where: str = "table") -> None:
    """Reject empty names and names that differ only by case within one struct."""
    seen: dict[str, str] = {}
    for f in fields:
        if not f.name:
            raise SchemaEvolutionError(f"Empty column name in {where}", field_id=f.id)
        low = f.name.lower()
        if low in seen:
            raise SchemaEvolutionError(
                f"Duplicate column name in {where}: {seen[low]!r} and {f.name!r}"
                " (names are case-insensitive)",
                path=f.name,
                field_id=f.id,
                hint="pick a name that no other column of the same struct has",
            )
        seen[low] = f.name
        _check_nested_names(f.type, f"{where}.{f.name}" if where != "table" else f.name)


def _check_nested_names(t: Type, where: str) -> None:
    """:func:`check_names` for every struct under ``t``, through any arrays and maps."""
    if isinstance(t, StructType):
        check_names(t.fields, where)
        return
    for child in t.children():
        _check_nested_names(child.type, f"{where}.{child.name}")


@dataclass(frozen=True)
class Schema:
    """A schema version: top-level ``fields``, the ``version_id`` (the instant of the commit that
    created it) and ``max_column_id``, the largest ID ever assigned (never decreases)."""

    fields: tuple[NestedField, ...] = field(default=())
    version_id: str = INITIAL_VERSION
    max_column_id: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))
        ids = [info.field.id for info in walk(self.fields)]
        if len(ids) != len(set(ids)):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise SchemaEvolutionError(f"Duplicate field IDs in schema: {dup}")
        if any(i <= 0 for i in ids):
            raise SchemaEvolutionError("Field IDs must be positive integers")
        check_names(self.fields)
        highest = max(ids, default=0)
        if self.max_column_id < highest:
            object.__setattr__(self, "max_column_id", highest)

    # ---------------------------------------------------------------- lookups
    @property
    def struct(self) -> StructType:
        return StructType(self.fields)

    @cached_property
    def _infos(self) -> tuple[FieldInfo, ...]:
        return tuple(walk(self.fields))

    @cached_property
    def _by_id(self) -> dict[int, FieldInfo]:
        return {info.field.id: info for info in self._infos}

    @property
    def column_names(self) -> list[str]:
        """Top-level column names, in order."""
        return [f.name for f in self.fields]

    def paths(self) -> list[str]:
        """Every addressable dotted path, in pre-order."""
        return [info.dotted for info in self._infos]

    def field_ids(self) -> list[int]:
        """Every field ID, in pre-order."""
        return [info.field.id for info in self._infos]

    def find(self, path: Path) -> NestedField:
        """The field at ``path`` (case-insensitive), or :class:`ColumnNotFoundError`."""
        return self._by_id[self.find_id(path)].field

    def find_id(self, path: Path) -> int:
        """The ID of the field at ``path``."""
        names = parse_path(path)
        current: tuple[NestedField, ...] = self.fields
        container: Type | None = None
        found: NestedField | None = None
        for name in names:
            found = child_by_name(container, current, name)
            if found is None:
                raise ColumnNotFoundError(
                    path if isinstance(path, str) else format_path(names), self.paths()
                )
            container = found.type
            current = found.type.children()
        assert found is not None
        return found.id

    def has(self, path: Path) -> bool:
        """Whether ``path`` names a field."""
        try:
            self.find_id(path)
        except ColumnNotFoundError:
            return False
        return True

    def field_by_id(self, field_id: int) -> NestedField:
        """The field with ID ``field_id``, or :class:`ColumnNotFoundError`."""
        return self.info(field_id).field

    def info(self, field_id: int) -> FieldInfo:
        """Path and parent of the field with ID ``field_id``."""
        try:
            return self._by_id[field_id]
        except KeyError:
            raise ColumnNotFoundError(f"id {field_id}", context="with that ID") from None

    def has_id(self, field_id: int) -> bool:
        return field_id in self._by_id

    def path_of(self, field_id: int) -> str:
        """The dotted path of a field ID."""
        return self.info(field_id).dotted

    def parent_of(self, field_id: int) -> int:
        """The parent field's ID (``ROOT_ID`` for top-level columns)."""
        return self.info(field_id).parent_id

    def children_of(self, parent_id: int) -> tuple[NestedField, ...]:
        """The fields directly under ``parent_id`` (the top-level columns for ``ROOT_ID``)."""
        if parent_id == ROOT_ID:
            return self.fields
        t = self.field_by_id(parent_id).type
        return t.children()

    # ----------------------------------------------------------- conversions
    def replace(self, **changes: Any) -> Schema:
        """A copy with ``changes`` applied (``fields``, ``version_id``, ``max_column_id``)."""
        from dataclasses import replace

        return replace(self, **changes)

    def with_version(self, version_id: str) -> Schema:
        """The same schema under another version id."""
        return self.replace(version_id=version_id)

    def to_dict(self) -> dict[str, Any]:
        from evonb.schema.json_format import schema_to_dict

        return schema_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        from evonb.schema.json_format import schema_from_dict

        return schema_from_dict(data)

    def to_json(self, *, indent: int | None = None) -> str:
        """The stable, versioned JSON form (``docs/format.md``)."""
        from evonb.schema.json_format import schema_to_json

        return schema_to_json(self, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Schema:
        from evonb.schema.json_format import schema_from_json

        return schema_from_json(text)

    def to_spark(self) -> SparkStructType:
        """A Spark ``StructType`` with IDs as ``parquet.field.id`` metadata and defaults."""
        from evonb.schema.spark_convert import schema_to_spark

        return schema_to_spark(self)

    @classmethod
    def from_spark(cls, struct: SparkStructType, *, version_id: str | None = None,
                   max_column_id: int | None = None) -> Schema:
        """From a Spark ``StructType``; fields without an ID get fresh ones."""
        from evonb.schema.spark_convert import schema_from_spark

        return schema_from_spark(struct, version_id=version_id, max_column_id=max_column_id)

    def to_arrow(self) -> pa.Schema:
        """A pyarrow schema with IDs as ``PARQUET:field_id`` metadata."""
        from evonb.schema.arrow_convert import schema_to_arrow

        return schema_to_arrow(self)

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> Schema:
        from evonb.schema.arrow_convert import schema_from_arrow

        return schema_from_arrow(schema)

    @classmethod
    def from_avro(cls, avro_schema: Any, *, version_id: str = INITIAL_VERSION) -> Schema:
        """From an Avro record schema (JSON text or dict), assigning fresh IDs."""
        from evonb.schema.avro_convert import schema_from_avro

        return schema_from_avro(avro_schema, version_id=version_id)

    def to_avro(self, name: str = "record") -> dict[str, Any]:
        """An Avro record schema with ``field-id`` attributes."""
        from evonb.schema.avro_convert import schema_to_avro

        return schema_to_avro(self, name=name)

    @classmethod
    def from_ddl(cls, columns: str, *, version_id: str = INITIAL_VERSION) -> Schema:
        """From column DDL text: ``"id bigint not null, loc struct<lat:double,lon:double>"``."""
        from evonb.sql import parse_columns_schema

        return parse_columns_schema(columns, version_id=version_id)

    def to_ddl(self) -> str:
        """Column DDL text that :meth:`from_ddl` reads back (IDs are not part of DDL)."""
        from evonb.schema.render import schema_to_ddl

        return schema_to_ddl(self)

    def diff(self, other: Schema) -> SchemaDiff:
        """What changed from this schema to ``other``, by ID."""
        from evonb.schema.diffing import diff

        return diff(self, other)

    # --------------------------------------------------------------- display
    def __str__(self) -> str:
        from evonb.schema.render import schema_to_text

        return schema_to_text(self)

    def _repr_html_(self) -> str:
        from evonb.schema.render import schema_to_html

        return schema_to_html(self)

    def __repr__(self) -> str:
        return (
            f"Schema(version_id={self.version_id!r}, max_column_id={self.max_column_id}, "
            f"fields={self.struct.simple_string()!r})"
        )

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self) -> Iterator[NestedField]:
        return iter(self.fields)


def child_by_name(container: Type | None, current: tuple[NestedField, ...],
                  name: str) -> NestedField | None:
    """The child called ``name`` of a field whose type is ``container`` (None: the root)."""
    low = name.lower()
    if container is None or isinstance(container, StructType):
        for f in current:
            if f.name.lower() == low:
                return f
        return None
    if isinstance(container, ArrayType):
        if low == ELEMENT:
            return container.element
        inner = container.element.type
        if not isinstance(inner, StructType):
            return None
        return child_by_name(inner, inner.children(), name)
    if isinstance(container, MapType):
        if low == KEY:
            return container.key
        if low == VALUE:
            return container.value
        inner = container.value.type
        if not isinstance(inner, StructType):
            return None
        return child_by_name(inner, inner.children(), name)
    return None
