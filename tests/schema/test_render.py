"""Text, HTML and DDL forms of schemas and schema diffs."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import replace
from html.parser import HTMLParser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evonb.schema.diffing import diff
from evonb.schema.render import (
    diff_to_html,
    diff_to_text,
    quote_identifier,
    schema_to_ddl,
    schema_to_html,
    schema_to_text,
    type_ddl,
)
from evonb.schema.schema import Schema, walk
from evonb.schema.types import (
    BIGINT,
    BINARY,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
)
from evonb.sql import ddl_to_update

try:  # shared strategies (tests/schema/strategies.py), imported as a package or from its folder
    from tests.schema.strategies import schemas
except ImportError:  # pragma: no cover - depends on how pytest puts tests on sys.path
    from strategies import schemas  # type: ignore[no-redef]

ODD = 'a<b> & "q" \'s\' ü'


def sample() -> Schema:
    return Schema(
        fields=(
            NestedField(1, "id", BIGINT, False, comment="the key"),
            NestedField(2, "name", STRING, default="x", write_default="y"),
            NestedField(3, "loc", StructType((
                NestedField(4, "lat", DOUBLE, False, default=0.0, write_default=0.0,
                            comment="latitude"),
                NestedField(5, "lon", DOUBLE),
            ))),
            NestedField(6, "tags", ArrayType(NestedField(7, "element", STRING, False))),
            NestedField(8, "odd name", MapType(
                NestedField(9, "key", STRING, False),
                NestedField(10, "value", StructType((NestedField(11, "a", INT),))),
            )),
            NestedField(12, ODD, INT),
        ),
        version_id="20240101000000000",
        max_column_id=14,
    )


class _Checker(HTMLParser):
    """Collects text and checks that every opened tag is closed in order."""

    VOID = frozenset({"br", "hr", "img", "meta", "col", "wbr", "input"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.append(dict(attrs))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(markup: str) -> _Checker:
    checker = _Checker()
    checker.feed(markup)
    checker.close()
    assert checker.stack == [], f"unclosed tags: {checker.stack}"
    assert "script" not in checker.tags
    assert "style" not in checker.tags  # inline style attributes only
    return checker


# ------------------------------------------------------------------------------------ text
def test_schema_to_text() -> None:
    assert schema_to_text(sample()) == "\n".join([
        "schema 20240101000000000 (max column id 14)",
        "  1: id: required bigint (the key)",
        "  2: name: optional string default 'x' write-default 'y'",
        "  3: loc: optional struct",
        "    4: lat: required double default 0.0 (latitude)",
        "    5: lon: optional double",
        "  6: tags: optional array",
        "    7: element: required string",
        "  8: `odd name`: optional map",
        "    9: key: required string",
        "    10: value: optional struct",
        "      11: a: optional int",
        "  12: `a<b> & \"q\" 's' ü`: optional int",
    ])
    assert str(sample()) == schema_to_text(sample())


def test_text_of_empty_schema_and_odd_values() -> None:
    assert schema_to_text(Schema()) == "schema 00000000000000000 (max column id 0)"
    s = Schema(fields=(
        NestedField(1, "d", DATE, default=dt.date(2024, 1, 31)),
        NestedField(2, "m", DecimalType(5, 2), default=decimal.Decimal("1.50")),
        NestedField(3, "b", BINARY, write_default=b"\x01\xff"),
        NestedField(4, "über", STRING, comment="line\nbreak"),
    ))
    assert schema_to_text(s).splitlines()[1:] == [
        "  1: d: optional date default 2024-01-31",
        "  2: m: optional decimal(5,2) default 1.50",
        "  3: b: optional binary write-default X'01FF'",
        "  4: über: optional string (line\\nbreak)",
    ]


# ------------------------------------------------------------------------------------- DDL
def test_schema_to_ddl() -> None:
    assert schema_to_ddl(sample()) == (
        "id bigint NOT NULL COMMENT 'the key', "
        "name string DEFAULT 'y', "
        "loc struct<lat:double NOT NULL COMMENT 'latitude',lon:double>, "
        "tags array<string>, "
        "`odd name` map<string,struct<a:int>>, "
        "`a<b> & \"q\" 's' ü` int"
    )
    assert sample().to_ddl() == schema_to_ddl(sample())


def test_ddl_uses_the_write_default_only() -> None:
    s = Schema(fields=(
        NestedField(1, "a", INT, default=1, write_default=2),
        NestedField(2, "b", INT, default=1),  # a read default alone is not expressible
        NestedField(3, "c", TIMESTAMP, False, write_default=dt.datetime(2024, 1, 2, 3, 4, 5)),
    ))
    assert schema_to_ddl(s) == (
        "a int DEFAULT 2, b int, c timestamp NOT NULL DEFAULT TIMESTAMP '2024-01-02 03:04:05'"
    )


def test_ddl_quoting_and_escaping() -> None:
    assert quote_identifier("plain_1") == "plain_1"
    assert quote_identifier("1st") == "`1st`"
    assert quote_identifier("select") == "`select`"
    assert quote_identifier("tick`s") == "`tick``s`"
    assert quote_identifier("dotted.name") == "`dotted.name`"
    assert quote_identifier("ü") == "`ü`"
    s = Schema(fields=(NestedField(1, "c", STRING, write_default="it's\n", comment="a\\b 'q'"),))
    assert schema_to_ddl(s) == "c string DEFAULT 'it\\'s\\n' COMMENT 'a\\\\b \\'q\\''"
    nested = StructType((NestedField(1, "x y", ArrayType(NestedField(2, "element", DOUBLE))),
                         NestedField(3, "m", MapType(NestedField(4, "key", INT, False),
                                                     NestedField(5, "value", DATE)))))
    assert type_ddl(nested) == "struct<`x y`:array<double>,m:map<int,date>>"


def test_ddl_reads_back() -> None:
    s = sample()
    back = Schema.from_ddl(schema_to_ddl(s))
    assert [f.name for f in back.fields] == [f.name for f in s.fields]
    assert schema_to_ddl(back) == schema_to_ddl(s)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_ddl_is_a_fixed_point_of_reading_back(data: st.DataObject) -> None:
    """IDs, read defaults, nested defaults and element nullability are not DDL; the rest is."""
    with decimal.localcontext(prec=80):  # strategies.py builds up to 38-digit decimals
        s = data.draw(schemas(max_depth=2, max_fields=5), label="schema")
    ddl = schema_to_ddl(s)
    back = Schema.from_ddl(ddl)
    assert schema_to_ddl(back) == ddl
    assert [f.name for f in back.fields] == [f.name for f in s.fields]


# ------------------------------------------------------------------------------------ HTML
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_html_of_random_schemas_is_well_formed(data: st.DataObject) -> None:
    with decimal.localcontext(prec=80):
        s = data.draw(schemas(max_depth=2, max_fields=5), label="schema")
    text = "".join(parse_html(schema_to_html(s)).text)
    for info in walk(s.fields):
        assert info.field.name in text
    t = replace(s, fields=s.fields[::-1])
    after_text = "".join(parse_html(diff_to_html(diff(s, t))).text)
    assert all(f.name in after_text for f in s.fields)


def test_schema_to_html_escapes_and_lists_every_field() -> None:
    markup = schema_to_html(sample())
    checker = parse_html(markup)
    text = "".join(checker.text)
    assert ODD in text  # round-trips through the parser: escaped, not interpreted
    assert "<b> &" not in markup
    assert "a&lt;b&gt; &amp; &quot;q&quot;" in markup
    cells = [t.strip() for t in checker.text]
    for fid in range(1, 13):
        assert str(fid) in cells
    for needle in ("bigint", "struct", "array", "map", "required", "optional", "latitude",
                   "'x'", "write: 'y'", "max column id 14", "20240101000000000"):
        assert needle in text
    assert sample()._repr_html_() == markup


def test_schema_to_html_empty() -> None:
    assert "no columns" in "".join(parse_html(schema_to_html(Schema())).text)


def _changed() -> tuple[Schema, Schema]:
    s = sample()
    f = s.fields
    loc = f[2]
    lat, lon = loc.type.fields
    t = replace(
        s,
        version_id="20240102000000000",
        fields=(
            f[0].replace(type=BIGINT, comment="primary key"),
            f[1].replace(name="full_name", nullable=False),
            loc.replace(type=StructType((lat.replace(write_default=1.5), lon))),
            f[5].replace(name=ODD + "2"),
            f[4],
            NestedField(13, "new <col>", StructType((NestedField(14, "inner", INT),))),
        ),
    )
    return s, t


def test_diff_to_text_is_the_repr() -> None:
    s, t = _changed()
    d = diff(s, t)
    assert diff_to_text(d) == repr(d) == str(d)
    assert diff_to_text(d).splitlines() == [
        "SchemaDiff 20240101000000000 -> 20240102000000000: 8 changes",
        "  added    13: new <col> (struct<inner:int>)",
        "  dropped  6: tags (array<string>)",
        "  renamed  2: name -> full_name",
        f"  renamed  12: {ODD} -> {ODD}2",
        f"  moved    12: {ODD}2: position 5 -> 3",
        "  nullability 2: full_name: optional -> required",
        "  default  4: loc.lat: write-default 0.0 -> 1.5",
        "  comment  1: id: 'the key' -> 'primary key'",
    ]


def test_diff_html_side_by_side_marks_and_escaping() -> None:
    s, t = _changed()
    d = diff(s, t)
    markup = d._repr_html_()
    assert markup == diff_to_html(d)
    checker = parse_html(markup)
    text = "".join(checker.text)
    # both trees list every field with its ID; the change list names each change's field
    ids = [a["data-field-id"] for a in checker.attrs if a.get("class") == "evonb-field"]
    before_ids = {str(i) for i in s.field_ids()}
    after_ids = {str(i) for i in t.field_ids()}
    assert sorted(ids) == sorted([*map(str, s.field_ids()), *map(str, t.field_ids())])
    assert before_ids <= set(ids) and after_ids <= set(ids)
    listed = [a["data-field-id"] for a in checker.attrs if a.get("class") == "evonb-change"]
    assert listed == ["13", "6", "2", "12", "12", "2", "4", "1"]
    # names are escaped in the markup and come back intact as text
    assert ODD in text and ODD + "2" in text and "new <col>" in text
    assert "<col>" not in markup and "new &lt;col&gt;" in markup
    # marks: + for added (and its child), - for dropped (and its child), badges with old values
    rows = re.findall(r'data-field-id="(\d+)"[^>]*><span[^>]*>(.)</span>', markup)
    marks = {}
    for fid, mark in rows:
        marks.setdefault(fid, []).append(mark)
    assert marks["13"] == ["+"] and marks["14"] == ["+"]
    assert marks["6"] == ["-"] and marks["7"] == ["-"]
    assert marks["2"] == ["~", "~"]
    assert marks["11"] == [" ", " "]
    for badge in ("renamed (was name)", f"renamed (was {ODD})", "nullability (was optional)",
                  "default (was 0.0)", "comment (was 'the key')", "moved (was #5)", "added",
                  "dropped", "8 changes", "1 added", "2 renamed"):
        assert badge in text, badge
    assert "rgba(40,167,69" in markup and "rgba(220,53,69" in markup


def test_diff_html_without_changes() -> None:
    s = sample()
    d = diff(s, s)
    text = "".join(parse_html(d._repr_html_()).text)
    assert "no changes" in text
    assert "+" not in text.replace("+0", "")


def test_diff_html_move_to_another_parent_names_the_old_parent() -> None:
    s = Schema(fields=(
        NestedField(1, "a", INT),
        NestedField(2, "s", StructType((NestedField(3, "b", INT),))),
    ))
    t = replace(s, fields=(NestedField(2, "s", StructType((NestedField(3, "b", INT),
                                                             NestedField(1, "a", INT)))),))
    text = "".join(parse_html(diff_to_html(diff(s, t))).text)
    assert "moved (was #0 in top level)" in text


def test_a_nested_move_names_the_field_the_alter_moved() -> None:
    s = Schema.from_ddl("id int, s struct<aa: int, n: int>, x int")
    after = ddl_to_update(s, "ALTER TABLE t ALTER COLUMN s.aa AFTER n").preview()
    assert diff_to_text(after).splitlines()[1:] == ["  moved    3: s.aa: position 0 -> 1"]
    first = ddl_to_update(s, "ALTER TABLE t ALTER COLUMN s.n FIRST").preview()
    assert diff_to_text(first).splitlines()[1:] == ["  moved    4: s.n: position 1 -> 0"]
    top = ddl_to_update(s, "ALTER TABLE t ALTER COLUMN id AFTER s").preview()
    assert diff_to_text(top).splitlines()[1:] == ["  moved    1: id: position 0 -> 1"]
    assert "moved (was #0)" in diff_to_html(after)
