"""Type rules: which ``ALTER COLUMN ... TYPE`` changes are allowed, and how writes reconcile types.

``ALTER`` follows the "Y" cells of Hudi's column type-change table, plus tinyint -> smallint ->
int, date -> timestamp_ntz and decimal widening. Every narrowing is rejected (Spark would read a
narrowed column with silent overflow). Writes follow Hudi's "Type Promotions" chart: the table
widens to a wider incoming type, and narrower incoming values are cast up.
"""

from __future__ import annotations

from evonb.errors import SchemaEvolutionError, WriteSchemaError
from evonb.schema.types import (
    BIGINT,
    BINARY,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    SMALLINT,
    STRING,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TINYINT,
    DecimalType,
    PrimitiveType,
    Type,
)

# Integer digits each integral type needs in a decimal to hold every value.
_INTEGER_DIGITS = {TINYINT: 3, SMALLINT: 5, INT: 10, BIGINT: 19}

_NUMERIC_TARGETS: dict[PrimitiveType, tuple[PrimitiveType, ...]] = {
    TINYINT: (SMALLINT, INT, BIGINT, FLOAT, DOUBLE, STRING),
    SMALLINT: (INT, BIGINT, FLOAT, DOUBLE, STRING),
    INT: (BIGINT, FLOAT, DOUBLE, STRING),
    BIGINT: (FLOAT, DOUBLE, STRING),
    FLOAT: (DOUBLE, STRING),
    DOUBLE: (STRING,),
    STRING: (DATE,),
    DATE: (STRING, TIMESTAMP_NTZ),
}


def can_change_type(old: Type, new: Type) -> bool:
    """Whether ``ALTER COLUMN ... TYPE`` may change ``old`` into ``new`` in metadata only."""
    if old == new:
        return True
    if old.is_nested or new.is_nested:
        return False
    if isinstance(new, DecimalType):
        if isinstance(old, DecimalType):
            # No integer digit and no fractional digit may be lost.
            return (
                new.precision - new.scale >= old.precision - old.scale
                and new.scale >= old.scale
            )
        if old in _INTEGER_DIGITS:
            return new.precision - new.scale >= _INTEGER_DIGITS[old]
        return old in (FLOAT, DOUBLE, STRING)
    if isinstance(old, DecimalType):
        return new is STRING
    return new in _NUMERIC_TARGETS.get(old, ())  # type: ignore[arg-type]


def allowed_targets(old: Type) -> list[str]:
    """Readable list of what ``old`` may become (for error messages)."""
    if old.is_nested:
        return []
    out = [str(t) for t in _NUMERIC_TARGETS.get(old, ())]  # type: ignore[arg-type]
    if old in _INTEGER_DIGITS:
        out.append(f"decimal(p,s) with p-s >= {_INTEGER_DIGITS[old]}")
    elif isinstance(old, DecimalType):
        out = [
            "string",
            f"decimal(p,s) with p-s >= {old.precision - old.scale} and s >= {old.scale}",
        ]
    elif old in (FLOAT, DOUBLE, STRING):
        out.append("decimal(p,s)")
    return out


def check_type_change(old: Type, new: Type, *, path: str, field_id: int | None = None) -> None:
    """Raise :class:`SchemaEvolutionError` unless ``old -> new`` is allowed."""
    if can_change_type(old, new):
        return
    if old.is_nested or new.is_nested:
        reason = "nested types change through their fields, not as a whole"
        hint = "add, drop or retype the nested fields one by one"
    else:
        targets = allowed_targets(old)
        reason = "not a widening evonb can do in metadata"
        hint = (
            f"{old} can become: {', '.join(targets)}; for other changes use Table.rewrite()"
            if targets
            else f"{old} cannot change type in metadata; use Table.rewrite()"
        )
    raise SchemaEvolutionError(
        f"Cannot change column type: {path}: {old} -> {new} ({reason})",
        path=path,
        field_id=field_id,
        old=old,
        new=new,
        hint=hint,
    )


_TEMPORAL = (DATE, TIMESTAMP, TIMESTAMP_NTZ)


