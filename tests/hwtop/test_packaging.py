"""One import name: the wheel holds `hwtop` alone, and the ranks never import a `workload/` from the user's
current directory or PYTHONPATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_name(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("hwtop-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"hwtop", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    assert "hwtop/tui/hwtop.tcss" in names and "hwtop/workload/job.py" in names and "hwtop/probes/gpu.py" in names
    assert not any(name.startswith(("hwtop/tests", "tests/")) for name in names)


def test_every_room_is_linked_under_the_one_package() -> None:
    """Each top-level room is importable as hwtop.<room> because hwtop/<room> links to it, and nothing else."""
    rooms = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and not p.is_symlink()}
    rooms -= {"hwtop", "tests", "benchmarks", "screenshots"}
    links = {p.name for p in (ROOT / "hwtop").iterdir() if p.is_symlink()}
    assert links == rooms
    assert all(os.readlink(ROOT / "hwtop" / room) == f"../{room}" for room in rooms)


@pytest.mark.slow
def test_a_workload_package_in_the_current_directory_is_never_imported(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    marker = tmp_path / "IMPORTED"
    for package in ("workload", "hwtop_shadow"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write('{package}\\n')\n")
        (tmp_path / package / "job.py").write_text(f"open({str(marker)!r}, 'a').write('{package}.job\\n')\n")
    hwtop = shutil.which("hwtop")
    command = [hwtop] if hwtop else [sys.executable, "-m", "hwtop"]
    env = dict(os.environ, PYTHONPATH=str(tmp_path))  # even on PYTHONPATH: the ranks do not inherit it
    result = subprocess.run([*command, "workload", "--device", "cpu", "--steps", "2", "--model", "mlp",
                             "--num-workers", "0", "--json"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    assert '"event": "finished"' in result.stdout
    assert not marker.exists(), marker.read_text()


def test_the_torch_extra_brings_what_the_workload_imports() -> None:
    """A fresh `pip install 'hwtop[torch]'` runs the workload without torch's 'Failed to initialize NumPy'."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {requirement.split(">")[0].split("=")[0].split("[")[0].strip() for requirement in extras["torch"]}
    assert {"torch", "numpy"} <= names
