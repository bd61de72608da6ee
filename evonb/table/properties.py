"""Changing table properties after creation (``ALTER TABLE ... SET/UNSET TBLPROPERTIES``).

The properties evonb reads are checked before anything is saved: the value must parse as what
the property holds (a whole number, a number, a boolean, one of a few words) and lie in its
range, and an unknown ``evonb.*`` name is refused with the closest known one. Properties of
other names are the user's own and are kept as given. A few properties are fixed once the
table exists: the record key and precombine aliases of ``CREATE TABLE ... TBLPROPERTIES``, the
lock provider (writers that still hold the old one would not exclude the new one) and the
provenance of adopted tables. The lock provider and the conflict policy are names, each a
built-in or an entry point an installed package registers (:mod:`evonb.table.plugins`); an
unknown name is refused here, when the table is created (:func:`check_plugins`) and when the
table uses it.
"""

from __future__ import annotations

import decimal
import difflib
import numbers
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evonb.errors import EvoError, InvalidArgumentError
from evonb.table.config import TableConfig, property_text
from evonb.table.conflicts import POLICY_PROPERTY, check_policy
from evonb.table.lock import LOCK_PROVIDER_PROPERTY, check_lock_provider

_Check = Callable[[TableConfig, str], object]


def _whole(minimum: int) -> _Check:
    def check(config: TableConfig, name: str) -> object:
        try:
            value = config.int_property(name)
        except EvoError as exc:
            raise EvoError(exc.message, hint=f"use a whole number of at least {minimum}"
                           ) from None
        if value < minimum:
            raise EvoError(f"Table property {name}={value} is below {minimum}",
                           hint=f"use a whole number of at least {minimum}")
        return value
    return check


def _number(minimum: float) -> _Check:
    def check(config: TableConfig, name: str) -> object:
        try:
            value = config.float_property(name)
        except EvoError as exc:
            raise EvoError(exc.message, hint=f"use a number of at least {minimum}") from None
        if value < minimum:
            raise EvoError(f"Table property {name}={value} is below {minimum}",
                           hint=f"use a number of at least {minimum}")
        return value
    return check


def _boolean(config: TableConfig, name: str) -> object:
    return config.bool_property(name)


def _word(*words: str, case: bool = False) -> Callable[[str, str], object]:
    """A check of a raw value: one of ``words``, in any case unless ``case`` (Java compares
    some option values exactly)."""
    def check(name: str, raw: str) -> object:
        word = raw.strip() if case else raw.strip().lower()
        if word not in words:
            raise EvoError(f"Table property {name}={raw!r} is not one of {', '.join(words)}",
                           hint=f"use one of {', '.join(words)}")
        return word
    return check


def _one_of(*words: str) -> _Check:
    raw_check = _word(*words)

    def check(config: TableConfig, name: str) -> object:
        return raw_check(name, config.property(name) or "")
    return check


def _text(config: TableConfig, name: str) -> object:
    value = (config.property(name) or "").strip()
    if not value:
        raise EvoError(f"Table property {name} is empty", hint="give it a value, or unset it")
    return value


PLUGINS: dict[str, Callable[..., str]] = {
    LOCK_PROVIDER_PROPERTY: check_lock_provider,
    POLICY_PROPERTY: check_policy,
}
"""The properties that name a plug-in, with the check of the name (nothing is imported)."""


def check_plugins(properties: Mapping[str, Any], *, root: Path | None = None) -> None:
    """Check the plug-in names among ``properties`` (see :data:`PLUGINS`): those of a new
    table, or those a table at ``root`` stores, before it writes anything."""
    for name, check in PLUGINS.items():
        if name in properties:
            check(str(properties[name]), root=root)


KNOWN: dict[str, _Check] = {
    "evonb.write.target.file.bytes": _whole(0),
    "evonb.write.direct_merge.bytes": _whole(0),
    "evonb.write.split_merge.bytes": _whole(0),
    "evonb.write.driver_rewrite.bytes": _whole(0),
    "evonb.write.driver_rewrite.incoming_rows": _whole(0),
    "evonb.write.add_columns": _boolean,
    "evonb.write.fill_missing": _boolean,
    "evonb.write.type_widening": _one_of("auto", "error"),
    "evonb.write.insert_duplicates": _one_of("allow", "error", "combine"),
    "evonb.mor.log_format": _one_of("avro", "parquet"),
    "evonb.mor.avro.codec": _one_of("null", "deflate", "bzip2", "snappy", "zstandard", "lz4",
                                    "xz"),
    "evonb.mor.log.positions": _boolean,
    "evonb.mor.driver_lookup.rows": _whole(0),
    "evonb.mor.driver_lookup.incoming_rows": _whole(0),
    "evonb.mor.driver_lookup.uploads": _whole(1),
    "evonb.mor.read.jvm": _boolean,
    "evonb.mor.read.jvm_filter": _boolean,
    "evonb.compaction.inline.every": _whole(0),
    "evonb.compaction.batch.groups": _whole(1),
    "evonb.compaction.target.file.bytes": _whole(1),
    "evonb.compaction.arrow.enabled": _boolean,
    "evonb.clustering.inline.every": _whole(0),
    "evonb.clustering.target.file.bytes": _whole(1),
    "evonb.clustering.sort.ids": _text,
    "evonb.clean.retain_commits": _whole(0),
    "evonb.clean.retain_hours": _number(0),
    "evonb.clean.keep_schema_versions": _whole(1),
    "evonb.rollback.pending.timeout": _number(-1),
    "evonb.lock.timeout": _number(0),
    "evonb.lock.lease": _number(0.001),
    "evonb.timeline.checkpoint.every": _whole(0),
    "evonb.timeline.archive.keep": _whole(0),
    "evonb.conflict.policy": _text,  # and a known name: PLUGINS
    "evonb.iceberg.enabled": _boolean,
}
"""The properties evonb reads, each with the check of its value."""

