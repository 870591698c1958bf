"""The two dependencies a training environment often already has (Textual through other TUIs, nvidia-ml-py
through nvitop, gpustat, DCGM tools) are ranges with both ends, and CI's step for the lowest installs exactly
the lowest of each."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RANGED = ("textual", "nvidia-ml-py")


def requirements() -> dict[str, str]:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0]: d for d in dependencies}


def test_each_ranged_dependency_has_a_lowest_and_an_upper_bound() -> None:
    found = requirements()
    for name in RANGED:
        assert re.fullmatch(rf"{name}>=[0-9][0-9.]*,<[0-9]+", found[name]), found[name]


def test_ci_installs_the_lowest_of_each_range() -> None:
    """The command .ci/run computes its pins with, run here: `NAME==LOWEST` for each ranged dependency."""
    script = (ROOT / ".ci" / "run").read_text()
    command = re.search(r"lowest=\$\(python3 -c '(.*?)'\)\n", script, re.S)
    assert command is not None
    pins = subprocess.run([sys.executable, "-c", command.group(1)], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout.split()
    lowest = [re.findall(r">=([0-9.]+)", requirements()[name]) for name in RANGED]
    assert pins == [f"{name}=={low}" for name, [low] in zip(RANGED, lowest, strict=True)]
    assert '"$venv/bin/python" -m pytest' in script
