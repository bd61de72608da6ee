"""A reference model of schema on write, driven with random incoming schemas.

The main model (:mod:`tests.model.machine`) changes the schema by DDL and writes rows in the
table's own schema. Here every write brings a DataFrame of its own shape, drawn from the
table's schema at that point, and evonb evolves the table by name
(``docs/schema-evolution.md``, *Schema on write*):

- columns come in any order, top-level and inside structs, list elements and map values,
  which nest: a struct member may be a struct, a list or map of structs, or a list of values;
- lists and maps of primitive values widen their element or value type as a column does;
- a column or struct member the data lacks is null in the rows written;
- a name may come in another case: it is the table's column (the table keeps its name);
- a new column or member (at any depth) is added, nullable, at the end of its parent, in the
  order the data brings them (and may itself be a struct, a list or a map);
- types meet by the promotion chart, here ``int < bigint < double``, the integers, dates
  and decimals to ``string``, the integers to decimals with room for them, two decimals to one
  that holds both and ``date`` to ``timestamp_ntz``: a wider incoming type widens the table's
  column (stored values read cast), a narrower one is cast up;
- decimals written into a ``double`` column are cast to it;
- a type the column cannot take without losing values (a ``double`` into a decimal column,
  text into a ``date``, a timestamp into text, a decimal that would need more than 38 digits)
  fails the write with a ``WriteSchemaError`` naming both types, and the table is unchanged;
  a ``timestamp`` column (an instant) takes only timestamps, and its values come back as the
  same instants from both readers.

Half the tables have a precombine column ``ts``: an upserted row whose ``ts`` is smaller
than the stored row's, or null against a value, loses (on a tie it wins); an upsert without
``ts`` and data that would change its type are refused; ALTER may rename it, never drop it.
An overwrite replaces every row (and keeps every column). Between the writes, ``ALTER TABLE``
sets or drops the write default of a top-level column (the precombine column's too): a write
whose data lacks the column stores that default (converted when a write has widened the
column since), and an upsert without ``ts`` goes through when ``ts`` has one. ``ALTER TABLE``
also renames and drops columns and members (at any depth), and a later write may bring a name so
freed: by name it is a new column (a new ID), whose stored rows read null, never the values the
old column held. Inserts of new keys, upserts of stored and new keys, overwrites, deletes, and
compaction (merge-on-read) or clustering (copy-on-write) are played on every merge path,
merge-on-read with Avro and Parquet log blocks, half the tables partitioned (by a column every write
brings). After every step Spark's read and the JVM-free reader must equal the model, schema
(names, order, types) and rows; after a service, a read as of each earlier commit must equal
the model at that commit, in that commit's schema. A failure prints the seed
(``EVONB_WRITE_MODEL_SEED`` replays it) and hypothesis's shortest steps;
``EVONB_WRITE_MODEL_HISTORIES`` sets the histories per merge path (2 by default, in ``make
test-heavy``; ``make stress-full`` plays 4).
"""

from __future__ import annotations

import copy
import datetime
import os
import random
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

import evonb
from evonb.errors import WriteSchemaError
from tests.model.machine import arrow_rows, normal, same
from tests.model.reference import literal
from tests.model.seeded import play_histories, seed_from
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = [pytest.mark.spark, pytest.mark.model]

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
SPARK: list[Any] = []
PATH: list[tuple[str, bool]] = []  # (merge path, Parquet log blocks) of the histories played
PART = "part"
"""The partition column of partitioned histories (half of them): ``id % 3``."""
PARTITIONED: dict[bool, int] = {False: 0, True: 0}  # histories played, by partitioning
SALT: list[int] = [0]  # the run's seed: hypothesis's first draws are zeros, steps differ by it
KEYS = 10
PRIMITIVES = ("int", "bigint", "double", "string", "date", "timestamp_ntz", "timestamp",
              "decimal(9,2)", "decimal(21,2)", "decimal(10,5)", "decimal(38,0)")
