"""``Schema``: a versioned, immutable tree of fields with IDs, and lookups by path or ID.

Inside :mod:`evonb.schema` the imports go one way, from this module down::

    evolution, *_convert, json_format     (build and return Schema objects)
      -> schema                           (this module: the Schema class)
        -> diffing -> render -> views -> changes
        -> spark_fields, arrow_fields, avro_fields, json_fields, type_text -> ddl_lexer
          -> paths, ids, defaults, promotion -> types   (and views)

The modules below this one never import it, not even for annotations: they read a schema
through the :class:`~evonb.schema.views.SchemaView` protocol, and a conversion that makes a
schema returns its parts, ``(fields, version_id, max_column_id)``; the ``Schema.from_*``
class methods here, or the ``schema_from_*`` functions of the ``*_convert`` modules above,
build the ``Schema``. pyspark, pyarrow and fastavro are imported by the conversions when
called.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evonb.errors import ColumnNotFoundError, SchemaEvolutionError
from evonb.schema.arrow_fields import schema_parts_from_arrow, schema_to_arrow
from evonb.schema.avro_fields import schema_parts_from_avro, schema_to_avro
from evonb.schema.diffing import SchemaDiff, diff
from evonb.schema.json_fields import (
    schema_parts_from_dict,
    schema_parts_from_json,
    schema_to_dict,
    schema_to_json,
)
from evonb.schema.paths import (
    INITIAL_VERSION,
    ROOT_ID,
    FieldInfo,
    Path,
    check_names,
    child_by_name,
    format_path,
    parse_path,
    transform_fields,
    walk,
)
from evonb.schema.render import schema_to_ddl, schema_to_html, schema_to_text
from evonb.schema.spark_fields import schema_parts_from_spark, schema_to_spark
from evonb.schema.type_text import parse_columns
from evonb.schema.types import NestedField, StructType, Type

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql.types import StructType as SparkStructType


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
    @cached_property
    def struct(self) -> StructType:
        """The top-level fields as one struct (the same object each time, so a walk's index
        of its members is built once)."""
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
        return dataclasses.replace(self, **changes)

    def with_version(self, version_id: str) -> Schema:
        """The same schema under another version id."""
        return self.replace(version_id=version_id)

    def to_dict(self) -> dict[str, Any]:
        return schema_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Schema:
        return cls(*schema_parts_from_dict(data))

    def to_json(self, *, indent: int | None = None) -> str:
        """The stable, versioned JSON form (``docs/format.md``)."""
        return schema_to_json(self, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Schema:
        return cls(*schema_parts_from_json(text))

    def to_spark(self) -> SparkStructType:
        """A Spark ``StructType`` with IDs as ``parquet.field.id`` metadata and defaults."""
        return schema_to_spark(self)

    @classmethod
    def from_spark(cls, struct: SparkStructType, *, version_id: str | None = None,
                   max_column_id: int | None = None) -> Schema:
        """From a Spark ``StructType``; fields without an ID get fresh ones."""
        return cls(*schema_parts_from_spark(struct, version_id=version_id,
                                            max_column_id=max_column_id))

    def to_arrow(self) -> pa.Schema:
        """A pyarrow schema with IDs as ``PARQUET:field_id`` metadata."""
        return schema_to_arrow(self)

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> Schema:
        return cls(*schema_parts_from_arrow(schema))

    @classmethod
    def from_avro(cls, avro_schema: Any, *, version_id: str = INITIAL_VERSION) -> Schema:
        """From an Avro record schema (JSON text or dict), assigning fresh IDs."""
        return cls(*schema_parts_from_avro(avro_schema, version_id=version_id))

    def to_avro(self, name: str = "record") -> dict[str, Any]:
        """An Avro record schema with ``field-id`` attributes."""
        return schema_to_avro(self, name=name)

    @classmethod
    def from_ddl(cls, columns: str, *, version_id: str = INITIAL_VERSION) -> Schema:
        """From column DDL text: ``"id bigint not null, loc struct<lat:double,lon:double>"``."""
        fields, last_id = parse_columns(columns)
        return cls(fields, version_id, last_id)

    def to_ddl(self) -> str:
        """Column DDL text that :meth:`from_ddl` reads back (IDs are not part of DDL)."""
        return schema_to_ddl(self)

    def diff(self, other: Schema) -> SchemaDiff:
        """What changed from this schema to ``other``, by ID."""
        return diff(self, other)

    # --------------------------------------------------------------- display
    def __str__(self) -> str:
        return schema_to_text(self)

    def _repr_html_(self) -> str:
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


__all__ = [
    "INITIAL_VERSION", "ROOT_ID", "FieldInfo", "Path", "Schema", "check_names", "child_by_name",
    "format_path", "parse_path", "transform_fields", "walk",
]
