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


def ci_computes(variable: str) -> list[str]:
    """What .ci/run's `VARIABLE=$(python3 -c '…')` comes to, run here."""
    command = re.search(rf"{variable}=\$\(python3 -c '(.*?)'\)\n", (ROOT / ".ci" / "run").read_text(), re.S)
    assert command is not None, variable
    return subprocess.run([sys.executable, "-c", command.group(1)], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout.split()


def test_ci_installs_the_lowest_and_the_highest_of_each_range() -> None:
    """`NAME==LOWEST` for each ranged dependency, and the ranges themselves for `pip install -U` (the highest)."""
    script = (ROOT / ".ci" / "run").read_text()
    pins = ci_computes("lowest")
    lowest = [re.findall(r">=([0-9.]+)", requirements()[name]) for name in RANGED]
    assert pins == [f"{name}=={low}" for name, [low] in zip(RANGED, lowest, strict=True)]
    assert ci_computes("ranges") == [requirements()[name] for name in RANGED]
    assert '"$venv/bin/python" -m pytest' in script and "for end in lowest highest" in script
