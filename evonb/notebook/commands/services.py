"""``compact``, ``rewrite``, ``clean`` and ``rollback``: table services with a progress bar."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from evonb.notebook import html as H
from evonb.notebook.args import parse_args, resolve_ref
from evonb.notebook.widgets.progress import JobProgress

if TYPE_CHECKING:  # pragma: no cover
    from evonb.notebook.context import Context
    from evonb.table.table import Table

USAGES = {
    "compact": "%evo compact <table> [--option value ...]",
    "rewrite": "%evo rewrite <table> [--option value ...]",
    "clean": "%evo clean <table> [--option value ...]",
    "rollback": "%evo rollback <table> [to] <commit> [--option value ...]",
}
VERBS = {"compact": "compacting", "rewrite": "rewriting", "clean": "cleaning",
         "rollback": "rolling back"}


@dataclass
class ServiceResult:
    """What a table service returned, with the table's latest commit after it."""

    service: str
    table: Table
    result: Any
    seconds: float

    def _summary(self) -> str:
        last = self.table.timeline.last_completed()
        return (f"{self.service} {self.table.name}: done in {self.seconds:.1f} s; latest commit "
                f"{last.instant if last else '-'}")

    def _repr_html_(self) -> str:
        body = ""
        if self.result is not None:
            rich = getattr(self.result, "_repr_html_", None)
            body = rich() if callable(rich) else f"<pre>{H.e(self.result)}</pre>"
        return f'<div class="evonb-service">{H.note_html(self._summary(), "ok")}{body}</div>'

    def __repr__(self) -> str:
        return self._summary() + ("" if self.result is None else f"\n{self.result!r}")


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
    from evonb.table.table import Table

    usage = USAGES[name]
    service_method(Table, name)
    clauses = ("to",) if name == "rollback" else ()
    args = parse_args(text, usage=usage, clauses=clauses, any_options=True)
    table = ctx.open(args.table(usage))
    positional: list[Any] = []
    if name == "rollback":
        ref = args.clauses.get("to") or (args.positional[1] if len(args.positional) > 1 else None)
        if ref is None:
            raise UsageError(f"Name the commit to roll back to. Usage: {usage}")
        positional.append(resolve_ref(table, ref))
        extra = args.positional[2:] if "to" not in args.clauses else args.positional[1:]
    else:
        extra = args.positional[1:]
    if extra:
        raise UsageError(f"Unexpected words: {' '.join(extra)!r}. Usage: {usage}")
    method = getattr(table, name)
    try:
        inspect.signature(method).bind(*positional, **args.options)
    except TypeError as exc:
        raise UsageError(f"Table.{name}{inspect.signature(method)}: {exc}") from None
    except ValueError:  # pragma: no cover - no signature to check
        pass
    started = time.monotonic()
    with JobProgress(table.spark, f"{VERBS[name]} {table.name}"):
        result = method(*positional, **args.options)
    return ServiceResult(name, ctx.open(args.table(usage)), result,
                         time.monotonic() - started)


def compact(ctx: Context, text: str) -> ServiceResult:
    """Compact small files (``Table.compact``)."""
    return run_service(ctx, "compact", text)


def rewrite(ctx: Context, text: str) -> ServiceResult:
    """Rewrite data files in the latest schema (``Table.rewrite``)."""
    return run_service(ctx, "rewrite", text)


def clean(ctx: Context, text: str) -> ServiceResult:
    """Remove files no commit needs any more (``Table.clean``)."""
    return run_service(ctx, "clean", text)


def rollback(ctx: Context, text: str) -> ServiceResult:
    """Roll the table back to a commit (``Table.rollback``)."""
    return run_service(ctx, "rollback", text)