FREE_PREFIXES = ("evonb.write.parquet.",)
"""Prefixes of properties passed on to the writers (Parquet writer options): any option name
is accepted, and the value of an option listed in :data:`PARQUET_OPTIONS` is checked."""

_JAVA_INT = 2**31 - 1
_JAVA_LONG = 2**63 - 1
_CODECS = ("uncompressed", "none", "snappy", "gzip", "lzo", "brotli", "lz4", "lz4_raw", "zstd")


def _java_whole(maximum: int) -> Callable[[str, str], object]:
    def check(name: str, raw: str) -> object:
        text = raw.strip()
        # Java parses only plain digits: no underscores or fractions (Python's int() would
        # take "1_000").
        if not re.fullmatch(r"[+-]?[0-9]+", text) or not 1 <= int(text) <= maximum:
            raise EvoError(f"Table property {name}={raw!r} is not a whole number from 1 to "
                           f"{maximum}", hint="give the Parquet option a positive whole number")
        return int(text)
    return check


def _java_boolean(name: str, raw: str) -> object:
    if raw.strip().lower() not in ("true", "false"):
        raise EvoError(f"Table property {name}={raw!r} is not a boolean",
                       hint="use true or false")
    return raw.strip().lower() == "true"


PARQUET_OPTIONS: dict[str, Callable[[str, str], object]] = {
    "parquet.block.size": _java_whole(_JAVA_LONG),
    "parquet.page.size": _java_whole(_JAVA_INT),
    "parquet.dictionary.page.size": _java_whole(_JAVA_INT),
    "parquet.block.row.count.limit": _java_whole(_JAVA_INT),
    "parquet.page.row.count.limit": _java_whole(_JAVA_INT),
    "parquet.page.size.row.check.min": _java_whole(_JAVA_INT),
    "parquet.page.size.row.check.max": _java_whole(_JAVA_INT),
    "parquet.bloom.filter.max.bytes": _java_whole(_JAVA_INT),
    "parquet.bloom.filter.expected.ndv": _java_whole(_JAVA_LONG),
    "parquet.enable.dictionary": _java_boolean,
    "parquet.bloom.filter.enabled": _java_boolean,
    "parquet.page.write-checksum.enabled": _java_boolean,
    "parquet.validation": _java_boolean,
    "parquet.compression": _word(*_CODECS),
    "parquet.writer.version": _word("v1", "v2", "PARQUET_1_0", "PARQUET_2_0", case=True),
}
"""The Parquet writer options whose values evonb checks, by option name (a per-column option,
``parquet.bloom.filter.enabled#col``, is checked as its option). Spark's writer would fail
on a bad number only when the first file is written, with a Java trace; evonb refuses it when
the property is set and again before a write uses it."""


def check_parquet_option(name: str, value: str) -> None:
    """Check the value of a Parquet writer property ``evonb.write.parquet.<option>``."""
    option = name[len("evonb.write."):].split("#", 1)[0]
    check = PARQUET_OPTIONS.get(option)
    if check is not None:
        check(name, str(value))


ADOPTED_PREFIX = "evonb.adopted."
"""Properties a conversion records about the table it adopted (set by evonb, never by SET)."""


def check_properties(properties: Mapping[str, Any]) -> None:
    """Check every property of a new table the way :func:`changed_config` checks a change:
    unknown ``evonb.*`` names, the values of known properties and of Parquet options."""
    for name in properties:
        if str(name).lower().startswith("evonb.") and not str(name).startswith(ADOPTED_PREFIX):
            _check_name(str(name), fixed=False)
    config = TableConfig(name="check", table_type="cow",
                         properties={str(k): str(v) for k, v in properties.items()})
    for name, value in config.properties.items():
        check = KNOWN.get(name)
        if check is not None:
            check(config, name)
        elif name.startswith(FREE_PREFIXES):
            check_parquet_option(name, value)

