"""One name per module: each room is `hwtop.<room>` and nothing else. Ruff's banned-api lists every room (so an
editor's `from model.snapshot import Snapshot` fails lint), the checkout has no such import (static or through
importlib with a string), a fresh interpreter with the checkout on sys.path loads each source file once, and the
test process refuses a bare room outright."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.import_names import ROOMS

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", "build", "dist", ".venv", "__pycache__", "__snapshots__", "node_modules"}


def python_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if parts[0] == "hwtop" and len(parts) > 2:  # the links: the same files as the rooms
            continue
        if not SKIP_DIRS.intersection(parts) and not any(part.endswith(".egg-info") for part in parts):
            found.append(path)
    return found


def bare_room_imports(source: str) -> list[str]:
    """`import room…`, `from room… import`, and importlib.import_module/__import__ of a string naming a room."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in {"importlib.import_module", "import_module", "__import__"}):
            names = [node.args[0].value]
        found += [f"{name} (line {node.lineno})" for name in names if name.split(".")[0] in ROOMS]
    return found


def test_ruff_bans_every_room_by_its_bare_name() -> None:
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"model", "tui", "probes", "widgets", "workload"} <= ROOMS  # the links under hwtop/ (test_packaging)
    assert "TID251" in lint["select"]
    assert set(lint["flake8-tidy-imports"]["banned-api"]) == ROOMS


def test_the_scan_sees_each_form_of_a_bare_import() -> None:
    source = ("from model.snapshot import Snapshot\nimport tui.app\nimport widgets\n"
              "def f():\n    from probes import cpu\n    importlib.import_module('session.sampler')\n"
              "import hwtop.model.snapshot\nfrom hwtop.tui import app\nimport modelling\n")
    assert bare_room_imports(source) == ["model.snapshot (line 1)", "tui.app (line 2)", "widgets (line 3)",
                                         "probes (line 5)", "session.sampler (line 6)"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_checkout_imports_every_room_through_hwtop() -> None:
    offenders = {str(path.relative_to(ROOT)): found for path in python_files()
                 if (found := bare_room_imports(path.read_text(encoding="utf-8")))}
    assert offenders == {}


def test_under_pytest_a_bare_room_is_refused() -> None:
    for name in ("model.snapshot", "tui"):
        with pytest.raises(ImportError, match=f"import hwtop.{name.split('.')[0]}, not"):
            importlib.import_module(name)
    assert not ROOMS.intersection(name.split(".")[0] for name in sys.modules)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_each_source_file_is_one_module_with_the_checkout_on_sys_path() -> None:
    """Every module of hwtop imported in a fresh interpreter (the checkout on sys.path, as under pytest): no
    file is loaded under two names, and `hwtop.model.snapshot` is model/snapshot.py's only name. torch is held
    back (a module that needs it is skipped; any other ImportError fails), `__main__` would start the monitor."""
    code = """
import collections, importlib, pkgutil, sys
from pathlib import Path
sys.modules['torch'] = None
import hwtop
failed = []
for info in pkgutil.walk_packages(hwtop.__path__, 'hwtop.'):
    if not info.name.endswith('__main__'):
        try:
            importlib.import_module(info.name)
        except ImportError as error:
            if error.name != 'torch':
                raise
            failed.append(info.name)
names = collections.defaultdict(list)
for name, module in list(sys.modules.items()):
    file = getattr(module, '__file__', None)
    if file and Path(file).resolve().is_relative_to(Path(sys.argv[1])):
        names[str(Path(file).resolve().relative_to(Path(sys.argv[1])))].append(name)
print(sorted(failed))
print(sorted(n for n in names.values() if len(n) > 1))
print(names['model/snapshot.py'], len(names))
"""
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                         timeout=120).stdout.splitlines()
    assert "hwtop.workload.job" in out[0]  # held back: torch, and only torch (any other ImportError is raised)
    assert out[1] == "[]"
    snapshot_names, files = out[2].rsplit(" ", 1)
    assert snapshot_names == "['hwtop.model.snapshot']" and int(files) > 100
