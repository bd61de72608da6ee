"""How a partition value is spelled in a folder name (``ts=2020-01-01 05%3A00%3A00``).

A table's files are written by Spark's partitioned writer (most writes on local disk) or by
evonb's Arrow writer (copy-on-write rewrites on the driver, every write in object storage). Both
must spell a value alike, or one partition value lands in two folders: a clustering or
compaction then treats them as two partitions, and ``cluster(where=...)`` reads a folder for a
value it does not hold. The spelling is Spark's, whatever the session's time zone:

- null, and the empty string, as :data:`NULL_FOLDER` (Hive's default partition);
- strings as they are, with Hive's characters escaped as ``%XX`` (:func:`escape`);
- integers, decimals (plain digits at the column's scale), dates and booleans as Spark casts
  them to text (a date past year 9999 as ``+164111-01-01``: spelled from its day number,
  since Python's dates stop at 9999);
- ``float`` and ``double`` as Java prints them (``1.0E20``, ``0.1``, ``NaN``, ``Infinity``),
  from the fewest digits that read back as the number. The Java that Spark runs on (17) prints
  a digit or two more for some numbers (about 2 in 100 random doubles, none with few digits,
  such as ``12.5`` or ``1.0E-4``): a partition of such a number may have two folders, one per
  writer, and still reads right;
- a ``timestamp`` (an instant) as its UTC time, ``2020-01-01 05:00:00.12`` (trailing zeros of
  the fraction dropped), and a ``timestamp_ntz`` as its wall-clock time, alike. Spark's own
  writer would name an instant in the writing session's time zone, so two instants hours apart
  could share a folder; evonb's Spark writer hands it the UTC text
  (:func:`evonb.spark.writer.write_files`).

Folders are labels: evonb reads partition values from the files, so a folder spelled otherwise
(by an older writer, or by another tool) still reads right. Pure Python: no Spark, no pyarrow.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evonb.errors import DataValidationError, InvalidArgumentError
from evonb.schema.dates import date_text, micros_text

NULL_FOLDER = "__HIVE_DEFAULT_PARTITION__"
"""The folder value of a null (and, as Spark writes it, of an empty string)."""

ESCAPED_PATTERN = r"""[\x01-\x1F"#%'*/:=?\\\x7F{\[\]^]"""
"""The characters Hive and Spark escape in a partition folder's value, as a regular expression
(Python's, Java's and RE2's syntax alike): a folder value takes ``len(utf8) + 2 * matches``
bytes."""

_ESCAPED = re.compile(ESCAPED_PATTERN)

FOLDER_NAME_BYTES = 255
"""The longest name of a folder on the usual local file systems (ext4, XFS, APFS, NTFS), in
bytes: a partition folder ``<column>=<value>`` longer than that cannot be made."""

OBJECT_KEY_BYTES = 1024
"""The longest object key S3, Google Cloud Storage and Azure Blob Storage take, in bytes
(UTF-8): a data file's key is the table's key, its partition folders and its name."""

FILE_NAME_BYTES = 128
"""The room a data file's key keeps for the name of any file evonb puts in a partition folder
(the longest, a log block's, takes under 100 bytes)."""

_OFFSET = re.compile(r"(Z|[+-]\d\d(:?\d\d)?)$")


def escape(text: str) -> str:
    """``text`` with the characters a partition folder escapes written as ``%XX`` (others,
    non-ASCII letters included, as they are)."""
    return _ESCAPED.sub(lambda found: f"%{ord(found[0]):02X}", text)


def timestamp_text(value: datetime.datetime) -> str:
    """Spark's text of a timestamp (:func:`~evonb.schema.dates.micros_text`): an aware
    ``value`` (an instant) in UTC, a naive one (a wall-clock time) as it is."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC).replace(tzinfo=None)
    return micros_text((value - _EPOCH) // _MICROSECOND)


_EPOCH = datetime.datetime(1970, 1, 1)
_MICROSECOND = datetime.timedelta(microseconds=1)


def date_folder_value(days: int | None) -> str:
    """:func:`folder_value` of a date given as its day number (None: null), over Spark's whole
    range (``+164111-01-01``)."""
    return NULL_FOLDER if days is None else escape(date_text(days))


def timestamp_folder_value(micros: int | None) -> str:
    """:func:`folder_value` of a timestamp given as its microseconds (:func:`micros_text`;
    None: null)."""
    return NULL_FOLDER if micros is None else escape(micros_text(micros))


def _as_float32(value: float) -> float:
    """``value`` rounded to a ``float`` (infinity past its range)."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _shortest_digits(value: float, single: bool) -> tuple[str, int]:
    """The fewest significant digits that read back as ``value`` (positive, finite; as a
    ``float`` when ``single``), and the power of ten of the first."""
    if single:
        for places in range(9):
            text = f"{value:.{places}e}"
            if _as_float32(float(text)) == value:
                break
    else:
        text = repr(value)
    found = decimal.Decimal(text).normalize().as_tuple()
    digits = "".join(map(str, found.digits))
    assert isinstance(found.exponent, int)
    return digits, len(digits) - 1 + found.exponent


def floating_text(value: float, single: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` when ``single``), as Spark casts a
    floating-point number to text: plain between 10^-3 and 10^7 (``100.0``, ``0.001``),
    else ``1.0E20``, ``1.25E-5``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, power = _shortest_digits(abs(value), single)
    if not 1e-3 <= abs(value) < 1e7:
        return f"{sign}{digits[0]}.{digits[1:] or '0'}E{power}"
    if power < 0:
        return f"{sign}0.{'0' * (-power - 1)}{digits}"
    whole = digits[:power + 1].ljust(power + 1, "0")
    return f"{sign}{whole}.{digits[power + 1:] or '0'}"


def folder_value(value: Any, single: bool = False) -> str:
    """The spelling of partition value ``value`` (as pyarrow's ``as_py`` gives it; ``single``:
    of a ``float`` column) in a folder name."""
    if value is None or value == "":
        return NULL_FOLDER
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = floating_text(value, single)
    elif isinstance(value, datetime.datetime):
        text = timestamp_text(value)
    elif isinstance(value, datetime.date):
        text = value.isoformat()
    elif isinstance(value, decimal.Decimal):
        text = format(value, "f")
    else:
        text = str(value)
    return escape(text)


class PartitionFolderError(DataValidationError):
    """A partition value that does not fit its folder or its object key. Raised where files
    are written, which know a column by its physical name (its first name, after a rename):
    :meth:`named` gives the same error with the names users see."""

    def __init__(self, columns: Sequence[str],
                 describe: Callable[[Sequence[str]], tuple[str, str]]) -> None:
        self.columns = tuple(columns)
        self._describe = describe
        message, hint = describe(self.columns)
        super().__init__(message, count=1, hint=hint)

    def named(self, names: Mapping[str, str]) -> PartitionFolderError:
        """This error with its columns named by ``names`` (physical name -> current name)."""
        return PartitionFolderError([names.get(c, c) for c in self.columns], self._describe)


def staged_partition_name(index: int) -> str:
    """The name Spark's writer gives the folders of partition column ``index`` (0 first) in a
    write's staging folder (the files are moved into folders of the column's own name)."""
    return f"__evo_p{index}"


def folder_room(folder_names: Sequence[str]) -> int:
    """The bytes a partition folder ``<name>=<value>`` leaves its (escaped, UTF-8) value, for
    a column whose folders take each of ``folder_names`` (staging folders included)."""
    return FOLDER_NAME_BYTES - 1 - max(len(name.encode()) for name in folder_names)


def check_folder_bytes(column: str, folder_names: Sequence[str], longest: int | None) -> None:
    """Refuse a write whose longest value of string partition column ``column`` takes
    ``longest`` bytes as a folder value, when a folder ``<name>=<value>`` (``folder_names``:
    the names its folders take, staging folders included) would be longer than
    :data:`FOLDER_NAME_BYTES`."""
    if longest is None:
        return
    room = folder_room(folder_names)
    if longest <= room:
        return

    def describe(names: Sequence[str]) -> tuple[str, str]:
        return (f"Partition column {names[0]!r} has a value of {longest} bytes in a folder "
                f"name (escaped, UTF-8), more than the {room} a partition folder leaves it (a "
                f"folder name takes at most {FOLDER_NAME_BYTES} bytes)",
                f"partition by a shorter column derived from {names[0]!r} (a prefix or a "
                "hash of it), or shorten its values before writing")

    raise PartitionFolderError([column], describe)


def key_bytes(table_key: str, folder_bytes: int) -> int:
    """The bytes of the longest key a data file in a partition folder of ``folder_bytes``
    under ``table_key`` may take (:data:`FILE_NAME_BYTES` kept for its name)."""
    return len(table_key.encode()) + 1 + folder_bytes + 1 + FILE_NAME_BYTES


def check_key_bytes(columns: Sequence[str], table_key: str, folder_bytes: int) -> None:
    """Refuse a write into object storage whose partition folder of ``folder_bytes`` (UTF-8,
    ``a=1/b=x``: of ``columns``) under the table's key ``table_key`` would make a data file's
    key longer than :data:`OBJECT_KEY_BYTES` (:func:`key_bytes`)."""
    total = key_bytes(table_key, folder_bytes)
    if total <= OBJECT_KEY_BYTES:
        return
    table_bytes = len(table_key.encode())

    def describe(names: Sequence[str]) -> tuple[str, str]:
        named = ", ".join(repr(c) for c in names)
        noun = "column" if len(names) == 1 else "columns"
        return (f"Partition {noun} {named}: a folder of {folder_bytes} bytes (escaped, UTF-8) "
                f"under the table's key of {table_bytes} bytes makes a data file's key of "
                f"{total} bytes ({FILE_NAME_BYTES} kept for its name), more than the "
                f"{OBJECT_KEY_BYTES} an object store takes",
                f"partition by a shorter column derived from {named} (a prefix or a hash), or "
                "shorten the values before writing; a table at a shorter key leaves more room")

    raise PartitionFolderError(columns, describe)


def check_partition_names(names: Sequence[str], table_key: str | None) -> None:
    """Refuse partition columns (``names``: as their folders are named) whose folders could
    not hold a null value (:data:`NULL_FOLDER`), the shortest folder every partition column
    may need: on local disk a folder name of at most :data:`FOLDER_NAME_BYTES`; in object
    storage (``table_key``: the table's key) a data file's key (:func:`check_key_bytes`)."""
    null_bytes = len(NULL_FOLDER)
    for j, name in enumerate(names if table_key is None else ()):
        if folder_room((name, staged_partition_name(j))) < null_bytes:
            raise InvalidArgumentError(
                f"Partition column {name!r} has a name of {len(name.encode())} bytes: its "
                f"folders, '<name>=<value>', would be longer than the {FOLDER_NAME_BYTES} bytes "
                f"a folder name takes, even for a null value ({NULL_FOLDER!r})",
                name="partition_by", value=name,
                hint=f"give the column a name of at most {FOLDER_NAME_BYTES - 1 - null_bytes} "
                "bytes (a later rename keeps its folders' name)")
    if table_key is not None and names:
        folder = "/".join(f"{name}={NULL_FOLDER}" for name in names)
        try:
            check_key_bytes(names, table_key, len(folder.encode()))
        except PartitionFolderError as exc:
            raise InvalidArgumentError(
                f"{exc.message}, even for null values", name="partition_by",
                value=list(names), hint="give the partition columns shorter names, or the "
                "table a shorter key") from None


def instant_text(text: str) -> str:
    """A ``timestamp`` folder value as text Spark parses to the instant it names: the UTC
    time evonb writes (``Z`` added), or a time with its own offset as it is."""
    return text if _OFFSET.search(text) else text + "Z"


__all__ = [
    "ESCAPED_PATTERN",
    "FILE_NAME_BYTES",
    "FOLDER_NAME_BYTES",
    "NULL_FOLDER",
    "OBJECT_KEY_BYTES",
    "PartitionFolderError",
    "check_folder_bytes",
    "check_key_bytes",
    "check_partition_names",
    "date_folder_value",
    "escape",
    "floating_text",
    "folder_room",
    "folder_value",
    "instant_text",
    "key_bytes",
    "staged_partition_name",
    "timestamp_folder_value",
    "timestamp_text",
]
