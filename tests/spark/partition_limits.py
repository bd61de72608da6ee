"""Shared steps of the tests of partition values too long for their folders or object keys:
a table ``t`` (``id bigint not null, p string, v string``, keyed by ``id``, partitioned by
``p``) takes values that fit exactly, and refuses one byte more in every write mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import evonb

ROWS = "id bigint, p string, v string"


def write_fitting(spark: Any, t: Any, fits: Sequence[str]) -> None:
    """Each value of ``fits`` as the row of key = its index (inserts and upserts in turn)."""
    for key, value in enumerate(fits):
        t.write(spark.createDataFrame([(key, value, "x")], ROWS),
                mode="upsert" if key % 2 else "insert")


def refused_in_each_mode(spark: Any, t: Any, too_long: Sequence[str], match: str) -> None:
    """Each value of ``too_long`` (with a row that fits) refused by one write mode each, with
    a ``DataValidationError`` matching ``match`` and the prefix-or-hash hint; no commit."""
    commits = len(t.history())
    modes = ("insert", "upsert", "overwrite")  # one each: every mode shapes rows alike
    for (key, value), mode in zip(enumerate(too_long, start=10), modes, strict=True):
        df = spark.createDataFrame([(key, value, "x"), (0, "short", "y")], ROWS)
        with pytest.raises(evonb.errors.DataValidationError, match=match) as err:
            t.write(df, mode=mode)
        assert "prefix or a hash" in (err.value.hint or "")
    assert len(t.history()) == commits


def holds_exactly(t: Any, fits: Sequence[str]) -> None:
    """Both readers read the rows :func:`write_fitting` wrote, and only those."""
    got = sorted((r["id"], r["p"]) for r in t.to_arrow().to_pylist())
    assert got == list(enumerate(fits))
    assert sorted((r.id, r.p) for r in t.read().collect()) == got
