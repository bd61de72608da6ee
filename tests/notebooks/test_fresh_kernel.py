"""A fresh kernel shows a table's first rows without starting Spark: ``%load_ext evonb``,
``%evo read`` (with ``--limit``, ``as of``), ``%evo describe`` and the timeline's preview on a
real ``python3`` kernel, with no SparkSession in it and no JVM among its child processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evonb

pytestmark = pytest.mark.spark

ROWS = [(1, "alice", 12.5, 1), (2, "bob", 7.0, 1), (3, "carol", 22.0, 1)]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """A client of a new ``python3`` kernel (working folder: a fresh temporary one)."""
    from jupyter_client.manager import start_new_kernel

    work = tmp_path_factory.mktemp("kernel")
    tmp = work / "tmp"
    tmp.mkdir()
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(work),
                                       env=dict(os.environ, TMPDIR=str(tmp)))
    try:
        yield client, work
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run(client: Any, code: str) -> str:
    """Execute ``code``; its printed text and result (text/plain), or fail with its error."""
    out: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            out.append(content["data"].get("text/plain", "") + "\n")
        elif kind == "error":
            out.append("ERROR " + content["ename"] + ": " + content["evalue"])

    reply = client.execute_interactive(code, output_hook=hook, timeout=300)
    text = "".join(out)
    assert reply["content"]["status"] == "ok", text
    return text


def java_descendants(pid: int) -> list[int]:
    """Processes below ``pid`` (children, their children, ...) whose command is ``java``."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        name = stat[stat.index("(") + 1: stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        parents[int(entry.name)] = ppid
        names[int(entry.name)] = name
    found = []
    for child, name in names.items():
        up = parents.get(child)
        while up is not None and up > 1 and up != pid:
            up = parents.get(up)
        if up == pid and name == "java":
            found.append(child)
    return found


def test_a_fresh_kernel_reads_without_spark(kernel: tuple[Any, Path], spark: Any) -> None:
    client, work = kernel
    table = evonb.create_table(work / "warehouse" / "trips",
                               "trip_id bigint not null, rider string, fare double, ts bigint",
                               primary_key="trip_id", precombine="ts")
    first = table.write(spark.createDataFrame(ROWS, "trip_id long, rider string, fare double, "
                                                    "ts long"), "upsert")
    table.alter("ALTER TABLE trips RENAME COLUMN rider TO passenger")
    table.write(spark.createDataFrame([(4, "dan", 3.0, 2), (1, "alice2", 13.0, 2)],
                                      "trip_id long, passenger string, fare double, ts long"),
                "upsert")

    run(client, "%load_ext evonb\n%config Evo.warehouse = 'warehouse'")
    shown = run(client, "%evo read trips")
    lines = shown.splitlines()
    assert lines[0] == "trips, in the latest schema"
    assert lines[1].split() == ["trip_id", "passenger", "fare", "ts"]
    assert [line.split()[:2] for line in lines[2:]] == [
        ["1", "alice2"], ["2", "bob"], ["3", "carol"], ["4", "dan"]]
    limited = run(client, "%evo read trips --limit 2").splitlines()
    assert [line.split()[0] for line in limited[2:4]] == ["1", "2"]
    assert limited[-1] == "(more rows not shown)"
    old = run(client, f"%evo read trips as of {first.instant}").splitlines()
    assert old[1].split() == ["trip_id", "rider", "fare", "ts"]
    assert [line.split()[:2] for line in old[2:]] == [["1", "alice"], ["2", "bob"],
                                                      ["3", "carol"]]
    described = run(client, "%evo describe trips")
    assert "passenger" in described and "record key: trip_id" in described
    preview = run(client, "from evonb.notebook import TimelineWidget\n"
                          "w = TimelineWidget(evonb_t := __import__('evonb').open_table("
                          "'warehouse/trips'), select=" + repr(first.instant) + ")\n"
                          "print(w.preview(w.selected, 'latest'))")
    assert "passenger" in preview and "alice " in preview and "dan" not in preview
    run(client, "%evo history trips")

    state = run(client, "import os\nfrom evonb.spark import session\n"
                        "print(session.is_running(), os.getpid())")
    running, pid = state.split()
    assert running == "False"
    assert java_descendants(int(pid)) == []
    # the same check sees the JVM once Spark starts in the kernel
    run(client, "%evo sql SELECT count(*) AS n FROM trips")
    assert run(client, "print(session.is_running())").strip() == "True"
    assert java_descendants(int(pid))
