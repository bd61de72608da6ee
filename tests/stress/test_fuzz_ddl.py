"""Property-based fuzzing of the DDL parser, of SchemaUpdate and of the ``%evo`` magics.

- ``STATEMENTS`` random (mostly near-valid, often mutated) ALTER TABLE statements and
  ``update_schema()`` blocks against real tables: the only exceptions are evonb errors, and after
  every rejection the table's metadata (every file under ``.evo`` but the lock) is
  byte-identical to before.
- ``OPERATIONS`` random SchemaUpdate calls on random schemas in memory: only evonb errors, and a
  rejected call leaves the update exactly as it was.
- ``MAGICS`` (a twentieth of ``STATEMENTS``) ``%evo`` commands run in-process in an IPython shell,
  with random values of the numeric options (``--limit``, ``--retain-commits``,
  ``--retain-hours``, ``--keep-schema-versions``, ...: text, huge numbers, nan/inf, negatives)
  and random table names (quotes, backquotes, ``..``, ``/``, ``~``, unicode, empty, very long):
  each works or raises IPython's UsageError (evonb's magics turn their errors into one), never
  another exception or a Java trace, and nothing appears outside the warehouse.

Every run draws a fresh seed, printed with the figures and named in every failure;
``EVONB_FUZZ_SEED=<seed>`` replays a run. The inputs that found bugs are kept as fixed
regression cases in ``tests/concurrency/test_fuzz_regressions.py``. Each test fails when it ran
fewer inputs than asked for, or (from 100 inputs on) when fewer than 5% of them were accepted,
or rejected: a fuzzer that only ever hits one side tests nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shlex
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import evonb
from evonb.errors import EvoError
from evonb.schema.evolution import SchemaUpdate
from tests.concurrency.helpers import metadata_digest
from tests.schema.strategies import schemas
from tests.stress.groups import WRITERS_FUZZ_MODEL

pytestmark = [pytest.mark.stress, pytest.mark.spark, WRITERS_FUZZ_MODEL]

STATEMENTS = int(os.environ.get("EVONB_FUZZ_STATEMENTS", "2000"))
OPERATIONS = int(os.environ.get("EVONB_FUZZ_OPERATIONS", "10000"))
MAGICS = max(1, STATEMENTS // 20)
SEED = int(os.environ.get("EVONB_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
REPLAY = f"fuzz seed {SEED}: replay with EVONB_FUZZ_SEED={SEED}"
PER_TABLE = 20
PER_UPDATE = 25
PER_SHELL = 10
SETTINGS = {"deadline": None, "database": None, "derandomize": False,
            "suppress_health_check": list(HealthCheck)}
MIN_SHARE = 0.05
"""The least share of the inputs of a fuzz test that must be accepted, and rejected."""


def fuzz(examples: int, run: Any, *, shrink: bool = True) -> None:
    """Run the Hypothesis test ``run`` with ``examples`` examples from the run's seed; a
    failure names the seed. Without ``shrink`` a failing example is reported as found (for
    tests whose examples take seconds, where shrinking would take many minutes)."""
    print(REPLAY)
    phases = list(Phase) if shrink else [Phase.explicit, Phase.generate]
    test = seed(SEED)(settings(max_examples=max(1, examples), phases=phases, **SETTINGS)(run))
    try:
        test()
    except BaseException as exc:
        exc.add_note(REPLAY)
        raise


def check_counts(counts: Counter[str], accepted: str, rejected: tuple[str, ...],
                 wanted: int) -> None:
    """The run was not vacuous: ``wanted`` inputs at least, and (from 100 inputs on: the
    first example Hypothesis draws is its simplest, often all accepted) some accepted and
    some rejected."""
    print("fuzz figures:", dict(sorted(counts.items())), REPLAY)
    total = counts[accepted] + sum(counts[r] for r in rejected)
    assert total >= wanted, f"{total} inputs run, {wanted} asked for ({REPLAY})"
    if wanted < 100:
        return
    assert counts[accepted] >= MIN_SHARE * total, f"few accepted: {counts} ({REPLAY})"
    assert sum(counts[r] for r in rejected) >= MIN_SHARE * total, \
        f"few rejected: {counts} ({REPLAY})"


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


def test_fuzzed_ddl_against_a_table(spark, tmp_path_factory) -> None:
    counts: Counter[str] = Counter()

    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        t = evonb.create_table(tmp_path_factory.mktemp("fuzz") / "t", BASE, primary_key="id")
        for _ in range(PER_TABLE):
            existing = t.schema.paths()
            before = metadata_digest(t.path)
            if data.draw(st.integers(0, 4)):
                stmt = data.draw(statements(existing))
                try:
                    t.alter(stmt)
                except EvoError:
                    counts["rejected"] += 1
                    counts["ddl rejected"] += 1
                    assert metadata_digest(t.path) == before, f"{stmt!r} ({REPLAY})"
                    continue
                except Exception as exc:  # pragma: no cover - the failure being looked for
                    raise AssertionError(f"{type(exc).__name__} from DDL {stmt!r} ({REPLAY})"
                                         ) from exc
                counts["accepted"] += 1
                counts["ddl accepted"] += 1
            else:
                calls = update_calls(data.draw, existing)
                try:
                    with t.update_schema() as u:
                        for name, args, kwargs in calls:
                            getattr(u, name)(*args, **kwargs)
                except EvoError:
                    counts["rejected"] += 1
                    counts["update_schema rejected"] += 1
                    assert metadata_digest(t.path) == before, f"{calls!r} ({REPLAY})"
                    continue
                except Exception as exc:  # pragma: no cover
                    raise AssertionError(f"{type(exc).__name__} from {calls!r} ({REPLAY})"
                                         ) from exc
                counts["accepted"] += 1
                counts["update_schema accepted"] += 1

    examples = STATEMENTS // PER_TABLE
    fuzz(examples, run)
    check_counts(counts, "accepted", ("rejected",), max(1, examples) * PER_TABLE)


def test_fuzzed_schema_updates_in_memory() -> None:
    """A call that raises leaves the update as it was; a call accepted but invalid as a whole
    fails at ``apply()`` (validation is lazy), and the sequence goes on from the last valid
    schema."""
    from evonb.schema.schema import Schema

    counts: Counter[str] = Counter()

    @given(schema=schemas(), data=st.data())
    def run(schema: Any, data: st.DataObject) -> None:
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
                counts["update call rejected"] += 1
                assert (update.apply().to_dict(), len(update.operations)) == state, \
                    f"{name}{args}{kwargs} ({REPLAY})"
                continue
            except Exception as exc:  # pragma: no cover - the failure being looked for
                raise AssertionError(f"{type(exc).__name__} from {name}{args}{kwargs} "
                                     f"({REPLAY})") from exc
            try:
                current = update.apply()
                update.preview()
            except EvoError:
                counts["update rejected at apply"] += 1
                current = Schema.from_dict(state[0])
                update = SchemaUpdate(current, allow_set_not_null=True)
                continue
            except Exception as exc:  # pragma: no cover
                raise AssertionError(f"{type(exc).__name__} applying {name}{args}{kwargs} "
                                     f"({REPLAY})") from exc
            counts["update call accepted"] += 1

    examples = OPERATIONS // PER_UPDATE
    fuzz(examples, run)
    check_counts(counts, "update call accepted",
                 ("update call rejected", "update rejected at apply"),
                 max(1, examples) * PER_UPDATE)


# ---------------------------------------------------------------------- %evo magics
NUMBERS = ["0", "1", "2", "-1", "-0", "1.5", "-2.5", "0.0001", "1e308", "1e400", "-1e400",
           "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "9" * 30, "-" + "9" * 30,
           "9" * 5000, "0x10", "0b11", "0o7", "1_000", "1j", "True", "false", "None", "[]",
           "[1]", "{}", "()", "'3'", '"3"', "''", "[" * 50 + "]" * 50, "(" * 300 + ")" * 300,
           "abc", "é", "💥", "--", "=", "1;2", " 3 ", "3 4", "\\", "'", '"', "`", "\x00",
           "2**64", "1/0", "__import__('os')"]
NUMBER_VALUES = st.one_of(st.sampled_from(NUMBERS), st.sampled_from(NUMBERS),
                          st.integers(-(2**70), 2**70).map(str), st.integers(0, 5).map(str),
                          st.floats().map(repr), st.text(max_size=8))
NAME_PARTS = ["t", "x", "'", '"', "`", "``", "..", "/", "~", ".", "ü", "名前", "a b", " ", "\\",
              "*", "?", ";", "--", "\t", "\n", "\x00", "é", "💥", "-", "#", "%", "CON", "nul",
              ":", "\u202e", "\ufeff"]
NAME_TEXT = st.text(st.characters(blacklist_characters="${}/~",
                                  blacklist_categories=("Cs",)), max_size=10)
ODD_TABLE_NAMES = ["", " ", ".", "..", "...", "../t", "../../t", "t/..", "t/../t", "./t", "/",
                   "/t", "~", "~t", "`t`", "`..`", "`../t`", "`.`.`t`", "t.t", "..t", "t..",
                   "a" * 300, "名" * 200, "x" * 5000, "t\x00", "T", " t", "t ", "t.`x`",
                   "`a.b`", "`t`.`..`", "t/./x", "t\\..\\x"]
OPTIONS = {"read": ["limit"], "sql": ["limit"], "compact": ["upgrade-schema"],
           "clean": ["retain-commits", "retain-hours", "keep-schema-versions"]}
COMMANDS = ["read", "read", "sql", "clean", "clean", "compact", "rollback", "describe",
            "history", "diff", "create", "alter", "rewrite"]
JAVA_TRACE = ("JVM stacktrace", "\tat org.", "\tat java.", "java.lang.", "Py4J", "py4j",
              "Traceback (most recent call last)")


def contained(name: str, root: Path) -> str:
    """``name`` with every ``/`` followed by ``root`` (and no ``~/``): whatever path a name is
    taken for, it stays inside the folder the test watches (never at ``/`` or in ``~``)."""
    return name.replace("~/", "~_/").replace("/", str(root) + "/")


@st.composite
def table_names(draw: st.DrawFn) -> str:
    """Half the time the table ``t`` (so that the options reach the command), else an odd
    name."""
    kind = draw(st.integers(0, 7))
    if kind < 4:
        return "t"
    if kind == 4:
        return draw(st.sampled_from(ODD_TABLE_NAMES))
    if kind == 5:
        return draw(NAME_TEXT)
    return "".join(draw(st.lists(st.sampled_from(NAME_PARTS), min_size=1, max_size=6)))


@st.composite
def in_line(draw: st.DrawFn, name: str) -> str:
    """``name`` as written on a magic line: as it is, in shell quotes, or in backquotes."""
    how = draw(st.integers(0, 2))
    if how == 1:
        return shlex.quote(name)
    if how == 2:
        return quote(name)
    return name


@st.composite
def option(draw: st.DrawFn, name: str) -> str:
    """``--name value`` (or ``--name=value``); a third of the values are small whole numbers,
    so that a command with several options is sometimes given only good ones."""
    value = draw(st.integers(1, 5).map(str) if draw(st.integers(0, 2)) == 0 else NUMBER_VALUES)
    how = draw(st.integers(0, 2))
    if how == 0:
        return f"--{name} {value}"
    if how == 1:
        return f"--{name}={value}"
    return f"--{name} {shlex.quote(value)}"


@st.composite
def magic_lines(draw: st.DrawFn, root: Path) -> str:
    """One ``%evo`` line: a command on the table ``t`` or on a random name, with random
    values of its options."""
    command = draw(st.sampled_from(COMMANDS))
    name = contained(draw(table_names()), root)
    target = draw(in_line(name))
    options = " ".join(draw(option(o)) for o in OPTIONS.get(command, ())
                       if draw(st.integers(0, 3)))
    if command == "sql":
        return f"sql {options} select * from {target}"
    if command == "create":
        return f"create table {draw(st.sampled_from([quote(name), name]))} (id bigint)"
    if command == "alter":
        return (f"alter table {draw(st.sampled_from([quote(name), name]))} add columns "
                f"(c{draw(st.integers(0, 9))} int)")
    if command == "rewrite":
        return f"rewrite {target} --purge-dropped"
    ref = draw(st.sampled_from(["@0", "@-1", "@1", "@99999999999", "@-99999", "@", "0"])
               | NUMBER_VALUES)
    if command == "rollback":
        return f"rollback {target} {shlex.quote(ref)}" + draw(st.sampled_from(["", " --cascade"]))
    if command == "describe":
        return f"describe {target}" + draw(st.sampled_from(["", f" as of {shlex.quote(ref)}"]))
    if command == "diff":
        return f"diff {target} {shlex.quote(ref)}"
    if command == "history":
        return f"history {target}"
    if command == "read":
        target += draw(st.sampled_from(["", f" as of {shlex.quote(ref)}", " --columns id,v",
                                        f" --columns {shlex.quote(draw(NUMBER_VALUES))}"]))
    return f"{command} {target} {options}".rstrip()


def tree(root: Path, skip: Path) -> set[str]:
    """Every file and folder under ``root`` but those under ``skip`` (relative paths)."""
    out = set()
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        if here == skip:
            dirs.clear()
            continue
        out.update((here / n).relative_to(root).as_posix() for n in [*dirs, *files])
    return out


@pytest.fixture(scope="module")
def shell() -> Any:
    """The process's IPython shell with ``%load_ext evonb`` done (as tests/notebook has it);
    the warehouse setting is put back afterwards."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("evonb")
    magics = ip.magics_manager.registry["EvoMagics"]
    warehouse = magics.evo.warehouse
    yield ip
    magics.evo.warehouse = warehouse
    magics.context.locations.clear()


