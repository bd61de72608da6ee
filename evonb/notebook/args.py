"""Parsing the words after a subcommand: positionals, clauses (``as of X``) and ``--options``."""

from __future__ import annotations

import ast
import difflib
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from evonb.arguments import SPARK_INT_MAX, finite_number, whole_number
from evonb.table.refs import expand_ref

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table


@dataclass
class Args:
    """The parsed words: positionals in order, clause values and option values by name."""

    positional: list[str] = field(default_factory=list)
    clauses: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def table(self, usage: str) -> str:
        """The first positional (the table name); a UsageError showing ``usage`` if missing."""
        if not self.positional:
            raise UsageError(f"Missing table name. Usage: {usage}")
        return self.positional[0]


def split_words(text: str) -> list[str]:
    """Shell-like words: quotes group words and are removed (``'2026-11-22 10:15'``)."""
    try:
        return shlex.split(text, posix=True)
    except ValueError as exc:
        raise UsageError(f"Cannot read the arguments ({exc}): {text.strip()}") from None


def parse_args(
    text: str | Sequence[str],
    *,
    usage: str,
    clauses: Sequence[str] = (),
    options: Mapping[str, Callable[[str], Any]] | None = None,
    flags: Sequence[str] = (),
    any_options: bool = False,
    max_positional: int | None = None,
) -> Args:
    """Parse ``text``. ``clauses`` are keyword phrases taking one value (``"as of"``);
    ``options`` map ``--name`` to a converter; ``flags`` are ``--name`` without value;
    ``any_options`` accepts every ``--name [value]`` (values read as Python literals)."""
    words = split_words(text) if isinstance(text, str) else list(text)
    options = dict(options or {})
    phrases = sorted((c.split() for c in clauses), key=len, reverse=True)
    out = Args()
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            key = name.replace("-", "_")
            if name in flags or key in flags:
                if eq:
                    raise UsageError(f"--{name} takes no value. Usage: {usage}")
                out.options[key] = True
                i += 1
                continue
            if name not in options and key not in options and not any_options:
                known = [f"--{o}" for o in [*options, *flags]]
                close = difflib.get_close_matches(f"--{name}", known, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise UsageError(f"Unknown option --{name}{hint}. Usage: {usage}")
            if not eq:
                nxt = words[i + 1] if i + 1 < len(words) else None
                if nxt is None or (nxt.startswith("--") and len(nxt) > 2):
                    if any_options:
                        out.options[key] = True
                        i += 1
                        continue
                    raise UsageError(f"--{name} needs a value. Usage: {usage}")
                value = nxt
                i += 1
            convert = options.get(name) or options.get(key) or literal
            try:
                out.options[key] = convert(value)
            except (TypeError, ValueError):
                raise UsageError(f"Bad value for --{name}: {value!r}. Usage: {usage}") from None
            i += 1
            continue
        matched = _match_phrase(words, i, phrases)
        if matched is not None:
            name = " ".join(matched)
            if i + len(matched) >= len(words):
                raise UsageError(f"'{name}' needs a value. Usage: {usage}")
            if name in out.clauses:
                raise UsageError(f"'{name}' given twice. Usage: {usage}")
            out.clauses[name] = words[i + len(matched)]
            i += len(matched) + 1
            continue
        out.positional.append(word)
        i += 1
    if max_positional is not None and len(out.positional) > max_positional:
        extra = " ".join(out.positional[max_positional:])
        raise UsageError(f"Unexpected words: {extra!r}. Usage: {usage}")
    return out


def _match_phrase(words: list[str], i: int, phrases: list[list[str]]) -> list[str] | None:
    for phrase in phrases:
        chunk = [w.lower() for w in words[i : i + len(phrase)]]
        if chunk == phrase:
            return phrase
    return None


def literal(value: str) -> Any:
    """A Python literal if ``value`` is one (``3``, ``True``, ``'x'``), else the text itself."""
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def positive_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise ValueError(value)
    return number


def whole(option: str, minimum: int | None = 0, maximum: int | None = None
          ) -> Callable[[str], int]:
    """The converter of a ``--option`` taking a whole number in ``[minimum, maximum]``: an
    :class:`~evonb.errors.InvalidArgumentError` naming the option and the range otherwise."""
    return lambda value: whole_number(f"--{option}", value, minimum=minimum, maximum=maximum)


def number(option: str, minimum: float | None = 0, maximum: float | None = None
           ) -> Callable[[str], float]:
    """The converter of a ``--option`` taking a finite number in ``[minimum, maximum]``."""
    return lambda value: finite_number(f"--{option}", value, minimum=minimum, maximum=maximum)


limit = whole("limit", 0, SPARK_INT_MAX)
"""The converter of ``--limit``: a row count Spark takes (a Java ``int``)."""


def identifier(value: str) -> str:
    if not value.isidentifier():
        raise ValueError(value)
    return value


def resolve_ref(table: Table, ref: str) -> str:
    """A commit reference as the library takes it (:mod:`evonb.table.refs`, the one parser):
    ``@N`` becomes the instant of the N-th commit of the history (``@0`` the first, ``@-1`` the
    latest); ``latest``, instants, date-times and schema version ids are passed on as text."""
    return str(expand_ref(ref, table.timeline.completed(), table_name=table.name,
                          keep_latest=True))
