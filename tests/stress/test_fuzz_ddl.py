"""Property-based fuzzing of the DDL parser and of SchemaUpdate.

- ``STATEMENTS`` random (mostly near-valid, often mutated) ALTER TABLE statements and
  ``update_schema()`` blocks against real tables: the only exceptions are evonb errors, and after
  every rejection the table's metadata (every file under ``.evo`` but the lock) is
  byte-identical to before.
- ``OPERATIONS`` random SchemaUpdate calls on random schemas in memory: only evonb errors, and a
  rejected call leaves the update exactly as it was.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evonb
from evonb.errors import EvoError
from evonb.schema.evolution import SchemaUpdate
from tests.concurrency.helpers import metadata_digest
from tests.schema.strategies import schemas

pytestmark = [pytest.mark.stress, pytest.mark.spark]

STATEMENTS = int(os.environ.get("EVONB_FUZZ_STATEMENTS", "2000"))
OPERATIONS = int(os.environ.get("EVONB_FUZZ_OPERATIONS", "10000"))
PER_TABLE = 20
PER_UPDATE = 25
SETTINGS = {"deadline": None, "database": None,
            "derandomize": os.environ.get("EVONB_FUZZ_RANDOM") is None,
            "suppress_health_check": list(HealthCheck)}

ODD_NAMES = ["a b", "a.b", "名前", "it's", 'q"q', "select", "from", "x`y", "", " ", "ü",
             "id", "ID", "loc", "Tags", "_evo_commit_time", "a" * 300]
TYPES = ["int", "bigint", "smallint", "tinyint", "string", "double", "float", "boolean",
         "binary", "date", "timestamp", "timestamp_ntz", "decimal(10,2)", "decimal(38,0)",
         "decimal(5)", "decimal(39,2)", "decimal(2,5)", "varchar(5)", "char(0)",
         "array<int>", "array<struct<x:int,y:string>>", "map<string,int>", "map<int,array<int>>",
         "struct<a:int,b:string>", "struct<>", "strin", "array<>", "map<int>", "int(3)",
         "decimal(-1,0)", "struct<a int, a int>"]
LITERALS = ["0", "-1", "1.5", "'text'", "TRUE", "NULL", "DATE '2020-01-01'",
            "TIMESTAMP '2020-01-01 10:00:00'", "X'0A0B'", "CAST(1 AS int)",
            "99999999999999999999999", "1e400", "'unterminated", "'2020-13-45'", "-", "X'0'",
            "DATE 'x'", "CAST('a' AS int)", "128Y", "1L", "0.5BD"]
NOISE = ["(", ")", ",", ";", "`", "'", ".", "<", ">", ":", "--", "/*", "NOT", "NULL", "COLUMN",
         "TYPE", "AFTER", "FIRST", "DEFAULT", "\\", "\x00", "é", "💥", "ALTER", "TABLE", "DROP"]


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@st.composite
def paths(draw: st.DrawFn, existing: list[str]) -> str:
    if existing and draw(st.integers(0, 3)):
        names = draw(st.sampled_from(existing)).split(".")
    else:
        names = [draw(st.sampled_from(ODD_NAMES) | st.text(max_size=6))]
    return ".".join(quote(n) if draw(st.integers(0, 3)) else n for n in names)


@st.composite
def changes(draw: st.DrawFn, existing: list[str]) -> str:
    kind = draw(st.sampled_from(["type", "comment", "first", "after", "before", "set_nn",
                                 "drop_nn", "default", "drop_default"]))
    return {
        "type": lambda: f"TYPE {draw(st.sampled_from(TYPES))}",
        "comment": lambda: f"COMMENT '{draw(st.text(max_size=8))}'",
        "first": lambda: "FIRST",
        "after": lambda: f"AFTER {draw(paths(existing))}",
        "before": lambda: f"BEFORE {draw(paths(existing))}",
        "set_nn": lambda: "SET NOT NULL",
        "drop_nn": lambda: "DROP NOT NULL",
        "default": lambda: f"SET DEFAULT {draw(st.sampled_from(LITERALS))}",
        "drop_default": lambda: "DROP DEFAULT",
    }[kind]()


@st.composite
def statements(draw: st.DrawFn, existing: list[str]) -> str:
    kind = draw(st.sampled_from(["add", "add", "drop", "rename", "alter", "alter", "multi"]))
    if kind == "add":
        cols = []
        for _ in range(draw(st.integers(1, 3))):
            col = f"{draw(paths(existing))} {draw(st.sampled_from(TYPES))}"
            if draw(st.booleans()):
                col += " NOT NULL"
            if draw(st.booleans()):
                col += f" DEFAULT {draw(st.sampled_from(LITERALS))}"
            if draw(st.booleans()):
                col += f" COMMENT '{draw(st.text(max_size=5))}'"
            if draw(st.booleans()):
                col += " FIRST" if draw(st.booleans()) else f" AFTER {draw(paths(existing))}"
            cols.append(col)
        body = f"ADD COLUMNS ({', '.join(cols)})"
    elif kind == "drop":
        body = f"DROP COLUMN {'IF EXISTS ' if draw(st.booleans()) else ''}{draw(paths(existing))}"
    elif kind == "rename":
        body = (f"RENAME COLUMN {draw(paths(existing))} TO "
                f"{quote(draw(st.sampled_from(ODD_NAMES) | st.text(max_size=5)))}")
    elif kind == "alter":
        n = draw(st.integers(1, 3))
        body = f"ALTER COLUMN {draw(paths(existing))} " + " ".join(
            draw(changes(existing)) for _ in range(n))
    else:
        return "; ".join(draw(statements(existing)) for _ in range(2))
    text = f"ALTER TABLE t {body}"
    return draw(mutated(text))


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """``text``, or (a third of the time) with tokens dropped, inserted, swapped or cut off."""
    if draw(st.integers(0, 2)):
        return text
    tokens = text.split(" ")
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["drop", "insert", "swap", "cut", "char"]))
        i = draw(st.integers(0, max(0, len(tokens) - 1)))
        if op == "drop" and len(tokens) > 1:
            tokens.pop(i)
        elif op == "insert":
            tokens.insert(i, draw(st.sampled_from(NOISE) | st.text(max_size=3)))
        elif op == "swap" and len(tokens) > 1:
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "cut":
            tokens = tokens[: i + 1]
            tokens[-1] = tokens[-1][: draw(st.integers(0, len(tokens[-1])))]
        elif op == "char" and tokens[i]:
            k = draw(st.integers(0, len(tokens[i]) - 1))
            tokens[i] = tokens[i][:k] + draw(st.sampled_from(NOISE)) + tokens[i][k + 1:]
    return " ".join(tokens)


BASE = ("id bigint not null, name string, price double, "
        "loc struct<lat:double, lon:double>, tags array<string>, "
        "attrs map<string, struct<n:int, s:string>>, `odd name` int")
COUNTS: Counter[str] = Counter()


def update_calls(draw: st.DrawFn, existing: list[str]) -> list[tuple[str, tuple, dict]]:
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(existing) | ODD)
        calls.append(draw(update_call(path, existing)))
    return calls


ODD = st.sampled_from(ODD_NAMES)
TYPE_NAMES = st.sampled_from(TYPES)
VALUES = (st.none() | st.integers(-(2**70), 2**70) | st.text(max_size=5) | st.floats()
          | st.booleans() | st.binary(max_size=3) | st.dates())
CALL_KINDS = st.sampled_from(["add_column", "drop_column", "rename_column", "update_column_type",
                              "set_nullable", "set_default", "drop_default", "set_comment",
                              "move_first", "move_after", "move_before", "add_columns"])
COMMENTS = st.none() | st.text(max_size=5)


@st.composite
def update_call(draw: st.DrawFn, path: str, existing: list[str]) -> tuple[str, tuple, dict]:
    """One random SchemaUpdate call (only the arguments it needs are drawn)."""
    kind = draw(CALL_KINDS)

    def other() -> str:
        return draw(st.sampled_from(existing) | ODD)

    if kind == "add_column":
        name = draw(ODD)
        target = f"{path}.{name}" if draw(st.booleans()) else name
        return kind, (target, draw(TYPE_NAMES)), {
            "nullable": draw(st.booleans()), "default": draw(VALUES),
            "after": other() if draw(st.booleans()) else None}
    if kind in ("drop_column", "drop_default", "move_first"):
        return kind, (path,), {}
    if kind == "rename_column":
        return kind, (path, draw(ODD)), {}
    if kind == "update_column_type":
        return kind, (path, draw(TYPE_NAMES)), {}
    if kind == "set_nullable":
        return kind, (path, draw(st.booleans())), {}
    if kind == "set_default":
        return kind, (path, draw(VALUES)), {}
    if kind == "set_comment":
        return kind, (path, draw(COMMENTS)), {}
    if kind in ("move_after", "move_before"):
        return kind, (path, other()), {}
    return kind, (f"{quote(draw(ODD))} {draw(TYPE_NAMES)}",), {}


@settings(max_examples=max(1, STATEMENTS // PER_TABLE), **SETTINGS)
@given(data=st.data())
def test_fuzzed_ddl_against_a_table(spark, tmp_path_factory, data) -> None:
    t = evonb.create_table(tmp_path_factory.mktemp("fuzz") / "t", BASE, primary_key="id")
    for _ in range(PER_TABLE):
        existing = t.schema.paths()
        before = metadata_digest(t.path)
        if data.draw(st.integers(0, 4)):
            stmt = data.draw(statements(existing))
            try:
                t.alter(stmt)
            except EvoError:
                COUNTS["ddl rejected"] += 1
                assert metadata_digest(t.path) == before, stmt
                continue
            except Exception as exc:  # pragma: no cover - the failure being looked for
                raise AssertionError(f"{type(exc).__name__} from DDL {stmt!r}") from exc
            COUNTS["ddl accepted"] += 1
        else:
            calls = update_calls(data.draw, existing)
            try:
                with t.update_schema() as u:
                    for name, args, kwargs in calls:
                        getattr(u, name)(*args, **kwargs)
            except EvoError:
                COUNTS["update_schema rejected"] += 1
                assert metadata_digest(t.path) == before, calls
                continue
            except Exception as exc:  # pragma: no cover
                raise AssertionError(f"{type(exc).__name__} from {calls!r}") from exc
            COUNTS["update_schema accepted"] += 1


@settings(max_examples=max(1, OPERATIONS // PER_UPDATE), **SETTINGS)
@given(schema=schemas(), data=st.data())
def test_fuzzed_schema_updates_in_memory(schema, data) -> None:
    """A call that raises leaves the update as it was; a call accepted but invalid as a whole
    fails at ``apply()`` (validation is lazy), and the sequence goes on from the last valid
    schema."""
    from evonb.schema.schema import Schema

    update = SchemaUpdate(schema, allow_set_not_null=True)
    current = schema
    for _ in range(PER_UPDATE):
        existing = current.paths() or ["x"]
        name, args, kwargs = data.draw(update_call(data.draw(st.sampled_from(existing)),
                                                   existing))
        state = (current.to_dict(), len(update.operations))
        try:
            getattr(update, name)(*args, **kwargs)
        except EvoError:
            COUNTS["update call rejected"] += 1
            assert (update.apply().to_dict(), len(update.operations)) == state, (name, args)
            continue
        except Exception as exc:  # pragma: no cover - the failure being looked for
            raise AssertionError(f"{type(exc).__name__} from {name}{args}{kwargs}") from exc
        try:
            current = update.apply()
            update.preview()
        except EvoError:
            COUNTS["update rejected at apply"] += 1
            current = Schema.from_dict(state[0])
            update = SchemaUpdate(current, allow_set_not_null=True)
            continue
        except Exception as exc:  # pragma: no cover
            raise AssertionError(f"{type(exc).__name__} applying {name}{args}{kwargs}") from exc
        COUNTS["update call accepted"] += 1


def test_zz_report_fuzz_counts() -> None:
    print("fuzz figures:", dict(sorted(COUNTS.items())))
