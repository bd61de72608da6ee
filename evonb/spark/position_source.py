"""evonb's Parquet source for merge-on-read base files, read inside the JVM.

A merge-on-read read drops the base rows that log blocks replace or delete by their position in
the file. Spark's own expressions can do it (:func:`evonb.table.mor._kept_rows`), at the cost of
a few array reads per row; this source does it in the Parquet reader itself: it adds a column,
``_evo_deleted``, set a batch at a time from a bitmap per file, and the read keeps the rows
where it is false. Its Java source ships with evonb (``jvm/``) and is compiled on first use
against the Spark that runs it, with the JDK's ``javac``, into a jar in a cache folder
(``EVONB_JVM_CACHE``, else ``~/.cache/evonb``); a session evonb starts loads that jar.

Where there is no ``javac``, or a session was started without the jar, reads use the built-in
filter: the same rows, slower. :func:`available` says which one a session has. A session of
your own gets the source by listing :func:`jar` in ``spark.jars`` when it starts::

    SparkSession.builder.config("spark.jars", str(evonb.spark.position_source.jar()))
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import shutil
import struct
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

SOURCE = "org.evonb.spark.PositionFilteredParquet"
"""The class name Spark loads the source by."""
DELETED = "_evo_deleted"
"""The column the source adds: whether the row is replaced or deleted by a log block."""
OPTION = "evonb.positions"
"""The read option that carries the bitmaps (:func:`encode`)."""
PROPERTY = "evonb.mor.read.jvm_filter"
"""The table property that lets reads use the source where the session has it (default true;
``false``: always the built-in filter)."""

_JAVA = Path(__file__).with_name("jvm") / "org" / "evonb" / "spark" / "PositionFilteredParquet.java"
_log = logging.getLogger(__name__)
_lock = threading.Lock()
_built: dict[str, Path | None] = {}
_checked: dict[int, bool] = {}


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
    """The source's jar for this Spark, compiled if it is not in the cache yet (``build``), or
    None where it cannot be (no ``javac``, no Spark jars, a failed compilation: logged)."""
    jars = spark_jars()
    if jars is None:
        return None
    import pyspark

    digest = hashlib.sha256(_JAVA.read_bytes() + pyspark.__version__.encode()).hexdigest()[:16]
    with _lock:
        if digest in _built:
            return _built[digest]
        cache = Path(os.environ.get("EVONB_JVM_CACHE") or Path.home() / ".cache" / "evonb")
        target = cache / f"evonb-spark-{pyspark.__version__}-{digest}.jar"
        if target.exists():
            _built[digest] = target
            return target
        if not build:
            return None
        javac = _javac()
        found = _compile(javac, jars, target) if javac else None
        if found is None and javac is None:
            _log.info("evonb: no javac; merge-on-read reads use Spark's built-in filter")
        _built[digest] = found
        return found


def _compile(javac: str, jars: Path, target: Path) -> Path | None:
    """Compile the source into ``target`` (written whole, then renamed into place, so that
    processes compiling at once each leave a complete jar)."""
    import zipfile

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="evonb-jvm-") as tmp:
        out = Path(tmp) / "classes"
        done = subprocess.run(
            [javac, "-nowarn", "-encoding", "UTF-8", "-d", str(out),
             "-cp", str(jars / "*"), str(_JAVA)],
            capture_output=True, text=True, check=False)
        if done.returncode != 0:
            _log.warning("evonb: compiling %s failed; merge-on-read reads use Spark's "
                         "built-in filter:\n%s", _JAVA.name, done.stderr[-2000:])
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
    """``settings`` for a new session with the source's jar added to ``spark.jars`` (as they
    are when there is no jar)."""
    out = dict(settings)
    found = jar()
    if found is not None:
        jars = [j for j in out.get("spark.jars", "").split(",") if j]
        out["spark.jars"] = ",".join([*jars, str(found)])
    return out


def available(spark: SparkSession) -> bool:
    """Whether ``spark`` can load the source (its session was started with the jar)."""
    sc = spark.sparkContext
    key = id(sc._jsc)  # type: ignore[attr-defined]
    found = _checked.get(key)
    if found is None:
        try:
            loader = sc._jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()  # type: ignore[union-attr]
            loader.loadClass(SOURCE)
            found = True
        except Exception:
            found = False
        _checked[key] = found
    return found


def encode(files: Sequence[tuple[str, int, Any]]) -> str:
    """The option :data:`OPTION` for ``files``: each a file name, its number of rows and the
    positions its rows are dropped at (an integer array)."""
    import numpy as np

    parts = [struct.pack("<i", len(files))]
    for name, rows, positions in files:
        raw = name.encode("utf-8")
        bits = np.zeros(max(1, -(-rows // 64)), dtype=np.uint64)
        pos = np.asarray(positions, dtype=np.int64)
        np.bitwise_or.at(bits, pos >> 6, np.uint64(1) << (pos & 63).astype(np.uint64))
        parts += [struct.pack("<i", len(raw)), raw, struct.pack("<qi", rows, len(bits)),
                  bits.astype("<u8").tobytes()]
    return base64.b64encode(b"".join(parts)).decode("ascii")
