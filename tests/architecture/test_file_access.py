"""One storage interface: the format and the services reach table files only through
``evonb.table.fileio``, and nothing in evonb renames or links a file but the local FileIO."""

from __future__ import annotations

import ast
from pathlib import Path

import evonb

PACKAGE = Path(evonb.__file__).parent
FILE_IO = "table/fileio.py"

# Renames and links: only the local FileIO may use them (to make a whole-file write atomic).
RENAMES_OS = {"rename", "renames", "replace", "link", "symlink"}
RENAMES_METHODS = {"rename", "hardlink_to", "symlink_to"}
RENAME_FREE_EXCEPT = {
    FILE_IO: "the local FileIO publishes whole files with os.replace and os.link",
    "spark/jvm.py": "evonb's compiled jar, cached outside every table",
}

# Any file access: in the format and the services, only the FileIO does it.
ACCESS_OS = RENAMES_OS | {"listdir", "scandir", "walk", "unlink", "remove", "stat", "open",
                          "makedirs", "rmdir", "removedirs", "truncate"}
ACCESS_SHUTIL = {"rmtree", "move", "copy", "copy2", "copyfile", "copytree"}
ACCESS_METHODS = RENAMES_METHODS | {"unlink", "iterdir", "read_bytes", "write_bytes",
                                    "read_text", "write_text", "glob", "rglob", "is_file",
                                    "is_dir", "exists", "stat", "rmdir", "touch"}
ACCESS_EXCEPT = {
    FILE_IO: "the FileIO itself",
    "table/lock.py": "the file lock provider flocks its own lock file",
    "table/writers.py": "reads /proc to tell whether a writer process lives",
    ("table/table.py", "_make_root"): "creates the local folder of a new table",
}


def _calls(path: Path):
    """(enclosing function, the called object's source or None, attribute or name, line) of
    every call."""
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = func
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = child.name
            if isinstance(child, ast.Call):
                f = child.func
                if isinstance(f, ast.Attribute):
                    owner = ast.unparse(f.value)
                    out.append((func, owner, f.attr, child.lineno))
                elif isinstance(f, ast.Name):
                    out.append((func, None, f.id, child.lineno))
            visit(child, name)

    visit(tree, "")
    return out


def _is_file_io(owner: str | None) -> bool:
    """Whether a call's object is a FileIO (``io``, ``self.io``, ``file_io()``...) or a class
    whose methods use one (``TableConfig``)."""
    return owner is not None and (owner in ("io", "file_io()", "TableConfig")
                                  or owner.endswith(".io"))


def _modules(*folders: str):
    for folder in folders:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            yield path.relative_to(PACKAGE).as_posix(), path


def test_nothing_renames_or_links_but_the_local_file_io():
    found = []
    for rel, path in _modules("."):
        if rel in RENAME_FREE_EXCEPT:
            continue
        for _func, owner, attr, line in _calls(path):
            if ((owner == "os" and attr in RENAMES_OS) or (owner == "shutil" and attr == "move")
                    or (owner not in ("os", "shutil") and attr in RENAMES_METHODS
                        and not _is_file_io(owner))):
                found.append(f"evonb/{rel}:{line} {owner or ''}.{attr}")
    assert found == []


def test_format_and_services_reach_files_only_through_the_file_io():
    found = []
    for rel, path in _modules("table", "services"):
        if rel in ACCESS_EXCEPT:
            continue
        for func, owner, attr, line in _calls(path):
            if (rel, func) in ACCESS_EXCEPT:
                continue
            if ((owner == "os" and attr in ACCESS_OS)
                    or (owner == "shutil" and attr in ACCESS_SHUTIL)
                    or (owner is None and attr == "open")
                    or (not _is_file_io(owner) and attr in ACCESS_METHODS)):
                found.append(f"evonb/{rel}:{line} in {func or 'module'}: {owner or ''}.{attr}")
    assert found == []


def test_the_checker_sees_what_it_forbids(tmp_path: Path):
    src = tmp_path / "m.py"
    src.write_text("import os, shutil\n"
                   "def f(p):\n    os.replace(p, p)\n    p.unlink()\n    open(p)\n"
                   "    shutil.rmtree(p)\n    'a'.replace('a', 'b')\n")
    calls = {(func, owner, attr) for func, owner, attr, _ in _calls(src)}
    assert {("f", "os", "replace"), ("f", "p", "unlink"), ("f", None, "open"),
            ("f", "shutil", "rmtree")} <= calls


# The engines (Spark's Python side and the Arrow reader) read table files through the FileIO
# too: Parquet and Avro reads take a stream from ``file_io().open_data`` or its pyarrow file
# system. What they open directly is their own: staging files before the FileIO places them,
# the session's log, evonb's compiled jar.
PYARROW_READS = {("pq", "read_metadata"), ("pq", "read_table"), ("pq", "ParquetFile"),
                 ("ds", "dataset"), ("fastavro", "reader")}
