"""Help that is true where hwtop is installed: every `python -m MODULE` the product prints (help texts, usage
lines, docstrings) names a module an installed wheel has (`hwtop.…`, never a bare room such as `workload.job`),
and from a wheel installed in a fresh venv each of them, and `hwtop workload --help` the CLI points to, runs."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hwtop.test_packaging import build, clean_copy
from tests.import_names import ROOMS

ROOT = Path(__file__).resolve().parents[2]
PYTHON_M = re.compile(r"python3? -m ([A-Za-z_][\w.]*)")


def printed_modules() -> dict[str, list[str]]:
    """Each `python -m NAME` in the product's string literals whose NAME is hwtop's (not torch's, say): where."""
    found: dict[str, list[str]] = {}
    for room in sorted([*ROOMS, "hwtop"]):
        for path in sorted((ROOT / room).rglob("*.py")):
            if room == "hwtop" and path.parent != ROOT / "hwtop":
                continue  # the links: the rooms' own files
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for name in PYTHON_M.findall(node.value):
                        if name.split(".")[0] in {*ROOMS, "hwtop"}:
                            found.setdefault(name.rstrip("."), []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_every_printed_module_is_named_as_installed() -> None:
    modules = printed_modules()
    assert {"hwtop.workload.job", "hwtop.workload.bench", "hwtop.cli.capture"} <= set(modules)
    assert {name: where for name, where in modules.items() if not name.startswith("hwtop")} == {}
    assert [name for name in modules if importlib.util.find_spec(name) is None] == []


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_cli_points_to_a_hwtop_command_for_the_jobs_options() -> None:
    for args in (["--help"], ["doctor", "--help"]):
        out = subprocess.run([sys.executable, "-m", "hwtop", *args], capture_output=True, text=True, check=True,
                             timeout=60).stdout
        assert "hwtop workload --help" in " ".join(out.split()), args
        assert "workload.job" not in out


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv that sees the system's packages (torch, Textual, …) with the hwtop wheel installed into it;
    the checkout is not on its path."""
    root = tmp_path_factory.mktemp("installed")
    wheel = build("wheel", clean_copy(root / "src"), root / "dist")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root / "venv")], check=True,
                   timeout=120)
    subprocess.run([root / "venv" / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--ignore-installed", str(wheel)], check=True, capture_output=True, timeout=300)
    return root / "venv"


def run_installed(venv: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=venv, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_each_printed_command_runs_from_the_installed_wheel(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    where = run_installed(venv, python, "-c", "import hwtop, importlib.util; print(hwtop.__file__); "
                                              "print(importlib.util.find_spec('workload'))")
    assert where.stdout.splitlines() == [str(venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
                                             / "site-packages" / "hwtop" / "__init__.py"), "None"]
    for module in printed_modules():
        result = run_installed(venv, python, "-m", module, "--help")
        assert result.returncode == 0 and "usage:" in result.stdout, (module, result.stderr[-2000:])
    job_help = run_installed(venv, str(venv / "bin" / "hwtop"), "workload", "--help")
    assert job_help.returncode == 0, job_help.stderr[-2000:]
    assert "usage: hwtop workload" in job_help.stdout and "--scenario" in job_help.stdout
    assert "--json" in job_help.stdout
