"""A reference model of an evonb table, in plain Python: the schema with its field IDs, and the
rows stored by field ID.

The model knows nothing of files, layouts, log blocks or Spark. A row is stored as the values it
was written with, keyed by the field IDs of the schema it was written in; reading it in a schema
looks every field up by ID, at every depth: a renamed field reads its value, a field the row was
written without reads its read default (or null), a dropped field is never shown again (its ID
is never given out again, so a re-added column of the same name is another field), a widened
type shows the promoted value. This is the promise of ``docs/schema-evolution.md``, written a
second time as simply as it can be, so that the engine can be compared with it.

Nested types are limited to what the model tests drive: a struct of primitives (or structs),
an array of structs and a map from string to structs.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = ("int", "bigint", "float", "double", "string")
WIDENINGS = {"int": ("bigint", "double", "string"), "bigint": ("string",), "float": ("double",)}
"""Type changes the model makes by DDL: natively read (int -> bigint, int -> double,
float -> double) or a new generation read with a cast (int or bigint -> string)."""
MORE_WIDENINGS = {"int": ("float",), "bigint": ("float", "double"), "float": ("string",),
                  "double": ("string",)}
"""The other type changes DDL makes between the model's types, a rule of their own (so that the
steps of earlier regression cases keep their meaning). A value is read through every type its
field had since it was stored (``int`` 5, then ``double``, then ``string``, reads ``"5.0"``):
the model converts its stored values at each change (:meth:`Model.retype`), as a rewrite
would."""
NARROWINGS = {"double": ("int", "bigint", "float"), "float": ("int",), "bigint": ("int",),
              "string": ("int", "bigint")}
"""Type changes the model makes by a rewrite (no metadata change makes them): a value that
does not fit the new type (a fraction, an overflow, text that is not a number) becomes null."""
RANGES = {"int": 1 << 31, "bigint": 1 << 63}
INTEGRAL_TEXT = re.compile(r"[+-]?\d+")
FLOAT_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
FLOAT_WORDS = ("nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")
"""Text Spark's ``try_cast`` reads as a float or a double (any case for the words); any other
text reads null."""


@dataclass
class MStruct:
    fields: list[MField]


@dataclass
class MList:
    """``array<struct<...>>``: the element's ID and its struct."""

    element_id: int
    element: MStruct


@dataclass
class MMap:
    """``map<string, struct<...>>``: the key's and the value's IDs, and the value's struct."""

    key_id: int
    value_id: int
    value: MStruct


MType = str | MStruct | MList | MMap


@dataclass
class MField:
    id: int
    name: str
    type: MType
    default: Any = None
    """The read default: what a row stored without the field reads."""
    required: bool = False
    write_default: Any = None
    """What an ``INSERT`` that leaves the field out stores. ``ADD COLUMN ... DEFAULT`` sets
    both defaults; ``SET DEFAULT`` and ``DROP DEFAULT`` change only this one."""


def type_text(t: MType) -> str:
    """Spark's ``simpleString`` of ``t`` (what ``DataFrame.schema`` shows)."""
    if isinstance(t, str):
        return t
    if isinstance(t, MStruct):
        return "struct<" + ",".join(f"{f.name}:{type_text(f.type)}" for f in t.fields) + ">"
    if isinstance(t, MList):
        return f"array<{type_text(t.element)}>"
    return f"map<string,{type_text(t.value)}>"


def convert(value: Any, t: MType) -> Any:
    """A stored value as a field of type ``t`` reads it: promoted after widenings; after a
    narrowing, the value if it fits ``t`` exactly, else null (what the rewrite wrote); text
    that is no number of ``t`` reads null."""
    if value is None:
        return None
    if t == "string":
        return value if isinstance(value, str) else str(value)
    if t in ("double", "float"):
        if isinstance(value, str):
            text = value.strip()
            if not (FLOAT_TEXT.fullmatch(text) or text.lower() in FLOAT_WORDS):
                return None
        return float(value)
    if t in RANGES:
        if isinstance(value, float):
            if not value.is_integer():  # a fraction, NaN or an infinity
                return None
            value = int(value)
        elif isinstance(value, str):
            text = value.strip()
            if not INTEGRAL_TEXT.fullmatch(text):
                return None
            value = int(text)
        bound = RANGES[t]
        return value if -bound <= value < bound else None
    return value