"""The types of primitive columns. A ``timestamp`` value is held as its naive UTC time (the
session and the test process are in UTC); no write changes a ``timestamp`` column's type."""
INTEGER_DIGITS = {"int": 10, "bigint": 19}
TYPED = ("prim", "plist", "pmap")
"""Kinds of columns whose values (or list elements, or map values) are of one primitive type."""
INNER = {"struct": "", "list": "element.", "map": "value."}
"""Kinds of columns holding structs, and the DDL path step to their members."""
DEEP = 2
"""The depth (1: a member of a column) down to which writes bring new structs and lists."""
NUMBERS = ("int", "bigint", "double")  # in the chart's order: each widens to the later ones
DOUBLES = (0.5, -1.25, 3.0, 1e7, 2.75, -0.0)
TEXTS = ("a", "b c", "", "é", "12", "x,y")
SEEN: dict[str, int] = {"widened": 0, "added nested": 0, "case": 0, "missing": 0,
                        "renamed": 0, "dropped": 0, "name reused": 0, "refused": 0,
                        "to decimal": 0, "to text": 0, "to timestamp": 0,
                        "list or map values": 0, "precombined tables": 0,
                        "upserts lost": 0, "at depth 2": 0, "defaults set": 0,
                        "defaults dropped": 0, "defaults written": 0, "defaults widened": 0,
                        "instants drawn": 0}


@dataclass
class Col:
    """A column or struct member: ``kind`` is ``prim`` (of ``type``), ``struct``, ``list``
    (of structs) or ``map`` (string keys, struct values), with ``members`` those structs'
    fields (of any kind: structs nest), or ``plist`` or ``pmap``: a list or map (string
    keys) of ``type`` values. ``default`` is a top-level ``prim`` column's write default, in
    its ``type`` (None: it has none)."""

    name: str
    kind: str
    type: str = ""
    members: list[Col] = field(default_factory=list)
    default: Any = None

    def text(self, quoted: bool = False) -> str:
        """The type as Spark prints it, or with ``quoted`` as DDL (member names quoted)."""
        if self.kind in TYPED:
            return {"prim": "{}", "plist": "array<{}>", "pmap": "map<string,{}>"}[
                self.kind].format(self.type)
        q = "`" if quoted else ""
        inner = "struct<" + ",".join(f"{q}{m.name}{q}:{m.text(quoted)}"
                                     for m in self.members) + ">"
        return {"struct": inner, "list": f"array<{inner}>", "map": f"map<string,{inner}>"}[
            self.kind]


