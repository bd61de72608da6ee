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
