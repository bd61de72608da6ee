"""``compact``, ``cluster``, ``rewrite``, ``clean`` and ``rollback``: table services with a
progress bar."""

from __future__ import annotations

import inspect
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

import evonb.notebook.html as H
from evonb.api import Table
from evonb.notebook.args import number, parse_args, resolve_ref, whole
from evonb.notebook.widgets.progress import JobProgress
from evonb.sql import parse_ddl

if TYPE_CHECKING:  # pragma: no cover
    from evonb.api import Table
    from evonb.notebook.context import Context

USAGES = {
    "compact": "%evo compact <table> [--upgrade-schema false]",
    "cluster": "%evo cluster <table> [by (a, b) [zorder]] [--target-file-mb n] [--where "
               "\"<predicate over partition columns>\"]",
    "rewrite": ("%evo rewrite [--on-cast-error null] alter table <name> alter column <c> type <t>"
                "   or   %evo rewrite <table> --purge-dropped"),
    "clean": "%evo clean <table> [--retain-commits n] [--retain-hours h] "
             "[--keep-schema-versions n]",
    "rollback": "%evo rollback <table> [<commit>] [--cascade]   (undo the latest commit, or "
                "<commit> and, with --cascade, the commits after it)",
}
VERBS = {"compact": "compacting", "cluster": "clustering", "rewrite": "rewriting",
         "clean": "cleaning", "rollback": "rolling back"}
_ALTER = re.compile(r"(?<![\w-])alter\s+table\s", re.IGNORECASE)
FLAGS = {"rewrite": ("purge_dropped",), "rollback": ("cascade",)}
_NUMBERS = {"cluster": {"target-file-mb": number("target-file-mb", 0)},
            "clean": {"retain-commits": whole("retain-commits", 1),
                      "retain-hours": number("retain-hours", 0),
                      "keep-schema-versions": whole("keep-schema-versions", 1)}}
_BY = re.compile(r"(?<![\w-])by\s*(\(([^)]*)\)|([\w.`]+))(\s+zorder(?![\w-]))?",
                 re.IGNORECASE)
MIB = 1024 * 1024
OPTIONS = {service: {**checks, **{o.replace("-", "_"): c for o, c in checks.items()}}
           for service, checks in _NUMBERS.items()}
"""The numeric options of each service, checked as they are read (``--a-b`` or ``--a_b``)."""


@dataclass
class ServiceResult:
    """What a table service returned (a commit, or None when there was nothing to do)."""

    service: str
    table: Table
    result: Any
    seconds: float

    def summary(self) -> str:
        if self.result is None:
            return f"{self.service} {self.table.name}: nothing to do ({self.seconds:.1f} s)"
        return f"{self.service} {self.table.name}: done in {self.seconds:.1f} s"

    def _repr_html_(self) -> str:
        body = ""
        if self.result is not None:
            rich = getattr(self.result, "_repr_html_", None)
            body = (rich() if callable(rich)
                    else f'<pre style="margin: 2px 0;">{H.e(self.result)}</pre>')
        kind = "ok" if self.result is not None else "info"
        return f'<div class="evonb-service">{H.note_html(self.summary(), kind)}{body}</div>'

    def __repr__(self) -> str:
        return self.summary() + ("" if self.result is None else f"\n{self.result}")


def service_method(table_cls: type, name: str) -> Any:
    """``Table.<name>``, or a UsageError saying this evonb does not have it."""
    method = getattr(table_cls, name, None)
    if not callable(method):
        raise UsageError(
            f"%evo {name} is not available: this version of evonb has no Table.{name}() "
            "(the table services are not installed)")
    return method


def run_service(ctx: Context, name: str, text: str) -> ServiceResult:
    """Open the table, call ``Table.<name>(...)`` under a progress bar, return its result."""

    usage = USAGES[name]
    service_method(Table, name)
    given: dict[str, Any] = {}
    if name == "cluster":
        text, given = _cluster_words(text, usage)
    found = _ALTER.search(text) if name == "rewrite" else None
    ddl = text[found.start():].strip() if found else None
    args = parse_args(text[:found.start()] if found else text, usage=usage, any_options=True,
                      flags=FLAGS.get(name, ()), options=OPTIONS.get(name))
    positional: list[Any] = []
    if ddl:
        if args.positional:
            raise UsageError(f"Give either a table or ALTER statements. Usage: {usage}")
        tables = {s.table for s in parse_ddl(ddl)}
        if len(tables) != 1:
            raise UsageError(f"The statements must change one table. Usage: {usage}")
        table = ctx.open(tables.pop())
        positional.append(ddl)
    else:
        table = ctx.open(args.table(usage))
        extra = args.positional[1:]
        if name == "rollback" and extra:
            positional.append(resolve_ref(table, extra.pop(0)))
        if extra:
            raise UsageError(f"Unexpected words: {' '.join(extra)!r}. Usage: {usage}")
    if "target_file_mb" in args.options:
        mb = args.options.pop("target_file_mb")
        if mb <= 0:
            raise UsageError(f"--target-file-mb must be above 0, not {mb}. Usage: {usage}")
        given["target_file_bytes"] = max(1, int(mb * MIB))
    args.options.update(given)
    method = getattr(table, name)
    signature = inspect.signature(method)
    with_progress = "progress" in signature.parameters
    try:
        signature.bind(*positional, **args.options)
    except TypeError as exc:
        raise UsageError(f"{exc}. Usage: {usage}") from None
    started = time.monotonic()
    with JobProgress(table.spark_session(), f"{VERBS[name]} {table.name}") as bar:
        options = dict(args.options, progress=bar.report) if with_progress else args.options
        result = method(*positional, **options)
    return ServiceResult(name, table, result, time.monotonic() - started)


def compact(ctx: Context, text: str) -> ServiceResult:
    """Merge log blocks and rewrite files of older schema versions (``Table.compact``)."""
    return run_service(ctx, "compact", text)


def _cluster_words(text: str, usage: str) -> tuple[str, dict[str, Any]]:
    """``text`` without its ``by (a, b)`` clause, and the columns it names (``by``)."""
    found = _BY.search(text)
    if found is None:
        return text, {}
    inner = found.group(2) if found.group(1).startswith("(") else found.group(3)
    columns = [c.strip().strip("`") for c in inner.split(",") if c.strip()]
    if not columns:
        raise UsageError(f"'by' needs at least one column. Usage: {usage}")
    given: dict[str, Any] = {"by": columns}
    if found.group(4):
        given["order"] = "zorder"
    return text[:found.start()] + " " + text[found.end():], given


def cluster(ctx: Context, text: str) -> ServiceResult:
    """Rewrite small data files into files of the target size, sorted (``Table.cluster``)."""
    return run_service(ctx, "cluster", text)


def rewrite(ctx: Context, text: str) -> ServiceResult:
    """A type change metadata cannot make, by rewriting every file (``Table.rewrite``)."""
    return run_service(ctx, "rewrite", text)


def clean(ctx: Context, text: str) -> ServiceResult:
    """Remove files no retained commit needs (``Table.clean``)."""
    return run_service(ctx, "clean", text)


def rollback(ctx: Context, text: str) -> ServiceResult:
    """Undo the latest commit, or a given one (``Table.rollback``)."""
    return run_service(ctx, "rollback", text)