def test_fuzzed_magic_options_and_table_names(spark, tmp_path_factory, shell) -> None:
    from IPython.core.error import UsageError

    magics = shell.magics_manager.registry["EvoMagics"]
    template = tmp_path_factory.mktemp("magic-template") / "t"
    t = evonb.create_table(template, "id bigint not null, v string", primary_key="id")
    t.write(spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id bigint, v string"))
    t.alter("ALTER TABLE t ADD COLUMNS (w int)")
    counts: Counter[str] = Counter()

    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        root = tmp_path_factory.mktemp("magic")
        assert "." not in str(root), root  # a dotted name must not cut the root in parts
        warehouse = root / "outer" / "warehouse"
        shutil.copytree(template, warehouse / "t")
        (root / "outer" / "sibling").mkdir()
        shell.run_line_magic("config", f"Evo.warehouse = {str(warehouse)!r}")
        magics.context.locations.clear()
        before = tree(root, warehouse)
        try:
            for _ in range(PER_SHELL):
                line = data.draw(magic_lines(root))
                out = io.StringIO()
                try:
                    with contextlib.redirect_stdout(out):
                        result = shell.run_line_magic("evo", line)
                        text = repr(result)
                        html = getattr(result, "_repr_html_", None)
                        if callable(html):
                            text += html()
                except UsageError as exc:
                    counts["rejected"] += 1
                    text = str(exc)
                except Exception as exc:  # the failure being looked for
                    raise AssertionError(f"{type(exc).__name__} from %evo {line!r}: "
                                         f"{str(exc)[:300]} ({REPLAY})") from exc
                else:
                    counts["accepted"] += 1
                    counts[f"accepted: {line.split(' ', 1)[0]}"] += 1
                for trace in JAVA_TRACE:
                    assert trace not in text + out.getvalue(), \
                        f"a Java or Python trace from %evo {line!r}: {text[:500]} ({REPLAY})"
                after = tree(root, warehouse)
                assert after == before, (f"%evo {line!r} wrote outside the warehouse: "
                                         f"{sorted(after ^ before)[:5]} ({REPLAY})")
        finally:
            shutil.rmtree(root, ignore_errors=True)

    examples = MAGICS // PER_SHELL
    fuzz(examples, run, shrink=False)
    check_counts(counts, "accepted", ("rejected",), max(1, examples) * PER_SHELL)
