"""Zoned timestamps in previews: the Arrow reader's rows show in Spark's session time zone,
as Spark's do, so ``%evo read`` renders the same text with either engine in any zone (across
daylight-saving changes too); without a running session, the zone the notebook configured
(``Evo.spark_conf``) is used, and no Spark starts."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import evonb
from evonb.notebook.preview import time_zone

pytestmark = pytest.mark.spark

# Around New York's spring-forward (01:59:59 EST, then 03:00 EDT) and fall-back (01:30 twice)
# and an instant Kolkata shows with a half-hour offset.
INSTANTS = [datetime(2024, 3, 10, 6, 59, 59, 500000, tzinfo=UTC),
            datetime(2024, 3, 10, 7, 0, tzinfo=UTC),
            datetime(2024, 11, 3, 5, 30, tzinfo=UTC),
            datetime(2024, 11, 3, 6, 30, tzinfo=UTC),
            datetime(2024, 12, 31, 20, 0, tzinfo=UTC)]
ZONES = ["America/New_York", "Asia/Kolkata"]


@pytest.fixture
def stamped(spark: Any, warehouse: Path) -> Any:
    cols = "id bigint not null, at timestamp, info struct<seen:timestamp,n:int>"
    t = evonb.create_table(warehouse / "t", cols, primary_key="id")
    rows = [(i, at, (at, i)) for i, at in enumerate(INSTANTS)] + [(9, None, None)]
    t.write(spark.createDataFrame(rows, cols), "upsert")
    return t


def _wall(at: datetime, zone: str) -> datetime:
    return at.astimezone(ZoneInfo(zone)).replace(tzinfo=None)


@pytest.mark.parametrize("zone", ZONES)
def test_both_engines_show_the_session_zone(ip: Any, evo: Any, spark: Any, stamped: Any,
                                            zone: str) -> None:
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        assert time_zone() == zone
        shown = {}
        for engine in ("arrow", "spark"):
            ip.run_line_magic("config", f"Evo.engine = {engine!r}")
            shown[engine] = evo("read t")
        arrow, spark_preview = shown["arrow"], shown["spark"]
        assert repr(arrow) == repr(spark_preview)
        assert arrow._repr_html_() == spark_preview._repr_html_()
        walls = [_wall(at, zone) for at in INSTANTS]
        assert [t.to_pydatetime() for t in arrow.pandas["at"][:5]] == walls
        assert str(arrow.shown()["at"][5]) == "NULL"
        assert arrow.pandas["info"][0]["seen"] == INSTANTS[0]  # the same instant, zoned
        assert str(arrow.pandas["info"][0]["seen"].tzinfo) == zone
        if zone == "America/New_York":  # both sides of each change, as the clock showed them
            assert [w.strftime("%H:%M:%S") for w in walls[:4]] == [
                "01:59:59", "03:00:00", "01:30:00", "01:30:00"]
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert time_zone() == "UTC"


def test_without_spark_the_configured_zone_is_used(ip: Any, evo: Any, spark: Any,
                                                   stamped: Any, warehouse: Path) -> None:
    script = f"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.extension_manager.load_extension("evonb")
shell.run_line_magic("config", "Evo.warehouse = {str(warehouse)!r}")
shell.run_line_magic("config",
                     "Evo.spark_conf = {{'spark.sql.session.timeZone': 'Asia/Kolkata'}}")
preview = shell.run_line_magic("evo", "read t")
from evonb.spark import session
print(json.dumps({{"text": repr(preview), "spark": session.is_running()}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["spark"] is False
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        ip.run_line_magic("config", "Evo.engine = 'spark'")
        assert out["text"] == repr(evo("read t"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert "2024-03-10 12:29:59.500" in out["text"]  # 06:59:59.5 UTC in Kolkata (+05:30)


def test_spark_offset_zones_are_named_as_pyarrow_names_them(spark: Any) -> None:
    try:
        for given, named in [("GMT+05:30", "+05:30"), ("-08:00", "-08:00"), ("Z", "UTC"),
                             ("UTC+9", "+09:00")]:
            spark.conf.set("spark.sql.session.timeZone", given)
            assert time_zone() == named
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
