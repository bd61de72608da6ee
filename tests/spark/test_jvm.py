"""evonb's JVM classes (:mod:`evonb.spark.jvm`): compiled on first use into a jar in the cache
folder, added to a new session's ``spark.jars``; without ``javac`` there is no jar and the
settings stay as they are; the shared session loads the classes."""

from __future__ import annotations

import logging
import zipfile

import pytest

from evonb.spark import jvm
from evonb.spark.block_scan import BLOCK_FORMAT
from evonb.spark.position_source import SOURCE


def test_the_jar_is_compiled_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVONB_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_built", {})
    assert jvm.jar(build=False) is None  # not in this cache yet
    jar = jvm.jar()
    assert jar is not None and jar.parent == tmp_path / "cache"
    with zipfile.ZipFile(jar) as z:
        names = z.namelist()
    assert "org/evonb/spark/PositionFilteredParquet.class" in names
    assert "org/evonb/spark/LogBlockAvro.class" in names
    settings = jvm.with_jar({"spark.jars": "/x/other.jar", "k": "v"})
    assert settings == {"spark.jars": f"/x/other.jar,{jar}", "k": "v"}


def test_without_javac_there_is_no_jar_and_reads_fall_back(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("EVONB_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(jvm, "_built", {})
    with caplog.at_level(logging.INFO, logger=jvm.__name__):
        assert jvm.jar() is None
    assert "no javac" in caplog.text
    assert jvm.with_jar({"k": "v"}) == {"k": "v"}
    assert not (tmp_path / "cache").exists()


def test_the_sources_are_the_java_files_of_both_classes():
    found = jvm.sources()
    assert found == sorted(found) == sorted(jvm.JAVA_DIR.rglob("*.java"))
    assert {"PositionFilteredParquet.java", "LogBlockAvro.java"} <= {p.name for p in found}


@pytest.mark.spark
def test_the_shared_session_loads_both_classes_and_no_other(spark):
    assert jvm.loadable(spark, SOURCE)
    assert jvm.loadable(spark, BLOCK_FORMAT)
    assert not jvm.loadable(spark, "org.evonb.spark.NoSuchClass")