FIXED = {
    "primarykey": "the record key is fixed when the table is created",
    "primary_key": "the record key is fixed when the table is created",
    "precombinefield": "the precombine column is fixed when the table is created",
    "precombine": "the precombine column is fixed when the table is created",
    "evonb.lock.provider": "writers that still use the old lock would not exclude the new one",
    "evonb.adopted.source": "it records where an adopted table came from",
}
"""Properties that cannot change once the table exists, with why."""


def property_values(values: Mapping[Any, Any]) -> dict[str, str]:
    """``values`` (table properties to set) as the text stored: booleans ``true``/``false``,
    numbers (numpy's and decimals too) as written. A name that is not text or is empty, a
    value that is None (to remove a property: unset it) or not text, a number or a boolean
    raise an evonb error naming it. (What a name may be is checked by
    :func:`changed_config` and :func:`check_properties`.)"""
    out: dict[str, str] = {}
    for name, value in values.items():
        if not isinstance(name, str) or not name.strip():
            _check_name(name, fixed=False)
        if value is None:
            raise InvalidArgumentError(
                f"Table property {name} needs a value", name=name,
                hint=f"give it a value, or leave it out (on an existing table: "
                     f"UNSET TBLPROPERTIES ('{name}'))")
        if type(value).__module__ == "numpy" and hasattr(value, "item"):
            value = value.item()  # a numpy scalar: its Python value
        if not isinstance(value, str | numbers.Real | decimal.Decimal):  # bool is an int
            raise InvalidArgumentError(
                f"Table property {name} must be text, a number or a boolean, not "
                f"{type(value).__name__}", name=name, value=value,
                hint=f"pass e.g. {{'{name}': '...'}}")
        out[name] = property_text(value)
    return out


def _check_name(name: str, *, fixed: bool = True) -> None:
    if not isinstance(name, str):
        raise InvalidArgumentError(
            f"Table property names are text, not {type(name).__name__} ({name!r})",
            name="properties", value=name, hint="name each property with a str")
    if not name.strip():
        raise InvalidArgumentError(f"Table property name {name!r} is empty",
                                   name="properties", value=name, hint="name the property")
    reason = FIXED.get(name.lower()) if fixed else None
    if reason:
        raise EvoError(f"Table property {name} cannot change after the table is created: "
                       f"{reason}", hint="create a new table with it and copy the data")
    if (name.lower().startswith("evonb.") and name not in KNOWN and name not in PLUGINS
            and name not in FIXED and not name.startswith(FREE_PREFIXES)):
        close = difflib.get_close_matches(name, list(KNOWN), n=1)
        hint = (f"did you mean {close[0]}?" if close
                else "see the table properties in docs/services.md")
        raise EvoError(f"Unknown table property {name}", hint=hint)


def changed_config(config: TableConfig, set_: Mapping[str, Any] | None = None,
                   unset: tuple[str, ...] = (), *, if_exists: bool = True,
                   root: Path | None = None) -> TableConfig:
    """``config`` with properties ``set_`` (values as strings; booleans ``true``/``false``)
    and ``unset`` removed, every change checked (see the module docstring). Unsetting a
    property the table does not have is an error unless ``if_exists``. ``root``: the table's
    folder (a plug-in registered from inside it is not a known name)."""
    set_ = property_values(set_ or {})
    for name in (*set_, *unset):
        _check_name(name)
    both = sorted(set(set_) & set(unset))
    if both:
        raise EvoError(f"Table property {both[0]} is both set and unset",
                       hint="set it or unset it, not both")
    if not if_exists:
        missing = [n for n in unset if n not in config.properties]
        if missing:
            raise EvoError(f"Table property {missing[0]} is not set on this table",
                           hint="UNSET TBLPROPERTIES IF EXISTS (...) ignores missing names")
    out = config.with_properties(set_).without_properties(*unset)
    for name in set_:
        check = KNOWN.get(name)
        if check is not None:
            check(out, name)
        elif name.startswith(FREE_PREFIXES):
            check_parquet_option(name, out.properties[name])
    check_plugins({n: out.properties[n] for n in set_ if n in PLUGINS}, root=root)
    return out


def setting(config: TableConfig, name: str, default: str) -> str:
    """The checked value of the known property ``name`` (``default`` when unset): a value
    set when the table was created is checked here, before the operation that reads it."""
    if config.property(name) in (None, ""):
        return default
    return str(KNOWN[name](config, name))


__all__ = ["ADOPTED_PREFIX", "FIXED", "FREE_PREFIXES", "KNOWN", "PARQUET_OPTIONS", "PLUGINS",
           "changed_config", "check_parquet_option", "check_plugins", "check_properties",
           "property_values", "setting"]
