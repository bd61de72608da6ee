"""The table config, ``<root>/.evo/table.json``: name, type, keys, partitioning and properties.

Key, precombine and partition columns are stored by name *and* by field ID. The IDs are what
count: the engine resolves the current names from them, so renaming a key column needs no
change here (:meth:`TableConfig.resolve_names` refreshes the names for display).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from evonb.errors import (
    EvoError,
    MetadataCorruptError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedTableError,
)
from evonb.table.fileio import file_io
from evonb.table.fsutil import atomic_write_json, evo_dir, read_json, table_path
from evonb.table.names import CONFIG_FILE

FORMAT_VERSION = 1
"""The newest table format version this evonb reads and writes."""

TableType = Literal["cow", "mor"]
_TYPE_ALIASES = {
    "cow": "cow",
    "copy_on_write": "cow",
    "mor": "mor",
    "merge_on_read": "mor",
}
_TRUE = {"true", "1", "yes", "on", "y", "t"}
_FALSE = {"false", "0", "no", "off", "n", "f"}


class _SchemaLike(Protocol):
    def find_id(self, path: Any) -> int: ...

    def path_of(self, field_id: int) -> str: ...


class FrozenProperties(Mapping[str, str]):
    """An immutable, hashable ``str -> str`` mapping."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        items = data.items() if isinstance(data, Mapping) else data
        self._data: dict[str, str] = {str(k): property_text(v) for k, v in items}

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._data) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenProperties({self._data!r})"

    def to_dict(self) -> dict[str, str]:
        return dict(self._data)


