"""`/` and sort reach every process the probe saw, and the table says how many it holds of how many there are:
200 processes in a /proc of files (the real ProcessProbe over them), the 60 busiest read in full, one idle
process at 0 % CPU found by its pid and by its name."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from hwtop.probes.processes import CLOCK_TICKS, ProcessProbe
from hwtop.tui.app import HwtopApp
from hwtop.widgets.processes import HELD
from tests.factories import ScriptedSource, host_snapshot
from tests.sysfs_trees import write

IDLE_PID = 4242  # at 0 % CPU, smaller in memory than any other: the last of the 200 by CPU or by RSS


def stat_line(pid: int, name: str, utime: int, rss_pages: int) -> str:
    fields = ["S", "1"] + ["0"] * 9 + [str(utime), "0"] + ["0"] * 4 + ["1", "0", "1000", "0", str(rss_pages)]
    return f"{pid} ({name}) " + " ".join(fields + ["0"] * 30) + "\n"


def busy_box(root: Path, ticks: int) -> None:
    """199 processes that used CPU, each its own share, and the idle one."""
    for pid in range(5000, 5199):
        write(root, f"proc/{pid}/stat", stat_line(pid, "busy", ticks * (pid - 4990), 1000))
        write(root, f"proc/{pid}/cmdline", f"python\0worker.py\0{pid}\0")
    write(root, f"proc/{IDLE_PID}/stat", stat_line(IDLE_PID, "quiet_daemon", 7, 10))
    write(root, f"proc/{IDLE_PID}/cmdline", "quiet_daemon\0--serve\0")


def probed(root: Path):  # noqa: ANN201 - a Snapshot
    now = [0.0]
    probe = ProcessProbe(str(root), clock=lambda: now[0])
    busy_box(root, 0)
    probe.read()
    busy_box(root, CLOCK_TICKS // 100)
    now[0] += 1.0
    return replace(host_snapshot(), processes=probe.read())


def shown(app: HwtopApp) -> list[int]:
    return [row.pid for row in app.main.process_table.rows_shown]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_slash_finds_a_process_at_0_percent_among_200_by_pid_and_by_name(tmp_path: Path) -> None:
    snapshot = probed(tmp_path)
    idle = next((p for p in snapshot.processes if p.pid == IDLE_PID), None)
    assert idle is not None and idle.cpu_percent == 0.0  # the probe lists it: the cap is on details, not rows
    app = HwtopApp(ScriptedSource([snapshot]), interval=3600.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        table = app.main.process_table
        assert len(shown(app)) == HELD and IDLE_PID not in shown(app)
        assert str(table.border_title) == f"Processes · {HELD} of 200"  # where the user looks: N of M
        await pilot.press("slash", *str(IDLE_PID))
        await pilot.pause()
        assert shown(app) == [IDLE_PID] and str(table.border_title) == "Processes · 1 of 200"
        await pilot.press("escape", "slash", *"quiet_d")
        await pilot.pause()
        assert shown(app) == [IDLE_PID]
        await pilot.press("escape", "slash", *"busy")  # their name: each listed by it before its details are read
        await pilot.pause()
        assert len(shown(app)) == HELD and str(table.border_title) == f"Processes · {HELD} of 199 matching"


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_sort_orders_every_process_not_only_those_held(tmp_path: Path) -> None:
    """`s` to memory, then `r`: the smallest first, the idle process that no CPU order holds at the top."""
    app = HwtopApp(ScriptedSource([probed(tmp_path)]), interval=3600.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        await pilot.press("s", "r")  # by RSS, then reversed: the smallest first
        await pilot.pause()
        assert app.main.process_table.sort_key == "rss" and shown(app)[0] == IDLE_PID
