"""Helpers for tests of what a user sees on a small terminal: the screen as lines of text, and a focused job."""

from __future__ import annotations

from msgspec.structs import replace

from hwtop.model.job import JobProcess, JobSnapshot
from hwtop.model.snapshot import Snapshot
from hwtop.model.verdict import SHORT
from hwtop.tui import textual_compat
from tests.factories import host_snapshot

NEWLINE_COMMAND = "python train.py --note 'first line\nsecond line' --epochs 90"


def screen_lines(app) -> list[str]:  # noqa: ANN001 - a running App
    """The characters on the terminal, one string per row, as the compositor last drew them."""
    return [strip.text for strip in textual_compat.screen_strips(app.screen)]


JOINER = "_"


def rank_cells(line: str) -> list[str]:
    """A row of the job view's rank table split into its cells: a STATE of two words (`never launched`) is one."""
    for label in SHORT.values():
        line = line.replace(label, label.replace(" ", JOINER))
    return [cell.replace(JOINER, " ") if cell.replace(JOINER, " ") in SHORT.values() else cell
            for cell in line.split()]


def job_snapshot(workers: int = 3, ended: bool = False) -> Snapshot:
    """The host snapshot with a focused job: a launcher, one rank and `workers` DataLoader workers under it, the
    last of them with a newline in its command line."""
    launcher = JobProcess(50000, 1, "torchrun", "torchrun --nproc-per-node 1 train.py", "launcher", None, 0, "S",
                          1.0, 200 << 20, 4, (0, 1), alive=not ended, exit_code=0 if ended else None)
    rank = JobProcess(50001, 50000, "python", "python train.py --epochs 90", "rank 0", 0, 1, "R", 98.0, 6 << 30,
                      23, (0, 1), thread_cpus=(0, 1), numa_pages=((0, 1000),), read_bytes_per_s=1e6,
                      write_bytes_per_s=0.0, gpus=((0, 8 << 30),), alive=not ended, exit_code=1 if ended else None)
    children = tuple(
        JobProcess(50010 + i, 50001, "pt_data_worker", NEWLINE_COMMAND if i == workers - 1 else
                   "python train.py --epochs 90", "DataLoader worker", None, 2, "S", 30.0, 1 << 30, 1, (0, 1),
                   alive=not ended, exit_code=None)
        for i in range(workers))
    job = JobSnapshot("torchrun train.py", (50000,), "ended" if ended else "running", (launcher, rank, *children),
                      None if ended else 159.0, 9 << 30, ((0, 8 << 30),), pids_seen=2 + workers,
                      message="job ended; exit codes pid 50000: 0, pid 50001: 1" if ended else None)
    return replace(host_snapshot(), job=job)


async def started(app, pilot) -> None:  # noqa: ANN001 - an HwtopApp and textual's Pilot
    """The first frame drawn, with animations off: a scroll lands at once (what is checked is where, not how
    smoothly)."""
    app.animation_level = "none"
    await app.first_frame.wait()
    await pilot.pause()
