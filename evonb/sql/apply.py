"""Turning ALTER TABLE statements into one :class:`~evonb.schema.evolution.SchemaUpdate`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from evonb.errors import EvoError, SchemaEvolutionError
from evonb.schema.evolution import SchemaUpdate
from evonb.schema.schema import Schema, format_path
from evonb.schema.types import same_shape
from evonb.sql.parser import parse_with_sources
from evonb.sql.statements import (
    AddColumns,
    AlterColumn,
    CreateTable,
    DropColumns,
    RenameColumn,
    SetProperties,
    Statement,
    UnsetProperties,
)

Parsed = Sequence[tuple[Statement, str | None]]
"""Statements each with the source text it came from (:func:`~evonb.sql.parser.
parse_with_sources`): a caller that parsed the text already passes them, not the text."""


def _with_sources(
    text_or_statements: str | Statement | Iterable[Statement] | Parsed,
) -> list[tuple[Statement, str | None]]:
    if isinstance(text_or_statements, str):
        return list(parse_with_sources(text_or_statements))
    if isinstance(text_or_statements, AddColumns | DropColumns | RenameColumn | AlterColumn
                  | CreateTable | SetProperties | UnsetProperties):
        return [(text_or_statements, None)]
    return [item if isinstance(item, tuple) else (item, None) for item in text_or_statements]


def ddl_to_update(
    schema: Schema,
    text_or_statements: str | Statement | Sequence[Statement] | Parsed,
    *,
    allow_set_not_null: bool = False,
    allow_rewrite_type_changes: bool = False,
) -> SchemaUpdate:
    """One :class:`SchemaUpdate` holding every ALTER statement of the text (or of statements
    parsed already, alone or with their sources), in order.

    Paths resolve against ``schema`` (so two renames can swap names). All statements must name
    the same table; CREATE TABLE is refused. ``SET``/``UNSET TBLPROPERTIES`` change no schema
    and are skipped here (:meth:`evonb.table.table.BaseTable.alter` applies them). The ``allow_*``
    flags are passed to :class:`SchemaUpdate` (``Table.rewrite`` allows type changes that need
    a rewrite). Errors are the schema layer's own
    (:class:`~evonb.errors.ColumnNotFoundError`, :class:`~evonb.errors.SchemaEvolutionError`,
    ...) with a note naming the statement that failed.
    """
    items = _with_sources(text_or_statements)
    update = SchemaUpdate(schema, allow_set_not_null=allow_set_not_null,
                          allow_rewrite_type_changes=allow_rewrite_type_changes)
    tables: dict[str, str] = {}
    for number, (statement, source) in enumerate(items, 1):
        try:
            if isinstance(statement, CreateTable):
                raise SchemaEvolutionError(
                    f"CREATE TABLE {statement.table} cannot change an existing schema",
                    hint="use ALTER TABLE statements, or create the table on its own",
                )
            tables.setdefault(statement.table.lower(), statement.table)
            if len(tables) > 1:
                names = ", ".join(sorted(tables.values()))
                raise SchemaEvolutionError(
                    f"The statements change more than one table ({names})",
                    hint="apply the statements of each table separately",
                )
        except EvoError as exc:
            _note(exc, number, len(items), source)
            raise
    for number, (statement, source) in enumerate(items, 1):
        try:
            _apply(update, schema, statement)
        except EvoError as exc:
            _note(exc, number, len(items), source)
            raise
    return update


def _note(exc: EvoError, number: int, count: int, source: str | None) -> None:
    """Name the failing statement on ``exc`` (shown under its message in tracebacks)."""
    where = f"statement {number} of {count}" if count > 1 else "statement"
    if source and len(source) > 200:  # a huge statement: its start and end
        source = f"{source[:140]} ... {source[-50:]}"
    exc.add_note(f"in DDL {where}" + (f": {source}" if source else ""))


def apply_ddl(schema: Schema, text: str | Statement | Sequence[Statement], *,
              allow_set_not_null: bool = False, version_id: str | None = None) -> Schema:
    """The schema after every ALTER statement of ``text``, as one new version.

    Nothing is applied if any statement fails. ``version_id`` is passed to
    :meth:`SchemaUpdate.apply` (it defaults to the base schema's).
    """
    update = ddl_to_update(schema, text, allow_set_not_null=allow_set_not_null)
    return update.apply(version_id=version_id)


def property_changes(statements: Iterable[Statement]
                     ) -> tuple[dict[str, str], tuple[str, ...], bool]:
    """What the ``SET``/``UNSET TBLPROPERTIES`` among ``statements`` do together, in order:
    the properties set, the names unset (a later statement wins over an earlier one for the
    same name), and whether every UNSET said ``IF EXISTS``."""
    to_set: dict[str, str] = {}
    to_unset: list[str] = []
    if_exists = True
    for st in statements:
        if isinstance(st, SetProperties):
            to_set.update(st.properties)
            to_unset = [n for n in to_unset if n not in st.properties]
        elif isinstance(st, UnsetProperties):
            to_unset.extend(n for n in st.names if n not in to_unset)
            for n in st.names:
                to_set.pop(n, None)
            if_exists = if_exists and st.if_exists
    return to_set, tuple(to_unset), if_exists


def _apply(update: SchemaUpdate, schema: Schema, statement: Statement) -> None:
    if isinstance(statement, AddColumns):
        for spec in statement.columns:
            pos = spec.position
            update.add_column(
                spec.path,
                spec.type,
                nullable=spec.nullable,
                default=spec.default,
                comment=spec.comment,
                first=pos is not None and pos.kind == "first",
                after=_sibling(pos.column) if pos is not None and pos.kind == "after" else None,
                before=_sibling(pos.column) if pos is not None and pos.kind == "before" else None,
            )
    elif isinstance(statement, DropColumns):
        for path in statement.paths:
            if statement.if_exists and not schema.has(path):
                continue
            update.drop_column(path)
    elif isinstance(statement, RenameColumn):
        update.rename_column(statement.path, statement.new_name)
    elif isinstance(statement, AlterColumn):
        _alter(update, schema, statement)
    elif isinstance(statement, SetProperties | UnsetProperties):
        pass  # no schema change: Table.alter applies them
    else:  # pragma: no cover - the parser makes no other kind
        raise TypeError(f"not a DDL statement: {statement!r}")


def _alter(update: SchemaUpdate, schema: Schema, s: AlterColumn) -> None:
    path = s.path
    new_type = s.new_type
    if s.new_name is not None:
        # Hive's CHANGE old new type [...]: rename only when the name changes, and retype only
        # when the type does (the type must be restated even when it stays).
        if s.new_name != path[-1]:
            update.rename_column(path, s.new_name)
        if new_type is not None and schema.has(path) and same_shape(schema.find(path).type,
                                                                    new_type):
            new_type = None
    if new_type is not None:
        update.update_column_type(path, new_type)
    if s.nullable is not None:
        update.set_nullable(path, s.nullable)
    if s.set_default:
        update.set_default(path, s.default)
    if s.drop_default:
        update.drop_default(path)
    if s.comment is not None:
        update.set_comment(path, s.comment)
    if s.position is not None:
        if s.position.kind == "first":
            update.move_first(path)
        elif s.position.kind == "after":
            update.move_after(path, _sibling(s.position.column))
        else:
            update.move_before(path, _sibling(s.position.column))


def _sibling(name: str | None) -> str:
    """A sibling's name as SchemaUpdate reads it (backquoted if it holds a dot)."""
    return format_path((name or "",))
