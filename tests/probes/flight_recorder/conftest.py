"""The real dumps under tests/fixtures/flight_recorder/ (made by make.py there with the torch installed here), laid
out as torch writes them: `<prefix><rank>`, each with the mtime it was written at."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "flight_recorder"
WORLD = 3


def lay_out(scenario: str, folder: Path, prefix: str = "fr_rank_") -> dict[int, float]:
    """The scenario's dumps copied to `folder/<prefix><rank>`, with their times; rank -> dumped at."""
    times = {int(rank): at for rank, at in json.loads((FIXTURES / scenario / "dumped_at.json").read_text()).items()}
    for rank, at in times.items():
        target = folder / f"{prefix}{rank}"
        shutil.copyfile(FIXTURES / scenario / f"rank_{rank}", target)
        os.utime(target, (at, at))
    return times


def fake_proc(root: Path, pid: int, started: float, *, fs_root: str = "/", uid: int | None = None) -> None:
    """A /proc with one process that started at `started` (wall clock): its stat, its user (status's Uid line: real,
    effective, saved, file system), its view of the file system (`root`, `cwd`: links to `fs_root`, as the kernel's
    are to the process's root) and the box's btime."""
    ticks = os.sysconf("SC_CLK_TCK")
    btime = int(started) - 1000
    folder = root / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    fields = ["S", *["0"] * 18, str(round((started - btime) * ticks))]
    (folder / "stat").write_text(f"{pid} (python) " + " ".join(fields) + " 0 0\n")
    (folder / "maps").write_text("")
    user = os.getuid() if uid is None else uid
    (folder / "status").write_text(f"Name:\tpython\nUid:\t{user}\t{user}\t{user}\t{user}\nGid:\t0\t0\t0\t0\n")
    for name in ("root", "cwd"):
        if not (folder / name).is_symlink():
            os.symlink(fs_root, folder / name)
    (root / "stat").write_text(f"cpu 1 2 3\nbtime {btime}\n")