def narrow_values(value: Any, fid: int, t: MType) -> None:
    """Every stored value of field ``fid`` under ``value`` converted to ``t`` in place (the
    rows a rewrite wrote again); struct values are keyed by field ID, map values by text."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, int) and k == fid:
                value[k] = convert(v, t)
            else:
                narrow_values(v, fid, t)
    elif isinstance(value, list):
        for v in value:
            narrow_values(v, fid, t)


def literal(value: Any, t: str) -> str:
    """``value`` as a SQL literal of type ``t``: a string quoted, its backslashes and quotes
    escaped (Spark's dialect)."""
    if t == "string":
        return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


def typed_literal(value: Any, t: str) -> str:
    """``value`` (None: null) as a SQL expression of type ``t`` exactly."""
    return f"CAST({'NULL' if value is None else literal(value, t)} AS {t})"


@dataclass
class Model:
    """The schema of a keyed table (``id`` key, ``ts`` precombine, ``p`` partition) and its
    rows: key -> (values by field ID, instant of the commit that wrote them)."""

    columns: MStruct
    max_id: int
    rows: dict[int, tuple[dict[int, Any], str]] = field(default_factory=dict)

    # ------------------------------------------------------------------ reading
    def read(self, schema: MStruct | None = None, *, since: str | None = None,
             until: str | None = None) -> list[dict[str, Any]]:
        """The rows in ``schema`` (default: the model's own), sorted by key; with ``since`` /
        ``until``, only those written by a commit in (since, until]. In another schema a
        value reads as this model shows it, then converted to ``schema``'s type: what a read
        shows cannot depend on the files a rewrite wrote in between (an ``int`` stored
        before the field became ``double`` reads ``"-1.0"`` in a later ``string`` field, as
        a value stored while it was ``double`` does)."""
        via = None if schema is None or schema == self.columns else field_types(self.columns)
        schema = schema or self.columns
        out = []
        for key in sorted(self.rows):
            stored, instant = self.rows[key]
            if since is not None and instant <= since:
                continue
            if until is not None and instant > until:
                continue
            out.append(read_struct(schema, stored, via))
        return out

    def retype(self, f: MField, new: str) -> None:
        """Field ``f`` becomes ``new``: its defaults and every stored value are converted (a
        value reads through each type it had)."""
        f.type, f.default = new, convert(f.default, new)
        f.write_default = convert(f.write_default, new)
        for stored, _ in self.rows.values():
            narrow_values(stored, f.id, new)

    def names(self) -> list[str]:
        return [f.name for f in self.columns.fields]

    def schema_text(self) -> str:
        return type_text(self.columns)

    def copy(self) -> Model:
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ fields
    def new_id(self) -> int:
        self.max_id += 1
        return self.max_id

    def containers(self) -> list[tuple[str, MStruct]]:
        """Every struct fields can be added to or dropped from: (path prefix, struct)."""
        out: list[tuple[str, MStruct]] = [("", self.columns)]
        for f in self.columns.fields:
            if isinstance(f.type, MStruct):
                out.append((f.name + ".", f.type))
                out.extend((f"{f.name}.{g.name}.", g.type) for g in f.type.fields
                           if isinstance(g.type, MStruct))
            elif isinstance(f.type, MList):
                out.append((f.name + ".element.", f.type.element))
            elif isinstance(f.type, MMap):
                out.append((f.name + ".value.", f.type.value))
        return out

    def all_ids(self) -> dict[str, int]:
        """Every field's path -> ID (``element``, ``key`` and ``value`` included)."""
        out: dict[str, int] = {}

        def visit(prefix: str, struct: MStruct) -> None:
            for f in struct.fields:
                path = prefix + f.name
                out[path.lower()] = f.id
                if isinstance(f.type, MStruct):
                    visit(path + ".", f.type)
                elif isinstance(f.type, MList):
                    out[(path + ".element").lower()] = f.type.element_id
                    visit(path + ".element.", f.type.element)
                elif isinstance(f.type, MMap):
                    out[(path + ".key").lower()] = f.type.key_id
                    out[(path + ".value").lower()] = f.type.value_id
                    visit(path + ".value.", f.type.value)

        visit("", self.columns)
        return out

    def number(self, t: MType) -> MType:
        """``t`` with fresh IDs in pre-order (as evonb numbers an added column's children);
        its members have no defaults (a column's type in DDL carries none)."""
        if isinstance(t, str):
            return t
        if isinstance(t, MStruct):
            return MStruct([self.numbered_field(MField(f.id, f.name, f.type, None, f.required))
                            for f in t.fields])
        if isinstance(t, MList):
            element_id = self.new_id()
            return MList(element_id, self.number(t.element))  # type: ignore[arg-type]
        key_id = self.new_id()
        value_id = self.new_id()
        return MMap(key_id, value_id, self.number(t.value))  # type: ignore[arg-type]

    def numbered_field(self, f: MField) -> MField:
        fid = self.new_id()
        return MField(fid, f.name, self.number(f.type), f.default, f.required, f.write_default)


def field_types(struct: MStruct) -> dict[int, str]:
    """The primitive type of every field ID under ``struct`` (nested ones included)."""
    out: dict[int, str] = {}
    for f in struct.fields:
        t = f.type
        if isinstance(t, str):
            out[f.id] = t
        elif isinstance(t, MStruct):
            out.update(field_types(t))
        elif isinstance(t, MList):
            out.update(field_types(t.element))
        else:
            out.update(field_types(t.value))
    return out


def read_struct(struct: MStruct, stored: dict[int, Any],
                via: dict[int, str] | None = None) -> dict[str, Any]:
    """``stored`` read in ``struct``; ``via``: the primitive types a value is converted to
    first (see :meth:`Model.read`)."""
    return {f.name: read_field(f, stored, via) for f in struct.fields}


def read_field(f: MField, stored: dict[int, Any], via: dict[int, str] | None = None) -> Any:
    if f.id not in stored:
        return f.default
    value = stored[f.id]
    if via and f.id in via:
        value = convert(value, via[f.id])
    return read_value(f.type, value, via)


def read_value(t: MType, value: Any, via: dict[int, str] | None = None) -> Any:
    if value is None:
        return None
    if isinstance(t, str):
        return convert(value, t)
    if isinstance(t, MStruct):
        return read_struct(t, value, via)
    if isinstance(t, MList):
        return [None if e is None else read_struct(t.element, e, via) for e in value]
    return {k: (None if v is None else read_struct(t.value, v, via)) for k, v in value.items()}


def store_struct(struct: MStruct, values: dict[str, Any]) -> dict[int, Any]:
    """A row as read in ``struct`` (by name) stored again by field ID: what a statement that
    rewrites the row (a SQL ``UPDATE``, a ``MERGE``) writes, every field of ``struct``
    explicit, read defaults included."""
    return {f.id: store_value(f.type, values[f.name]) for f in struct.fields}


def store_value(t: MType, value: Any) -> Any:
    if value is None or isinstance(t, str):
        return value
    if isinstance(t, MStruct):
        return store_struct(t, value)
    if isinstance(t, MList):
        return [None if e is None else store_struct(t.element, e) for e in value]
    return {k: (None if v is None else store_struct(t.value, v)) for k, v in value.items()}


# ---------------------------------------------------------------------- values
PLAIN_STRINGS = ("a", "b", "zz", "", "é", "x y")
HOSTILE_STRINGS = ("it's", "back\\slash", 'say "hi"', "%_", "`t`", "'; --", "a\\'b")
"""Written strings begin with a plain text or, a quarter of the time (a non-empty one with the
digit 7, 8 or 9), with one of quotes, backslashes or wildcards: every statement's literals
must be quoted and escaped right. The draws are the same either way (a history's later
values do not change with the texts)."""


def random_value(rng: random.Random, t: MType, *, nullable: bool = True) -> Any:
    """A value of type ``t`` to write, stored by field ID; exact in float and double."""
    if nullable and rng.random() < 0.15:
        return None
    if t in ("int", "bigint"):
        return rng.randint(-50, 50)
    if t in ("float", "double"):
        return rng.randint(-40, 40) / 4
    if t == "string":
        text, digit = rng.choice(PLAIN_STRINGS), rng.randint(0, 9)
        if text and digit >= 7:
            text = HOSTILE_STRINGS[(PLAIN_STRINGS.index(text) * 3 + digit) % len(HOSTILE_STRINGS)]
        return text + str(digit)
    if isinstance(t, MStruct):
        return {f.id: random_value(rng, f.type, nullable=not f.required) for f in t.fields}
    if isinstance(t, MList):
        return [random_value(rng, t.element) for _ in range(rng.randint(0, 2))]
    assert isinstance(t, MMap)
    return {k: random_value(rng, t.value) for k in rng.sample(["k1", "k2", "k3"],
                                                                rng.randint(0, 2))}


def spark_value(t: MType, value: Any) -> Any:
    """A stored value as a tuple tree for ``spark.createDataFrame`` in the current schema."""
    if value is None:
        return None
    if isinstance(t, str):
        return value
    if isinstance(t, MStruct):
        return tuple(spark_value(f.type, value.get(f.id)) for f in t.fields)
    if isinstance(t, MList):
        return [spark_value(t.element, e) for e in value]
    return {k: spark_value(t.value, v) for k, v in value.items()}


def ddl_type(t: MType) -> str:
    """``t`` as column DDL (quoted names)."""
    if isinstance(t, str):
        return t
    if isinstance(t, MStruct):
        return "struct<" + ",".join(f"`{f.name}`:{ddl_type(f.type)}" for f in t.fields) + ">"
    if isinstance(t, MList):
        return f"array<{ddl_type(t.element)}>"
    return f"map<string,{ddl_type(t.value)}>"