ENGINE_EXCEPT = {
    "spark/jvm.py": "evonb's compiled jar, cached outside every table",
    "spark/session.py": "the managed session's own log file",
    ("spark/avro_log.py", "_open"): "the folder of a log block's staging file",
    ("spark/avro_log.py", "_close"): "a log block's staging file, before the FileIO places it",
    ("spark/avro_log.py", "_read_block"): "fastavro reads the bytes the FileIO gave",
    ("spark/group_merge.py", "merge_bin"): "the merged file's staging copy",
    ("spark/object_writer.py", "close"): "a data file's local copy, before the FileIO "
                                         "stores it in object storage",
    ("spark/object_writer.py", "discard"): "that local copy, removed",
    ("spark/group_merge.py", "store_bin"): "the merged file's local copy, before the FileIO "
                                           "stores it in object storage",
    ("spark/writer.py", "write_files"): "Spark's staged output, before the FileIO places it",
    ("services/compaction.py", "merge_in_tasks"): "merged files in staging, before the "
                                                  "FileIO places them",
    ("spark/mor.py", "file_keys"): "Spark's _metadata names a base file by its local size "
                                   "and modification time, in Spark's own terms",
}


def _engine_reads(path: Path):
    """(function, call text, line) of every file access and pyarrow/fastavro read whose
    source is not a FileIO stream (a name bound by ``with ...open_data(...) as`` or a
    ``filesystem=`` argument)."""
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else func
            if isinstance(child, ast.Call):
                f = child.func
                owner = ast.unparse(f.value) if isinstance(f, ast.Attribute) else None
                attr = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                streamed = (any(k.arg == "filesystem" for k in child.keywords)
                            or (child.args and isinstance(child.args[0], ast.Name)
                                and child.args[0].id in ("fh", "stream")))
                if (((owner, attr) in PYARROW_READS and not streamed)
                        or (owner is None and attr == "open")
                        or (owner == "os" and attr in ACCESS_OS)
                        or (owner == "os.path" and attr in ("getsize", "exists", "isfile"))):
                    out.append((func, f"{owner + '.' if owner else ''}{attr}", child.lineno))
            visit(child, name)

    visit(tree, "")
    return out


def test_engines_read_table_files_through_the_file_io():
    found = []
    for rel, path in _modules("spark", "arrow", "services", "iceberg"):
        if rel in ENGINE_EXCEPT:
            continue
        for func, call, line in _engine_reads(path):
            if (rel, func) not in ENGINE_EXCEPT:
                found.append(f"evonb/{rel}:{line} in {func or 'module'}: {call}")
    assert found == []


def test_the_engine_checker_sees_a_direct_read(tmp_path: Path):
    src = tmp_path / "m.py"
    src.write_text("import pyarrow.parquet as pq\n"
                   "def f(p, fh):\n    pq.read_table(p)\n    pq.read_table(fh)\n"
                   "    pq.read_metadata(p, filesystem=x)\n    open(p)\n")
    assert [(f, c, n) for f, c, n in _engine_reads(src)] == [
        ("f", "pq.read_table", 3), ("f", "open", 6)]


# Arrow reads Parquet from a native stream (``open_data``), never from the Python file object
# ``open_read`` gives: Arrow reads row groups on its own threads, and a thread of Arrow's
# reading through Python can still be waiting for the interpreter's lock when the interpreter
# exits, which aborts the process (``evonb check --deep`` did, now and then, under load). A
# Python stream is read by its own methods or by fastavro, and handed to nothing else (where
# it could reach pyarrow). ``reader_with_times_as_numbers`` (evonb/table/avro_records.py) is
# fastavro's reader over the stream's bytes (read by the stream's own ``read``).
PYTHON_STREAM_READERS = {"fastavro.reader", "fastavro.block_reader", "fastavro.schemaless_reader",
                         "reader_with_times_as_numbers"}


def _python_streams_handed_on(path: Path):
    """(function, call text, line) of every call given the stream of a
    ``with ...open_read(...) as name:`` block, other than fastavro's readers."""
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def visit(node: ast.AST, func: str, streams: frozenset[str]) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else func
            inner = streams
            if isinstance(child, ast.With):
                inner = streams | {
                    i.optional_vars.id for i in child.items
                    if isinstance(i.context_expr, ast.Call)
                    and isinstance(i.context_expr.func, ast.Attribute)
                    and i.context_expr.func.attr == "open_read"
                    and isinstance(i.optional_vars, ast.Name)}
            if isinstance(child, ast.Call) and streams:
                given = [*child.args, *(k.value for k in child.keywords)]
                callee = ast.unparse(child.func)
                if callee not in PYTHON_STREAM_READERS and any(
                        isinstance(a, ast.Name) and a.id in streams for a in given):
                    out.append((func, callee, child.lineno))
            visit(child, name, inner)

    visit(tree, "", frozenset())
    return out


def test_python_streams_reach_no_reader_but_fastavro():
    found = [f"evonb/{rel}:{line} in {func}: {call}"
             for rel, path in _modules(".")
             for func, call, line in _python_streams_handed_on(path)]
    assert found == []


def test_the_stream_checker_sees_a_python_stream_handed_on(tmp_path: Path):
    src = tmp_path / "m.py"
    src.write_text("import pyarrow.parquet as pq\n"
                   "def f(p):\n"
                   "    with file_io().open_read(p) as fh:\n        pq.ParquetFile(fh).read()\n"
                   "    with file_io().open_data(p) as fh:\n        pq.read_table(fh)\n"
                   "    with file_io().open_read(p) as fh:\n        fastavro.reader(fh)\n"
                   "        fh.seek(0)\n        check(fh, deep=True)\n")
    assert _python_streams_handed_on(src) == [("f", "pq.ParquetFile", 4), ("f", "check", 10)]
