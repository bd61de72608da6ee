"""Every process that commits publishes Iceberg metadata, whichever evonb module it imported:
the format finds the publisher by name in the installed packages' ``evonb.after_change``
entry points, never in anything a table holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pyiceberg.table import StaticTable

import evonb
from evonb.table.after_change import AFTER_CHANGE_GROUP, functions
from evonb.table.table import create_table

ON = {"evonb.iceberg.enabled": "true"}
SOURCE = Path(evonb.__file__).resolve().parent.parent  # the folder holding the package

# Commits through the format layer only (no evonb.api, no Spark): an ALTER TABLE.
FORMAT_ONLY = textwrap.dedent("""
    import json, sys
    from evonb.table.table import open_table

    t = open_table(sys.argv[1])
    t.alter("ALTER TABLE t ADD COLUMN extra string")
    t.alter("ALTER TABLE t RENAME COLUMN v TO value")
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("evonb"))))
""")


def _run(code: str, *args: str, cwd: Path | None = None) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SOURCE), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _latest(root: Path) -> tuple[int, StaticTable]:
    n = int((root / "metadata" / "version-hint.text").read_text().strip())
    return n, StaticTable.from_metadata(str(root / "metadata" / f"v{n}.metadata.json"))


def test_evonbs_publisher_is_declared_as_an_entry_point(tmp_path):
    t = create_table(tmp_path / "t", "id int not null", primary_key="id")
    found = functions(t)
    assert AFTER_CHANGE_GROUP == "evonb.after_change"
    assert found["iceberg"].__module__ == "evonb.iceberg.publish"
    assert found["iceberg"].__name__ == "publish"


def test_a_process_committing_through_the_format_layer_publishes(tmp_path):
    t = create_table(tmp_path / "t", "id int not null, v string", primary_key="id",
                     properties=ON)
    n0, ice = _latest(t.root)
    assert [f.name for f in ice.schema().fields] == ["id", "v"]
    modules = _run(FORMAT_ONLY, str(t.root))
    assert "evonb.api" not in modules and "evonb.spark" not in modules
    assert "evonb.iceberg.publish" in modules  # loaded by name, at the first commit
    n, ice = _latest(t.root)
    assert n == n0 + 2  # one publication per commit
    assert [f.name for f in ice.schema().fields] == ["id", "value", "extra"]
    assert [f.field_id for f in ice.schema().fields] == [1, 2, 3]
    assert not (t.root / ".evo" / "iceberg.json").exists()  # nothing failed


def test_a_distribution_inside_the_table_folder_is_not_run(tmp_path):
    """A package planted in the table's folder, the working directory of the committing
    process, declares an after-change function: it is neither imported nor run."""
    t = create_table(tmp_path / "t", "id int not null, v string", primary_key="id",
                     properties=ON)
    marker = tmp_path / "ran"
    dist = t.root / "planted-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: planted\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{AFTER_CHANGE_GROUP}]\nplanted = planted_hook:run\n")
    (t.root / "planted_hook.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
        "def run(table):\n    pass\n")
    code = ("import sys; sys.path.insert(0, '.')\n"
            "from importlib.metadata import entry_points\n"
            f"assert [e.name for e in entry_points(group={AFTER_CHANGE_GROUP!r})"
            "if e.name == 'planted'], 'the planted package is visible'\n" + FORMAT_ONLY)
    n0, _ = _latest(t.root)
    _run(code, str(t.root), cwd=t.root)
    assert not marker.exists()
    n, ice = _latest(t.root)
    assert n == n0 + 2 and [f.name for f in ice.schema().fields] == ["id", "value", "extra"]
