"""The model's SQL literals say what the model means: each written text, quotes and
backslashes included, reads back as itself in Spark's SQL and in evonb's lexer (statements
go through both)."""

from __future__ import annotations

import pytest

from evonb.schema.ddl_lexer import STR, tokenize
from tests.model.reference import HOSTILE_STRINGS, PLAIN_STRINGS, literal, typed_literal

TEXTS = [*PLAIN_STRINGS, *HOSTILE_STRINGS]


@pytest.mark.parametrize("text", TEXTS)
def test_evonb_lexes_the_literal_as_the_text(text: str) -> None:
    tokens = [t for t in tokenize(literal(text, "string")) if t.kind == STR]
    assert [t.value for t in tokens] == [text]


@pytest.mark.spark
def test_spark_reads_every_literal_as_its_text(spark) -> None:
    columns = ", ".join(f"{typed_literal(text, 'string')} AS c{i}" for i, text in enumerate(TEXTS))
    row = spark.sql(f"SELECT {columns}").first()
    assert list(row) == TEXTS
