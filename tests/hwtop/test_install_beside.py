"""`pip install hwtop` beside what a training environment already has: an older nvidia-ml-py in hwtop's range
(nvitop, gpustat and DCGM tools pull it) stays as it is, and hwtop runs with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwtop.demo.nvml import coverage
from tests.hwtop.test_packaging import build, clean_copy

OLDER = coverage.COVERED[0]  # the lowest nvidia-ml-py of the range


def run(venv: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return subprocess.run([str(venv / "bin" / "python"), *argv], capture_output=True, text=True, timeout=600,
                          cwd=venv, env=env, stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_the_wheel_installs_beside_an_older_nvidia_ml_py_and_keeps_it(tmp_path: Path) -> None:
    wheel = build("wheel", clean_copy(tmp_path / "src"), tmp_path / "dist")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    older = run(venv, "-m", "pip", "install", "-q", f"nvidia-ml-py=={OLDER}")  # from the package index
    assert older.returncode == 0, older.stderr[-2000:]
    version = "import importlib.metadata as m; print(m.version('nvidia-ml-py'))"
    assert run(venv, "-c", version).stdout.strip() == OLDER
    installed = run(venv, "-m", "pip", "install", "--no-index", str(wheel))  # every other requirement is met here
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    assert run(venv, "-c", version).stdout.strip() == OLDER
    snapshot = run(venv, "-m", "hwtop", "snapshot", "--json", "--demo", "rtx3090", "--interval", "0.1")
    assert snapshot.returncode == 0 and '"gpus"' in snapshot.stdout, snapshot.stderr[-2000:]
    assert snapshot.stderr == ""  # the demo's fake covers the lowest of the range: no note