def decimal_of(t: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of a decimal type, else None."""
    found = re.fullmatch(r"decimal\((\d+),(\d+)\)", t)
    return (int(found[1]), int(found[2])) if found else None


def widens(old: str, new: str) -> bool:
    """Whether a write may turn ``old`` into ``new`` keeping every value (the documented
    rules, restated here, not evonb's code)."""
    if old == new:
        return True
    if new == "string":
        return old in NUMBERS or old == "date" or decimal_of(old) is not None
    if old in NUMBERS and new in NUMBERS:
        return NUMBERS.index(old) < NUMBERS.index(new)
    if old == "date":
        return new == "timestamp_ntz"
    to = decimal_of(new)
    if to is None:
        return False
    if old in INTEGER_DIGITS:
        return to[0] - to[1] >= INTEGER_DIGITS[old]
    came = decimal_of(old)
    return came is not None and to[0] - to[1] >= came[0] - came[1] and to[1] >= came[1]


def meet(table: str, data: str) -> str | None:
    """The column's type after a write of ``data`` into a ``table`` column; None: refused."""
    if widens(table, data):
        return data
    if widens(data, table):
        return table
    a, b = decimal_of(table), decimal_of(data)
    if b and table == "double":  # decimals are cast into a double column
        return table
    if a and b:
        integer, scale = max(a[0] - a[1], b[0] - b[1]), max(a[1], b[1])
        if integer + scale <= 38:
            return f"decimal({integer + scale},{scale})"
    return None


def cast(value: Any, sent: str, to: str) -> Any:
    """A value sent as ``sent`` read in the table's type ``to`` (a Spark cast)."""
    if value is None or sent == to:
        return value
    if to == "double":
        return float(value)
    if to == "string":  # integers, dates and decimals (plain at these scales), never doubles
        return value.isoformat() if sent == "date" else str(value)
    if to == "timestamp_ntz":
        return datetime.datetime.combine(value, datetime.time())
    places = decimal_of(to)
    if places is not None:
        return Decimal(value).quantize(Decimal(1).scaleb(-places[1]))
    return value  # int -> bigint


def default_literal(value: Any, t: str) -> str:
    """``value`` of type ``t`` as the literal of a ``SET DEFAULT``: numbers as written, text,
    dates and timestamps quoted (the column's type converts them)."""
    if t == "string":
        return literal(value, t)
    if t in ("date", "timestamp_ntz"):
        return f"'{value}'"
    if t == "timestamp":  # an instant: its UTC time, said to be UTC
        return f"'{value.isoformat(sep=' ')}+00:00'"
    return str(value)


def utc_times(value: Any) -> Any:
    """``value`` with each instant (an aware ``datetime``: pyarrow's ``timestamp``) as its
    naive UTC time, as the model holds it."""
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    if isinstance(value, dict):
        return {k: utc_times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [utc_times(v) for v in value]
    return value


def each(value: Any, kind: str, change: Any) -> Any:
    """``change`` applied to a value of a ``prim`` column, or to each element of a ``plist``
    or value of a ``pmap`` one."""
    if value is None:
        return None
    if kind == "plist":
        return [change(x) for x in value]
    if kind == "pmap":
        return {k: change(x) for k, x in value.items()}
    return change(value)


def structs_in(kind: str, value: Any) -> list[dict[str, Any]]:
    """The struct values in a model value of a ``struct``, ``list`` or ``map`` column."""
    if value is None:
        return []
    return [value] if kind == "struct" else value if kind == "list" else list(value.values())


def counted(to: str) -> None:
    """Count a widening of a stored column to ``to``."""
    SEEN["widened"] += 1
    kind = ("to decimal" if decimal_of(to) else "to text" if to == "string"
            else "to timestamp" if to == "timestamp_ntz" else None)
    if kind:
        SEEN[kind] += 1


def send_type(rng: random.Random, table: str) -> str:
    """A type the data may bring for a column of type ``table``: narrower, the same or wider,
    and now and then one the column cannot take (the write must be refused). Never a double
    into or as text: Spark's text of a double is not modelled."""
    if rng.random() < 0.03:
        refused = [t for t in PRIMITIVES if meet(table, t) is None]
        if refused:
            return rng.choice(refused)
    fits = [t for t in PRIMITIVES
            if meet(table, t) is not None and {table, t} != {"double", "string"}]
    return rng.choice((table, table, *fits))


def value(rng: random.Random, t: str) -> Any:
    if rng.random() < 0.15:
        return None
    if t == "int":
        return rng.randint(-1000, 1000)
    if t == "bigint":
        return rng.choice((rng.randint(-10**6, 10**6), 2**40 + rng.randint(0, 9)))
    if t == "double":
        return rng.choice(DOUBLES)
    if t == "date":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-20000, 60000))
    if t in ("timestamp_ntz", "timestamp"):
        SEEN["instants drawn"] += t == "timestamp"
        return datetime.datetime(2000, 1, 1) + datetime.timedelta(
            seconds=rng.randint(-10**9, 10**9), microseconds=rng.randint(0, 999_999))
    places = decimal_of(t)
    if places is not None:
        digits = min(places[0] - places[1], 6) + places[1]
        return Decimal(rng.randint(-10**digits + 1, 10**digits - 1)).scaleb(-places[1])
    return rng.choice(TEXTS)


class WriteEvolution(RuleBasedStateMachine):
    """One table of one merge path and its model: columns and key -> row."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="evonb-write-model-")
        self.columns: list[Col] = []
        self.rows: dict[int, dict[str, Any]] = {}
        self.states: list[tuple[str, str, list[dict[str, Any]]]] = []  # instant, schema, rows
        self.table: Any = None
        self.fresh = 0
        self.log: list[str] = []
        self.partitioned = False
        self.gone: dict[int, list[str]] = {}  # id(parent Col) or 0 -> names renamed or dropped
        self.pre: Col | None = None  # the precombine column (its name follows renames)

    @initialize(vseed=SEEDS)
    def create(self, vseed: int) -> None:
        path, parquet_logs = PATH[0]
        table_type, props = MERGE_PATHS[path]
        if parquet_logs:
            props = props | {"evonb.mor.log_format": "parquet"}
        draw = self.rng(vseed)
        self.partitioned = draw.random() < 0.5
        PARTITIONED[self.partitioned] += 1
        self.pre = Col("ts", "prim", "bigint") if draw.random() < 0.5 else None
        SEEN["precombined tables"] += self.pre is not None
        self.columns = [
            Col("id", "prim", "bigint"), *([self.pre] if self.pre else []),
            *([Col(PART, "prim", "int")] if self.partitioned else []), Col("a", "prim", "int"),
            Col("s", "struct", members=[
                Col("x", "prim", "int"), Col("y", "prim", "string"),
                Col("z", "struct", members=[Col("u", "prim", "int"), Col("t", "prim", "string")])]),
            Col("l", "list", members=[
                Col("p", "prim", "bigint"), Col("o", "struct", members=[Col("e", "prim", "int")]),
                Col("k", "prim", "timestamp")]),
            Col("m", "map", members=[Col("q", "prim", "int"), Col("g", "plist", "int")]),
            Col("v", "plist", "int"), Col("w", "pmap", "date"), Col("at", "prim", "timestamp")]
        ddl = ", ".join(f"`{c.name}` {c.text(quoted=True)}"
                        + (" not null" if c.name == "id" else "") for c in self.columns)
        self.table = evonb.create_table(os.path.join(self.folder, "t"), ddl, primary_key="id",
                                        partition_by=PART if self.partitioned else (),
                                        precombine="ts" if self.pre else None,
                                        table_type=table_type, properties=props)
        if draw.random() < 0.5:  # widened by the first write: the default converts
            self.alter_default(next(c for c in self.columns if c.name == "a"), draw.randint(-9, 9))
        # every history starts with a write that widens a column, a member and a member of a
        # member, adds a member at both depths and lacks a column and a member, whatever
        # hypothesis draws after it
        first = [Col("s", "struct", members=[
                     Col("n0", "prim", "int"), Col("X", "prim", "bigint"),
                     Col("z", "struct", members=[Col("U", "prim", "bigint"),
                                                 Col("d0", "prim", "date")])]),
                 Col("id", "prim", "bigint"), Col("a", "prim", "double"),
                 Col("m", "map", members=[Col("q", "prim", "int")]),
                 *([Col(PART, "prim", "int")] if self.partitioned else [])]
        self.write(vseed, "insert", first)

    # ---------------------------------------------------------------- the data a write brings
    def new_name(self, rng: random.Random) -> str:
        self.fresh += 1
        name = f"n{self.fresh}"
        return name.upper() if rng.random() < 0.3 else name

    def sent_name(self, rng: random.Random, name: str) -> str:
        if rng.random() < 0.15 and name.upper() != name:
            SEEN["case"] += 1
            return name.upper()
        return name

    def gone_name(self, rng: random.Random, parent: int, current: list[Col]) -> str | None:
        """A name a rename or drop freed in ``parent`` and no column has now, or None."""
        taken = {c.name.lower() for c in current}
        free = [n for n in self.gone.get(parent, []) if n.lower() not in taken]
        if free and rng.random() < 0.8:
            SEEN["name reused"] += 1
            return rng.choice(free)
        return None

    def sent_members(self, rng: random.Random, members: list[Col], parent: int, depth: int
                     ) -> list[Col]:
        """The members of a struct at ``depth`` (1: a column's) as the data brings them (at
        least one)."""
        out = []
        for m in members:
            if rng.random() < 0.2:
                SEEN["missing"] += 1
                continue
            name = self.sent_name(rng, m.name)
            if m.kind in TYPED:
                out.append(Col(name, m.kind, send_type(rng, m.type)))
            else:
                out.append(Col(name, m.kind,
                               members=self.sent_members(rng, m.members, id(m), depth + 1)))
        if rng.random() < (0.4 if self.gone.get(parent) else 0.2) or not out:
            name = self.gone_name(rng, parent, members) or self.new_name(rng)
            out.append(self.new_column(rng, name, depth))
        rng.shuffle(out)
        return out

    def new_column(self, rng: random.Random, name: str, depth: int) -> Col:
        """A column (``depth`` 0) or member the table does not have: above :data:`DEEP`
        mostly primitive, now and then a list or map of primitives or a struct, list or map of
        structs of primitives."""
        kind = "prim"
        if depth < DEEP and rng.random() < (0.6 if depth == 0 else 0.3):
            kind = rng.choice(("plist", "pmap", "struct", "struct", "list", "map"))
        if kind in TYPED:
            return Col(name, kind, rng.choice(PRIMITIVES))
        return Col(name, kind, members=[Col(self.new_name(rng), "prim", rng.choice(PRIMITIVES))
                                        for _ in range(rng.randint(1, 2))])

    def sent_columns(self, rng: random.Random) -> list[Col]:
        out = [Col(self.sent_name(rng, "id"), "prim", "bigint")]
        for c in self.columns[1:]:
            if c.name == PART:  # the partition column: always brought, never retyped
                out.append(Col(self.sent_name(rng, PART), "prim", "int"))
                continue
            if rng.random() < 0.2:
                SEEN["missing"] += 1
                continue
            name = self.sent_name(rng, c.name)
            if c is self.pre:  # mostly its own type or narrower: any wider one is refused
                out.append(Col(name, "prim", rng.choice(("bigint", "bigint", "int"))
                               if rng.random() < 0.95 else send_type(rng, c.type)))
            elif c.kind in TYPED:
                out.append(Col(name, c.kind, send_type(rng, c.type)))
            else:
                out.append(Col(name, c.kind,
                               members=self.sent_members(rng, c.members, id(c), 1)))
        if rng.random() < (0.5 if self.gone.get(0) else 0.25):
            name = self.gone_name(rng, 0, self.columns) or self.new_name(rng)
            out.append(self.new_column(rng, name, 0))
        rng.shuffle(out)
        return out

    def sent_value(self, rng: random.Random, c: Col, top: bool = True) -> Any:
        """A value the data brings for ``c`` (``top``: a column, not a member)."""
        if c.kind == "prim":
            if top and self.pre is not None and c.name.lower() == self.pre.name.lower() \
                    and c.type in ("int", "bigint"):
                return None if rng.random() < 0.15 else rng.randint(0, 4)  # ties and nulls
            return value(rng, c.type)
        if rng.random() < 0.1:
            return None
        if c.kind == "plist":
            return [value(rng, c.type) for _ in range(rng.randint(0, 2))]
        if c.kind == "pmap":
            return {f"k{i}": value(rng, c.type) for i in range(rng.randint(0, 2))}

        def struct() -> tuple[Any, ...]:
            return tuple(self.sent_value(rng, m, top=False) for m in c.members)

        if c.kind == "struct":
            return struct()
        if c.kind == "list":
            return [struct() for _ in range(rng.randint(0, 2))]
        return {f"k{i}": struct() for i in range(rng.randint(0, 2))}

    # ------------------------------------------------------------------- the model's rules
    def evolve(self, sent: list[Col]) -> None:
        """The table's columns after a write of ``sent``: new ones added at the end (in the
        data's order), types widened. Columns are changed in place: renames and drops find
        them by identity."""
        self.merge(self.columns, sent, ())

    def merge(self, mine: list[Col], sent: list[Col], path: tuple[Col, ...]) -> None:
        """Columns (``path`` empty) or the members of the struct at ``path`` after a write of
        ``sent`` into them."""
        by_name = {c.name.lower(): c for c in mine}
        for s in sent:
            c = by_name.get(s.name.lower())
            if c is None:
                by_name[s.name.lower()] = copy.deepcopy(s)
                mine.append(by_name[s.name.lower()])
                SEEN["added nested"] += bool(path)
                SEEN["at depth 2"] += len(path) > 1
            elif c.kind in TYPED:
                to = meet(c.type, s.type)
                assert to is not None  # refused writes never reach the model
                if to != c.type:
                    counted(to)
                    if c.default is not None:
                        c.default = cast(c.default, c.type, to)
                        SEEN["defaults widened"] += 1
                    SEEN["list or map values"] += c.kind != "prim"
                    SEEN["at depth 2"] += len(path) > 1
                    for slot, key in self.slots((*path, c)):
                        slot[key] = each(slot.get(key), c.kind,
                                         lambda x, c=c, to=to: cast(x, c.type, to))
                    c.type = to
            else:
                self.merge(c.members, s.members, (*path, c))

    def slots(self, path: tuple[Col, ...]) -> list[tuple[dict[str, Any], str]]:
        """Where the stored values of the column or member at ``path`` are: (dict, key)."""
        top, *inner = path
        out = [(row, top.name) for row in self.rows.values()]
        parent = top
        for m in inner:
            out = [(s, m.name) for slot, key in out for s in structs_in(parent.kind, slot.get(key))]
            parent = m
        return out

    def structs_of(self, path: tuple[Col, ...]) -> list[dict[str, Any]]:
        """Every stored struct value of the column or member at ``path`` (struct, list
        elements, map values)."""
        return [s for slot, key in self.slots(path)
                for s in structs_in(path[-1].kind, slot.get(key))]

    def stored_row(self, sent: list[Col], values: tuple[Any, ...]) -> dict[str, Any]:
        """A row written as ``values`` of ``sent``, as the (evolved) table reads it."""
        given = {s.name.lower(): (s, v) for s, v in zip(sent, values, strict=True)}
        row: dict[str, Any] = {}
        for c in self.columns:
            s, v = given.get(c.name.lower(), (None, None))
            if s is None:
                row[c.name] = c.default
                SEEN["defaults written"] += c.default is not None
            else:
                row[c.name] = self.stored_value(s, c, v)
        return row

    def stored_value(self, s: Col, c: Col, v: Any) -> Any:
        """A value ``v`` the data brings as ``s``, as the table's ``c`` reads it."""
        if v is None:
            return None
        if c.kind in TYPED:
            return each(v, c.kind, lambda x: cast(x, s.type, c.type))

        def struct(t: tuple[Any, ...]) -> dict[str, Any]:
            got = {m.name.lower(): (m, x) for m, x in zip(s.members, t, strict=True)}
            out = {}
            for m in c.members:
                sm, x = got.get(m.name.lower(), (None, None))
                out[m.name] = None if sm is None else self.stored_value(sm, m, x)
            return out

        if c.kind == "struct":
            return struct(v)
        if c.kind == "list":
            return [struct(e) for e in v]
        return {k: struct(e) for k, e in v.items()}

    def with_new_columns(self) -> None:
        """Every stored row with the columns and members the table gained, as null."""
        for row in self.rows.values():
            for c in self.columns:
                row.setdefault(c.name, None)

        def fill(path: tuple[Col, ...]) -> None:
            if path[-1].kind in TYPED:
                return
            for struct in self.structs_of(path):
                for m in path[-1].members:
                    struct.setdefault(m.name, None)
            for m in path[-1].members:
                fill((*path, m))

        for c in self.columns:
            fill((c,))

    # ------------------------------------------------------------------------ the steps
    def rng(self, vseed: int) -> random.Random:
        return random.Random(f"{SALT[0]}:{vseed}:{len(self.log)}")

    def write(self, vseed: int, mode: str, sent: list[Col] | None = None) -> None:
        rng = self.rng(vseed)
        sent = sent or self.sent_columns(rng)
        stored = sorted(self.rows)
        free = [k for k in range(KEYS) if k not in self.rows]
        if mode == "insert":
            keys = rng.sample(free, min(len(free), rng.randint(1, 3)))
        elif mode == "overwrite":
            keys = rng.sample(range(KEYS), rng.randint(1, 3))
        else:
            keys = list(dict.fromkeys(
                rng.choice(stored) if stored and rng.random() < 0.6 else rng.randrange(KEYS)
                for _ in range(rng.randint(1, 3))))
        if not keys:
            return
        rows = []
        for k in keys:
            rows.append(tuple(k if s.name.lower() == "id" else k % 3 if s.name.lower() == PART
                              else self.sent_value(rng, s)
                              for s in sent))
        ddl = ", ".join(f"`{s.name}` {s.text(quoted=True)}" for s in sent)
        df = SPARK[0].createDataFrame(rows, ddl).coalesce(1)
        self.log.append(f"{mode} {keys} as {ddl}")
        refused = self.refused(sent, mode)
        if refused:
            self.refuse(df, mode, refused)
            return
        self.table.write(df, mode=mode)
        self.evolve(sent)
        if mode == "overwrite":  # the written rows replace every row; columns are kept
            self.rows = {}
        self.with_new_columns()
        for values in rows:
            key = values[[s.name.lower() for s in sent].index("id")]
            row = self.stored_row(sent, values)
            if mode == "upsert" and key in self.rows and self.loses(row, self.rows[key]):
                SEEN["upserts lost"] += 1
                continue
            self.rows[key] = row
        self.check(f"{mode} as {ddl}")

    def loses(self, incoming: dict[str, Any], stored: dict[str, Any]) -> bool:
        """Whether an upserted row loses to the stored row of its key: a smaller precombine
        value, or null against a value (on a tie the incoming row wins)."""
        if self.pre is None:
            return False
        new, old = incoming[self.pre.name], stored[self.pre.name]
        return old is not None and (new is None or new < old)

    def refused(self, sent: list[Col], mode: str) -> list[str]:
        """Words of the error for each column or member whose type the write's data cannot
        bring, the precombine column retyped (any change to its type), or an upsert without
        it (empty: the write goes through)."""
        out = []
        columns = {c.name.lower(): c for c in self.columns}
        names = {s.name.lower() for s in sent}
        if self.pre is not None and mode == "upsert" and self.pre.name.lower() not in names \
                and self.pre.default is None:
            out.append(f"Upsert data lacks the precombine column {self.pre.name!r}")
        for s in sent:
            mine = columns.get(s.name.lower())
            if mine is None:
                continue
            if mine is self.pre and meet(mine.type, s.type) not in (None, mine.type):
                out.append(f"Incoming column {mine.name!r} is {s.type}, but key, partition and "
                           "precombine columns cannot change type")
            out += self.type_refusals(mine, s)
        return out

    def type_refusals(self, mine: Col, s: Col) -> list[str]:
        """Words of the error for each type in ``s`` (at any depth) ``mine`` cannot take."""
        if mine.kind in TYPED:
            return [] if meet(mine.type, s.type) is not None else [
                f"table has {mine.type}, data has {s.type}"]
        members = {x.name.lower(): x for x in mine.members}
        return [r for m in s.members if m.name.lower() in members
                for r in self.type_refusals(members[m.name.lower()], m)]

    def refuse(self, df: Any, mode: str, refused: list[str]) -> None:
        """The write must fail with a ``WriteSchemaError`` naming a column the data cannot
        bring, and leave the table as it was."""
        before = self.table.timeline.last_completed().instant
        with pytest.raises(WriteSchemaError) as err:
            self.table.write(df, mode=mode)
        assert any(r in err.value.message for r in refused), (err.value.message, refused)
        SEEN["refused"] += 1
        self.log[-1] += "  (refused)"
        assert self.table.timeline.last_completed().instant == before
        self.check_read(f"refused {mode}", self.schema_text(), self.model_rows())

    @rule(vseed=SEEDS)
    def step(self, vseed: int) -> None:
        """One operation, drawn from the run's seed and ``vseed`` (hypothesis's first draws
        are all zeros, which would play one operation over and over)."""
        rng = self.rng(vseed)
        op = rng.choices(("insert", "upsert", "overwrite", "delete", "service", "ddl",
                          "default"), (3, 4, 1, 1, 1, 3, 2))[0]
        if op == "delete":
            self.delete(vseed)
        elif op == "ddl":
            self.rename_or_drop(vseed)
        elif op == "default":
            self.set_default(vseed)
        elif op == "service":
            self.service()
        else:
            self.write(vseed, op)

    def delete(self, vseed: int) -> None:
        rng = self.rng(vseed)
        if not self.rows:
            return
        keys = rng.sample(sorted(self.rows), min(len(self.rows), rng.randint(1, 2)))
        df = SPARK[0].createDataFrame([(k,) for k in keys], "id bigint")
        self.log.append(f"delete {keys}")
        self.table.write(df, mode="delete")
        for k in keys:
            del self.rows[k]
        self.check("delete")

    def set_default(self, vseed: int) -> None:
        """``ALTER COLUMN ... SET DEFAULT`` a value of the column's type, or ``DROP DEFAULT``,
        on a top-level primitive column (the key and partition columns left out; none when
        every other one was dropped): only what later writes store changes, never a stored
        row."""
        rng = self.rng(vseed)
        columns = [c for c in self.columns[1:] if c.kind == "prim" and c.name != PART]
        if not columns:
            return
        c = rng.choice(columns)
        self.alter_default(c, None if rng.random() < 0.25 else value(rng, c.type))

    def alter_default(self, c: Col, new: Any) -> None:
        """Column ``c``'s write default set to ``new`` (None: dropped) by ``ALTER TABLE``."""
        if new is None:
            action = "DROP DEFAULT"
            SEEN["defaults dropped"] += 1
        else:
            action = f"SET DEFAULT {default_literal(new, c.type)}"
            SEEN["defaults set"] += 1
        statement = f"ALTER COLUMN `{c.name}` {action}"
        self.log.append(statement)
        self.table.alter(f"ALTER TABLE t {statement}")
        c.default = new
        self.check(statement)

    def rename_or_drop(self, vseed: int) -> None:
        """``ALTER TABLE`` renames or drops a column or a member (of a struct, a list's
        element struct or a map's value struct); its name is free for a write to bring back
        as a new column, which never shows the old values."""
        rng = self.rng(vseed)
        places: list[tuple[str, tuple[Col, ...], Col]] = []

        def walk(prefix: str, path: tuple[Col, ...], columns: list[Col]) -> None:
            for c in columns:
                places.append((prefix, path, c))
                if c.kind in INNER:
                    walk(f"{prefix}`{c.name}`.{INNER[c.kind]}", (*path, c), c.members)

        walk("", (), [c for c in self.columns[1:] if c.name != PART])
        prefix, path, col = rng.choice(places)
        parent = path[-1] if path else None
        siblings = parent.members if parent is not None else [
            c for c in self.columns[1:] if c.name != PART]
        drop = rng.random() < 0.5 and len(siblings) > 1 and col is not self.pre
        structs = self.structs_of(path) if path else list(self.rows.values())
        SEEN["at depth 2"] += len(path) > 1
        if drop:
            if parent is not None:
                parent.members.remove(col)
            else:
                self.columns.remove(col)
            for struct in structs:
                struct.pop(col.name, None)
            statement = f"DROP COLUMN {prefix}`{col.name}`"
            SEEN["dropped"] += 1
        else:
            self.fresh += 1
            old, col.name = col.name, f"r{self.fresh}"
            for struct in structs:
                struct[col.name] = struct.pop(old)
            statement = f"RENAME COLUMN {prefix}`{old}` TO `{col.name}`"
            SEEN["renamed"] += 1
            col = Col(old, col.kind)
        self.gone.setdefault(id(parent) if parent is not None else 0, []).append(col.name)
        self.log.append(statement)
        self.table.alter(f"ALTER TABLE t {statement}")
        self.check(statement)

    def service(self) -> None:
        if self.table.table_type == "mor":
            self.table.compact()
            step = "compaction"
        else:
            self.table.cluster()
            step = "clustering"
        self.log.append(step)
        self.check(step)
        for instant, schema, rows in self.states[:-1]:
            self.check_read(f"{step}, as of {instant}", schema, rows, instant)

    # ---------------------------------------------------------------------------- checks
    def schema_text(self) -> str:
        return "struct<" + ",".join(f"{c.name}:{c.text()}" for c in self.columns) + ">"

    def model_rows(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(self.rows[k]) for k in sorted(self.rows)]

    def check(self, step: str) -> None:
        schema, rows = self.schema_text(), self.model_rows()
        self.check_read(step, schema, rows)
        self.states.append((self.table.timeline.last_completed().instant, schema, rows))

    def check_read(self, step: str, schema: str, rows: list[dict[str, Any]],
                   as_of: str | None = None) -> None:
        label = f"{PATH[0]} after {step}"
        df = self.table.read(as_of)
        assert df.schema.simpleString() == schema, (
            f"{label}: schema {df.schema.simpleString()} != model {schema}\n"
            + "\n".join(self.log))
        got = sorted((normal(r) for r in (x.asDict() for x in df.collect())),
                     key=lambda r: r["id"])
        try:
            same(got, rows, f"{label}: Spark read")
            same(utc_times(arrow_rows(self.table.to_arrow(as_of))), rows,
                 f"{label}: Arrow read")
        except AssertionError as err:
            err.add_note("steps:\n" + "\n".join(self.log))
            raise

    def teardown(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


CASES = [(p, False) for p in sorted(MERGE_PATHS)] + [("mor-driver", True)]


@pytest.mark.parametrize(("path", "parquet_logs"), CASES,
                         ids=[p + ("-parquet" if q else "") for p, q in CASES])
def test_schema_on_write_against_the_model(spark: Any, path: str, parquet_logs: bool) -> None:
    SPARK[:], PATH[:] = [spark], [(path, parquet_logs)]
    for k in SEEN:
        SEEN[k] = 0
    histories = int(os.environ.get("EVONB_WRITE_MODEL_HISTORIES") or 2)
    seed = seed_from("EVONB_WRITE_MODEL_SEED")
    SALT[0] = seed
    PARTITIONED.update({False: 0, True: 0})
    print(f"write evolution model, {path}: seed {seed}; replay with "
          f"EVONB_WRITE_MODEL_SEED={seed}")
    play_histories(WriteEvolution, histories=histories, steps=12, min_steps=5, seed=seed,
                   replay=f"write evolution model seed: EVONB_WRITE_MODEL_SEED={seed}")
    print(f"write evolution model, {path}: {SEEN}, histories by partitioning {PARTITIONED}")
    assert SEEN["widened"] and SEEN["added nested"] and SEEN["missing"]  # not vacuous
    assert SEEN["at depth 2"]
