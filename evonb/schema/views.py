"""What the modules below :class:`~evonb.schema.schema.Schema` read of a schema and of a diff.

The conversions (``*_fields``), :func:`~evonb.schema.diffing.diff` and the renderers take a
schema, yet ``Schema`` is built from them: its ``to_*``/``from_*`` methods and ``diff`` call
them. They name what they read with these protocols instead of the class, so no module below
``schema`` refers back to it, not even in a type hint. ``Schema`` and
:class:`~evonb.schema.diffing.SchemaDiff` have every member listed here.
"""

from __future__ import annotations

from typing import Protocol

from evonb.schema.changes import Change
from evonb.schema.types import NestedField


class SchemaView(Protocol):
    """A schema version as read by the conversions, the diff and the renderers."""

    @property
    def fields(self) -> tuple[NestedField, ...]:
        """The top-level fields, in order."""
        ...

    @property
    def version_id(self) -> str:
        """The instant of the commit that created this version."""
        ...

    @property
    def max_column_id(self) -> int:
        """The largest field ID ever assigned."""
        ...

    def field_by_id(self, field_id: int) -> NestedField:
        """The field with ID ``field_id``."""
        ...

    def path_of(self, field_id: int) -> str:
        """The dotted path of a field ID."""
        ...

    def parent_of(self, field_id: int) -> int:
        """The parent field's ID (``ROOT_ID`` for top-level columns)."""
        ...

    def children_of(self, parent_id: int) -> tuple[NestedField, ...]:
        """The fields directly under ``parent_id``."""
        ...


class DiffView(Protocol):
    """The changes between two schema versions, as read by the renderers."""

    @property
    def before(self) -> SchemaView:
        ...

    @property
    def after(self) -> SchemaView:
        ...

    @property
    def changes(self) -> tuple[Change, ...]:
        ...

    def by_kind(self, kind: str) -> tuple[Change, ...]:
        """The changes of one kind, in report order."""
        ...