def casts_directly(old: Type, new: Type) -> bool:
    """Whether a read casts ``old`` values to ``new`` in one step (Spark's ``try_cast``, and
    the Arrow reader's casts as Spark's): every primitive type to and from text, numbers among
    themselves, dates and timestamps among themselves, binary only to and from text. Other
    pairs (a number read as a date, say) are cast through text: the only way the type rules
    lead from one to the other."""
    if old == new or STRING in (old, new):
        return True
    if old in _TEMPORAL or new in _TEMPORAL:
        return old in _TEMPORAL and new in _TEMPORAL
    return BINARY not in (old, new)


def is_narrowing(old: Type, new: Type) -> bool:
    """True when ``new -> old`` is an allowed widening, i.e. ``old -> new`` narrows."""
    return old != new and can_change_type(new, old)


_NUMBERS = (TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE)


def is_number(t: Type) -> bool:
    """Whether ``t`` is an integral, floating-point or decimal type."""
    return t in _NUMBERS or isinstance(t, DecimalType)


def narrows_number(old: Type, new: Type) -> bool:
    """True when ``old -> new`` is a change between number types that no metadata change
    makes (only a rewrite does): reading ``old`` values as ``new`` may lose some of them."""
    return old != new and is_number(old) and is_number(new) and not can_change_type(old, new)


def widens_on_write(old: Type, new: Type) -> bool:
    """Whether a write may turn ``old`` into ``new`` by itself: a column of ``old`` into
    ``new`` when the data brings ``new``, or data of ``old`` cast up into a ``new`` column.

    These are the changes of :func:`can_change_type` that keep every value (but for the
    chart's rounding of large integers into ``float`` or ``double``): not those that
    convert text to a date or a decimal, or a floating-point number to a decimal, which
    ``ALTER`` makes when asked (values that do not convert read null) but a write never makes
    on its own. A ``string`` column that receives dates stays ``string`` (the dates are
    written as text); a ``double`` column that receives decimals stays ``double`` (the
    decimals are cast), not a ``decimal`` column whose stored doubles read null.
    """
    if isinstance(new, DecimalType) and not isinstance(old, DecimalType) \
            and old not in _INTEGER_DIGITS:
        return False
    if old is STRING and new is not STRING:
        return False
    return can_change_type(old, new)


def reconcile_write_type(table: Type, incoming: Type, *, path: str) -> Type:
    """The table type after a write bringing ``incoming`` into a ``table`` column.

    Hudi's chart: the table widens to a wider incoming type (int table + bigint data ->
    bigint); narrower incoming data is cast up (bigint table + int data -> bigint); string and
    binary meet as the chart says (string data into binary -> binary, binary data into string ->
    string); two decimals meet in one that holds both; decimal data into a ``float`` or
    ``double`` column is cast to it. Only changes that keep the stored values count
    (:func:`widens_on_write`); anything else (binary data into an int column, floating-point
    data into a decimal column) is a :class:`WriteSchemaError`.
    """
    if table == incoming:
        return table
    if table.is_nested or incoming.is_nested:
        raise WriteSchemaError(
            f"Incompatible column type in write: {path}: table has {table}, data has {incoming}",
            path=path, old=table, new=incoming,
            hint=f"cast the data's {path} to {table}, or change the table's column first",
        )
    if table is BINARY and incoming is STRING:
        return BINARY
    if table is STRING and incoming is BINARY:
        return STRING
    if widens_on_write(table, incoming):
        return incoming
    if widens_on_write(incoming, table):
        return table
    if isinstance(table, DecimalType) and isinstance(incoming, DecimalType):
        integer = max(table.precision - table.scale, incoming.precision - incoming.scale)
        scale = max(table.scale, incoming.scale)
        if integer + scale <= 38:
            return DecimalType(integer + scale, scale)
    if isinstance(incoming, DecimalType) and table in (FLOAT, DOUBLE):
        # Spark's SQL makes decimals of literals (`id * 1.5`): cast to the column's type, as
        # Spark's INSERT casts them and as the chart rounds large integers
        return table
    raise WriteSchemaError(
        f"Incompatible column type in write: {path}: table has {table}, data has {incoming}",
        path=path,
        old=table,
        new=incoming,
        hint=f"cast the column to {table} before writing, or change the table type with "
        "ALTER COLUMN ... TYPE / Table.rewrite()",
    )
