"""One import name: the wheel holds `hwtop` alone, and the ranks never import a `workload/` from the user's
current directory or PYTHONPATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def clean_copy(out: Path) -> Path:
    """What a build reads, copied (links as links): an in-tree build/ from an earlier build would otherwise put
    stale files into the wheel and hide a package the build no longer finds."""
    out.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, out / name)
    for folder in [ROOT / "hwtop", *(ROOT / link.name for link in (ROOT / "hwtop").iterdir() if link.is_symlink())]:
        shutil.copytree(folder, out / folder.name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    return out


def build(kind: str, source: Path, out: Path) -> Path:
    """The wheel or sdist pip/setuptools make of `source`, without network or a build venv."""
    if kind == "wheel":
        subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out)], check=True, capture_output=True, timeout=300)
        return next(out.glob("hwtop-*.whl"))
    subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"],
                   check=True, capture_output=True, timeout=300, cwd=source)
    return next(out.glob("hwtop-*.tar.gz"))


def tree_packages() -> set[str]:
    """Every package of the checkout as the wheel names it: hwtop, and each folder of a room with __init__.py."""
    found = {"hwtop"}
    for link in (ROOT / "hwtop").iterdir():
        if link.is_symlink():
            room = ROOT / link.name
            found |= {".".join(("hwtop", link.name, *init.parent.relative_to(room).parts))
                      for init in room.rglob("__init__.py") if "__pycache__" not in init.parts}
    return found


def wheel_packages(names: list[str]) -> set[str]:
    return {name.rsplit("/", 1)[0].replace("/", ".") for name in names if name.endswith("/__init__.py")}


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_name_and_every_package_of_the_tree(tmp_path: Path) -> None:
    """pyproject finds the packages (no list to keep): each sub-package of each room, and the stylesheet."""
    wheel = build("wheel", clean_copy(tmp_path / "src"), tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"hwtop", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    assert wheel_packages(names) == tree_packages()
    assert {"hwtop.advice.rules", "hwtop.demo.nvml"} <= tree_packages()
    stylesheets = {f"hwtop/{path.relative_to(ROOT)}" for path in ROOT.glob("*/*.tcss")}
    assert stylesheets and stylesheets <= set(names)
    assert "hwtop/tui/hwtop.tcss" in names and "hwtop/workload/job.py" in names
    assert not any(name.startswith(("hwtop/tests", "tests/")) for name in names)


@pytest.mark.slow
def test_the_sdist_leaves_tests_out_and_builds_the_same_wheel(tmp_path: Path) -> None:
    """The sdist is the package alone (the rooms as real folders under hwtop/, no tests/, no links): the wheel
    built from it holds the same files as the one built from the checkout."""
    source = clean_copy(tmp_path / "src")
    sdist = build("sdist", source, tmp_path / "sdist")
    with tarfile.open(sdist) as archive:
        members = archive.getmembers()
        tops = {member.name.split("/")[1] for member in members if "/" in member.name}
        assert not [member.name for member in members if member.issym() or member.islnk()]
        archive.extractall(tmp_path / "unpacked", filter="data")
    assert "tests" not in tops and not tops & {"tui", "model", "probes"}
    assert tops <= {"hwtop", "hwtop.egg-info", "PKG-INFO", "README.md", "pyproject.toml", "setup.cfg"}
    from_sdist = build("wheel", next((tmp_path / "unpacked").iterdir()), tmp_path / "from-sdist")
    from_tree = build("wheel", source, tmp_path / "from-tree")
    assert sorted(zipfile.ZipFile(from_sdist).namelist()) == sorted(zipfile.ZipFile(from_tree).namelist())


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
