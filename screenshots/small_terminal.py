"""Screenshots at 80x24, the terminal a new user has (issue 24): the `?` help, the job view, and the process table
with a command line that is long and holds a newline. The help is the real app on the rtx3090 demo; the job view
and the process table are this machine (GPUs off), watching a small process tree started here (a parent and two
children, each child's command line with a newline in it), since a demo machine lists only its own processes.

    python -m screenshots.small_terminal      # SVGs (and PNGs where cairosvg is installed) under screenshots/
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

from hwtop.cli.main import make_sampler
from hwtop.tui.app import HwtopApp

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = (80, 24)
DEMO = "rtx3090"
MARKER = "hwtop-small-terminal-shot"
# Each child: `python3 -c` with a script of two lines (the newline is in its command line), then a long option.
CHILD = ("python3", "-c", "#\nimport time; time.sleep(120)", MARKER, "--output-dir=/scratch/" + "run" * 20)
PARENT = ("#\nimport subprocess, sys, time\n"
          f"children = [subprocess.Popen({list(CHILD)!r}, executable=sys.executable) for _ in range(2)]\n"
          "time.sleep(120)\n")


def start_tree() -> subprocess.Popen[bytes]:
    """The parent and its two children, in a session of their own so one killpg ends them all."""
    tree = subprocess.Popen(["python3", "-c", PARENT, MARKER], executable=sys.executable, start_new_session=True)
    for _ in range(100):  # both children started
        if _children(tree.pid) >= 2:
            break
        import time

        time.sleep(0.05)
    return tree


def _children(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return len(handle.read().split())
    except OSError:
        return 0


async def _settle(app: HwtopApp, pilot, ticks: int) -> None:  # noqa: ANN001 - textual's Pilot
    target = app.ticks + ticks
    while app.ticks < target:
        await pilot.pause(0.2)


async def capture_help(name: str = "help-80x24") -> str:
    app = HwtopApp(make_sampler(DEMO, no_gpu=False), interval=0.5)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(app, pilot, 4)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        return app.save_screenshot(filename=f"{name}.svg", path=HERE)


async def capture_job(root: int, name: str = "job-80x24") -> str:
    from hwtop.probes.job import JobProbe
    from hwtop.session.sampler import Sampler

    sampler = Sampler(gpu=None, job=JobProbe(roots=(root,)))  # the tree is this machine's, not a demo host's
    app = HwtopApp(sampler, interval=0.5, open_job=True)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(app, pilot, 6)
        return app.save_screenshot(filename=f"{name}.svg", path=HERE)


async def capture_processes(name: str = "processes-newline-80x24") -> str:
    app = HwtopApp(make_sampler(None, no_gpu=True), interval=0.5)  # this machine's processes, filtered to the tree
    async with app.run_test(size=SIZE) as pilot:
        await _settle(app, pilot, 4)
        await pilot.press("slash", *MARKER, "enter")  # the tree's rows only: the rest of this box is not the point
        await pilot.press("T")  # children under their parent
        await _settle(app, pilot, 2)
        return app.save_screenshot(filename=f"{name}.svg", path=HERE)


async def capture_all() -> list[str]:
    tree = start_tree()
    try:
        return [await capture_help(), await capture_job(tree.pid), await capture_processes()]
    finally:
        os.killpg(tree.pid, signal.SIGKILL)
        tree.wait()


def main() -> None:
    from screenshots.regenerate import to_png  # the same PNG conversion as the other screenshots

    for svg in asyncio.run(capture_all()):
        print(svg, to_png(svg) or "")


if __name__ == "__main__":
    main()
