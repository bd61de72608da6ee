"""evonb's JVM classes: their Java source ships with evonb (``jvm/``) and is compiled on first
use against the Spark that runs it, with the JDK's ``javac``, into a jar in a cache folder
(``EVONB_JVM_CACHE``, else ``~/.cache/evonb``); a session evonb starts lists that jar in
``spark.jars``. The classes:

- ``org.evonb.spark.PositionFilteredParquet`` (:mod:`evonb.spark.position_source`): drops the
  base rows merge-on-read log blocks replace inside Spark's Parquet reader;
- ``org.evonb.spark.LogBlockAvro`` (:mod:`evonb.spark.block_scan`): decodes flat log blocks
  straight into Spark rows.

Where there is no ``javac``, or a session was started without the jar, evonb uses Spark's own
readers and expressions instead: the same rows, slower. :func:`loadable` says which a session
has. A session of your own gets the classes by listing :func:`jar` in ``spark.jars`` when it
starts::

    SparkSession.builder.config("spark.jars", str(evonb.spark.jvm.jar()))
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

JAVA_DIR = Path(__file__).with_name("jvm")
"""The Java sources."""
_log = logging.getLogger(__name__)
_lock = threading.Lock()
_built: dict[str, Path | None] = {}
_checked: dict[tuple[int, str, str], bool] = {}


def sources() -> list[Path]:
    """The Java source files, in a stable order."""
    return sorted(JAVA_DIR.rglob("*.java"))


def spark_jars() -> Path | None:
    """The folder of the jars of the Spark that PySpark runs, if there is one."""
    try:
        from pyspark.find_spark_home import _find_spark_home

        home = Path(_find_spark_home())
    except Exception:  # pragma: no cover - PySpark without a Spark home
        return None
    jars = home / "jars"
    return jars if jars.is_dir() else None


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def jar(*, build: bool = True) -> Path | None:
    """The jar of evonb's classes for this Spark, compiled if it is not in the cache yet
    (``build``), or None where it cannot be (no ``javac``, no Spark jars, a failed
    compilation: logged)."""
    jars = spark_jars()
    if jars is None:
        return None
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode())
    for f in sources():
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    key = digest.hexdigest()[:16]
    with _lock:
        if key in _built:
            return _built[key]
        cache = Path(os.environ.get("EVONB_JVM_CACHE") or Path.home() / ".cache" / "evonb")
        target = cache / f"evonb-spark-{pyspark.__version__}-{key}.jar"
        if target.exists():
            _built[key] = target
            return target
        if not build:
            return None
        javac = _javac()
        found = _compile(javac, jars, target) if javac else None
        if found is None and javac is None:
            _log.info("evonb: no javac; evonb's readers are off, Spark's own are used")
        _built[key] = found
        return found


def _compile(javac: str, jars: Path, target: Path) -> Path | None:
    """Compile the sources into ``target`` (written whole under a name of its own, then renamed
    into place, so that processes compiling at once each leave a complete jar)."""
    import zipfile

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evonb-jvm-") as tmp:
        out = Path(tmp) / "classes"
        done = subprocess.run(
            [javac, "-nowarn", "-encoding", "UTF-8", "-d", str(out),
             "-cp", str(jars / "*"), *map(str, sources())],
            capture_output=True, text=True, check=False)
        if done.returncode != 0:
            _log.warning("evonb: compiling evonb's Java sources failed; evonb's readers are "
                         "off, Spark's own are used:\n%s", done.stderr[-2000:])
            return None
        partial = Path(tmp) / target.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(out.rglob("*.class")):
                z.write(f, f.relative_to(out).as_posix())
        part = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.part")
        shutil.copyfile(partial, part)
        os.replace(part, target)
    return target


def with_jar(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` for a new session with evonb's jar added to ``spark.jars`` (as they are
    when there is no jar)."""
    out = dict(settings)
    found = jar()
    if found is not None:
        jars = [j for j in out.get("spark.jars", "").split(",") if j]
        out["spark.jars"] = ",".join([*jars, str(found)])
    return out


def loadable(spark: SparkSession, name: str) -> bool:
    """Whether ``spark`` can load the class ``name`` (its session was started with the jar);
    checked once per session."""
    sc = spark.sparkContext
    key = (id(sc._jsc), sc.applicationId, name)  # type: ignore[attr-defined]
    found = _checked.get(key)
    if found is None:
        try:
            utils = sc._jvm.org.apache.spark.util.Utils  # type: ignore[union-attr]
            utils.getContextOrSparkClassLoader().loadClass(name)
            found = True
        except Exception:
            found = False
        _checked[key] = found
    return found