def property_text(value: Any) -> str:
    """The stored text of a property value: a boolean as ``true``/``false``, else its str."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _names(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    return tuple(str(v) for v in value)


def _ids(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    return tuple(int(v) for v in value)


@dataclass(frozen=True)
class TableConfig:
    """What a table is: its name, type (copy-on-write or merge-on-read), keys and properties.

    ``primary_key``, ``precombine`` and ``partition_by`` are the column paths as last resolved;
    ``primary_key_ids``, ``precombine_id`` and ``partition_ids`` are the same columns by field ID
    (empty / None until resolved with :meth:`resolve_ids`).
    """

    name: str
    table_type: TableType
    primary_key: tuple[str, ...] | None = None
    precombine: str | None = None
    partition_by: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=FrozenProperties)
    format_version: int = FORMAT_VERSION
    created: str = ""
    primary_key_ids: tuple[int, ...] = ()
    precombine_id: int | None = None
    partition_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        kind = _TYPE_ALIASES.get(str(self.table_type).strip().lower())
        if kind is None:
            raise EvoError(
                f"Unknown table type {self.table_type!r}",
                hint="use 'cow' (copy-on-write) or 'mor' (merge-on-read)",
            )
        key = _names(self.primary_key) or None
        s = object.__setattr__
        s(self, "table_type", kind)
        s(self, "primary_key", key)
        s(self, "partition_by", _names(self.partition_by))
        s(self, "primary_key_ids", _ids(self.primary_key_ids))
        s(self, "partition_ids", _ids(self.partition_ids))
        if self.precombine_id is not None:
            s(self, "precombine_id", int(self.precombine_id))
        if not isinstance(self.properties, FrozenProperties):
            s(self, "properties", FrozenProperties(self.properties or {}))
        if not isinstance(self.format_version, int) or self.format_version < 1:
            raise EvoError(f"Invalid table format version {self.format_version!r}")
        if self.primary_key_ids and len(self.primary_key_ids) != len(key or ()):
            raise EvoError("primary_key_ids must match primary_key column for column")
        if self.partition_ids and len(self.partition_ids) != len(self.partition_by):
            raise EvoError("partition_ids must match partition_by column for column")
        if self.precombine_id is not None and self.precombine is None:
            raise EvoError("precombine_id is set but precombine is not")

    # ------------------------------------------------------------ properties
    @property
    def protected_ids(self) -> frozenset[int]:
        """The record key, partition and precombine columns: no DDL or write retypes them."""
        ids = {*self.primary_key_ids, *self.partition_ids}
        if self.precombine_id is not None:
            ids.add(self.precombine_id)
        return frozenset(ids)

    def property(self, name: str, default: str | None = None) -> str | None:
        """A table property, or ``default``."""
        return self.properties.get(name, default)

    def bool_property(self, name: str, default: bool = False) -> bool:
        """A property read as a boolean (true/false, 1/0, yes/no, on/off)."""
        raw = self.properties.get(name)
        if raw is None:
            return default
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise EvoError(f"Table property {name}={raw!r} is not a boolean",
                       hint="use true or false")

    def int_property(self, name: str, default: int = 0) -> int:
        """A property read as an integer."""
        raw = self.properties.get(name)
        if raw is None:
            return default
        try:
            return int(raw.strip())
        except ValueError:
            raise EvoError(f"Table property {name}={raw!r} is not an integer") from None

    def float_property(self, name: str, default: float = 0.0) -> float:
        """A property read as a number."""
        raw = self.properties.get(name)
        if raw is None:
            return default
        try:
            return float(raw.strip())
        except ValueError:
            raise EvoError(f"Table property {name}={raw!r} is not a number") from None

    def with_properties(
        self, updates: Mapping[str, Any] | None = None, **more: Any
    ) -> TableConfig:
        """A copy with properties set (values become strings; booleans ``true``/``false``)."""
        merged = dict(self.properties)
        merged.update({k: property_text(v) for k, v in (updates or {}).items()})
        merged.update({k: property_text(v) for k, v in more.items()})
        return replace(self, properties=FrozenProperties(merged))

    def without_properties(self, *names: str) -> TableConfig:
        """A copy with the named properties removed (missing names are ignored)."""
        kept = {k: v for k, v in self.properties.items() if k not in set(names)}
        return replace(self, properties=FrozenProperties(kept))

    def replace(self, **changes: Any) -> TableConfig:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    # --------------------------------------------------------------- columns
    def resolve_ids(self, schema: _SchemaLike) -> TableConfig:
        """A copy with the column IDs looked up from the names in ``schema``."""
        return replace(
            self,
            primary_key_ids=tuple(schema.find_id(p) for p in self.primary_key or ()),
            precombine_id=schema.find_id(self.precombine) if self.precombine else None,
            partition_ids=tuple(schema.find_id(p) for p in self.partition_by),
        )

    def resolve_names(self, schema: _SchemaLike) -> TableConfig:
        """A copy with the column names refreshed from the IDs in ``schema`` (after renames)."""
        return replace(
            self,
            primary_key=tuple(schema.path_of(i) for i in self.primary_key_ids)
            if self.primary_key_ids else self.primary_key,
            precombine=schema.path_of(self.precombine_id)
            if self.precombine_id is not None else self.precombine,
            partition_by=tuple(schema.path_of(i) for i in self.partition_ids)
            if self.partition_ids else self.partition_by,
        )

    # ---------------------------------------------------------- persistence
    def to_dict(self) -> dict[str, Any]:
        return {
            "format-version": self.format_version,
            "name": self.name,
            "table-type": self.table_type,
            "primary-key": list(self.primary_key) if self.primary_key is not None else None,
            "primary-key-ids": list(self.primary_key_ids),
            "precombine": self.precombine,
            "precombine-id": self.precombine_id,
            "partition-by": list(self.partition_by),
            "partition-ids": list(self.partition_ids),
            "properties": dict(self.properties),
            "created": self.created,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "table config") -> TableConfig:
        """Read :meth:`to_dict` output. Defects raise :class:`MetadataCorruptError` naming
        ``source``; a newer format version raises :class:`UnsupportedTableError`."""
        if not isinstance(data, Mapping):
            raise MetadataCorruptError(source, "the table config must be a JSON object")
        try:
            version = int(data.get("format-version", FORMAT_VERSION))
        except (TypeError, ValueError):
            raise MetadataCorruptError(source, "format-version is not an integer") from None
        if version > FORMAT_VERSION:
            raise UnsupportedTableError(
                f"{source} has table format version {version}; this evonb reads up to "
                f"{FORMAT_VERSION}",
                hint="upgrade evonb",
            )
        props = data.get("properties") or {}
        if not isinstance(props, Mapping):
            raise MetadataCorruptError(source, "properties must be a JSON object")
        try:
            name = data["name"]
            if not isinstance(name, str):
                raise TypeError("name must be a string")
            return cls(
                name=name,
                table_type=data["table-type"],
                primary_key=data.get("primary-key"),
                precombine=data.get("precombine"),
                partition_by=_names(data.get("partition-by")),
                properties=FrozenProperties(props),
                format_version=version,
                created=str(data.get("created") or ""),
                primary_key_ids=_ids(data.get("primary-key-ids")),
                precombine_id=data.get("precombine-id"),
                partition_ids=_ids(data.get("partition-ids")),
            )
        except KeyError as exc:
            raise MetadataCorruptError(source, f"missing key {exc.args[0]!r}") from None
        except (EvoError, TypeError, ValueError) as exc:
            reason = exc.message if isinstance(exc, EvoError) else str(exc)
            raise MetadataCorruptError(source, reason) from None

    @staticmethod
    def path(root: str | os.PathLike[str]) -> Path:
        """``<root>/.evo/table.json``."""
        return evo_dir(root) / CONFIG_FILE

    @staticmethod
    def exists(root: str | os.PathLike[str]) -> bool:
        """Whether ``root`` holds an evonb table (has a config file)."""
        return file_io().exists(TableConfig.path(root))

    def save(self, root: str | os.PathLike[str], *, exclusive: bool = False) -> Path:
        """Write the config atomically. ``exclusive=True`` (table creation) raises
        :class:`TableExistsError` when a config is already there."""
        path = self.path(root)
        try:
            atomic_write_json(path, self.to_dict(), exclusive=exclusive)
        except FileExistsError:
            raise TableExistsError(
                f"An evonb table already exists at {table_path(root)}",
                hint="load it, or drop it first",
            ) from None
        return path

    @classmethod
    def load(cls, root: str | os.PathLike[str]) -> TableConfig:
        """Read the config of the table at ``root``.

        Missing: :class:`TableNotFoundError`. Corrupt: :class:`MetadataCorruptError`.
        """
        path = cls.path(root)
        try:
            data = read_json(path)
        except (FileNotFoundError, NotADirectoryError):
            raise TableNotFoundError(
                f"No evonb table at {table_path(root)}",
                hint=f"expected {CONFIG_FILE} in its .evo folder; check the path or create "
                "the table first",
            ) from None
        return cls.from_dict(data, source=str(path))


__all__ = ["CONFIG_FILE", "FORMAT_VERSION", "FrozenProperties", "TableConfig", "TableType",
           "property_text"]
