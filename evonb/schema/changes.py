"""One change to one field (:class:`Change`), the change kinds, and how values in changes are
compared and shown. Below both :mod:`evonb.schema.render` and :mod:`evonb.schema.diffing`, which
computes the changes and re-exports these names."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from dataclasses import dataclass
from typing import Any

KINDS: tuple[str, ...] = (
    "added",
    "dropped",
    "renamed",
    "retyped",
    "moved",
    "nullability",
    "default",
    "comment",
)
"""Every change kind, in the order changes are reported."""

_KIND_ORDER = {k: i for i, k in enumerate(KINDS)}


@dataclass(frozen=True)
class Change:
    """One change to one field.

    ``old_path``/``new_path`` are dotted paths in the before/after schema (None for an added or a
    dropped field). ``old``/``new`` depend on ``kind``:

    - added: None / the field's type string
    - dropped: the field's type string / None
    - renamed: the old / new name
    - retyped: the old / new type string
    - moved: the old / new index among the parent's children
    - nullability: the old / new ``nullable`` flag
    - default: ``{"default": ..., "write_default": ...}`` before / after (the read and the write
      default together; either or both changed)
    - comment: the old / new comment (None when there is none)
    """

    kind: str
    field_id: int
    old_path: str | None
    new_path: str | None
    old: Any
    new: Any

    def __post_init__(self) -> None:
        if self.kind not in _KIND_ORDER:
            raise ValueError(f"unknown change kind {self.kind!r}; expected one of {KINDS}")

    @property
    def path(self) -> str:
        """The path in the after schema, or in the before schema for a dropped field."""
        return self.new_path if self.new_path is not None else self.old_path or ""

    def describe(self) -> str:
        """The change without its kind and ID: ``name -> full_name``."""
        if self.kind == "added":
            return f"{self.new_path} ({self.new})"
        if self.kind == "dropped":
            return f"{self.old_path} ({self.old})"
        if self.kind == "renamed":
            return f"{self.old_path} -> {self.new_path}"
        if self.kind == "retyped":
            return f"{self.path}: {self.old} -> {self.new}"
        if self.kind == "moved":
            return f"{self.path}: position {self.old} -> {self.new}"
        if self.kind == "nullability":
            return f"{self.path}: {_nullability(self.old)} -> {_nullability(self.new)}"
        if self.kind == "default":
            parts = [
                f"{label} {format_value(self.old[key])} -> {format_value(self.new[key])}"
                for key, label in (("default", "default"), ("write_default", "write-default"))
                if not same_value(self.old[key], self.new[key])
            ]
            return f"{self.path}: " + ", ".join(parts)
        return f"{self.path}: {format_value(self.old)} -> {format_value(self.new)}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (default values via :func:`_json_safe` without type information)."""
        return {
            "kind": self.kind,
            "field_id": self.field_id,
            "old_path": self.old_path,
            "new_path": self.new_path,
            "old": _json_safe(self.old),
            "new": _json_safe(self.new),
        }

    def __str__(self) -> str:
        text = f"{self.kind:<8} {self.field_id}: {self.describe()}"
        if text.isprintable():
            return text
        return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def same_value(a: Any, b: Any) -> bool:
    """Equality for default values, with NaN equal to NaN and ``True`` unequal to ``1``."""
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # pragma: no cover - incomparable values
        return False


def format_value(value: Any) -> str:
    """A short display form of a default or comment: ``null``, ``'x'``, ``1.5``, ``2024-01-31``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return "X'" + bytes(value).hex().upper() + "'"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _nullability(nullable: Any) -> str:
    return "optional" if nullable else "required"


def _json_safe(value: Any) -> Any:
    """A JSON-safe form of a value without its type: dates as ISO text, bytes as hex, ..."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return str(value)


__all__ = ["KINDS", "Change", "format_value", "same_value"]
