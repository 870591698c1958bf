"""The nvidia-ml-py releases the demo's NVML fake is tested under: named in one place (demo/nvml/coverage.py),
equal to pyproject's range, and a demo run under another release says so in one line on stderr."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hwtop.cli.main import main
from hwtop.demo.nvml import coverage

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_range_starts_where_the_fake_is_covered_and_ends_before_the_next_major() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d.split("#")[0].strip() for d in dependencies if d.startswith("nvidia-ml-py")]
    lowest, highest = coverage.COVERED
    assert pins == [f"nvidia-ml-py>={lowest},<{coverage.release(highest)[0] + 1}"]


def test_this_suite_runs_under_a_covered_release() -> None:
    version = coverage.installed()
    assert version is not None and coverage.note(version) is None


@pytest.mark.parametrize(("version", "says"), [
    ("12.550.52", False), ("13.615.71", False), ("13.0.1", False),
    ("12.535.161", True), ("13.620.1", True), ("14.0", True), (None, False),
])
def test_a_release_outside_the_covered_ones_is_named(version: str | None, says: bool) -> None:
    line = coverage.note(version)
    assert (line is not None) == says
    if line is not None:
        assert "\n" not in line and version in line and "12.550.52 to 13.615.71" in line


@pytest.mark.parametrize("version", ["13.700.1", "13.615.71"])
@pytest.mark.parametrize("command", [["snapshot", "--json", "--interval", "0.1"], ["topo"]])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_demo_says_so_in_one_line_when_another_release_is_installed(
        version: str, command: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(coverage, "installed", lambda: version)
    assert main([*command, "--demo", "rtx3090"]) == 0
    said = capsys.readouterr().err.splitlines()
    if version == "13.615.71":
        assert said == []
    else:
        assert said == [f"hwtop: the demo's NVML fake covers nvidia-ml-py 12.550.52 to 13.615.71; {version} is "
                        "installed, so its GPUs may read differently from a real card's"]
