"""The fleet view at 80x24: no column cut mid-word, TOP FINDING on the screen and ADDRESS a key away, a host
that never answered named by its address and port, and `?` answering as everywhere else."""

from __future__ import annotations

import pytest

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.model import FindingRow, GpuRow, HostView
from hwtop.fleet.sources import Ask, Round
from hwtop.tui.fleet.app import FleetApp
from hwtop.tui.help import HelpScreen
from tests.small_screen import screen_lines
from tests.waiting import pilot_until

DEAD = "http://127.0.0.1:39001/metrics"


class StillFleet:
    """A FleetSource whose hosts do not change: a DGX with a finding, an H200 without, one that never answered."""

    description = "3 exporters"
    interval = 1.0
    job = None
    reads_jobs = False
    thresholds = Thresholds()

    def __init__(self) -> None:
        gpus = tuple(GpuRow(str(i), "NVIDIA A100-SXM4-80GB", util=27.0, fb_used_mib=62_000.0,
                            fb_total_mib=81_920.0) for i in range(8))
        self.views = (
            HostView("http://127.0.0.1:39000/metrics", "dgx-a100-demo", gpus, (FindingRow("warning", "gpu-starved",
                                                                                          "GPU0-7"),),
                     hwtop=True, cpu_busy=6.0, trend=(20.0, 27.0)),
            HostView("http://127.0.0.1:39002/metrics", "h200-demo",
                     (GpuRow("0", "NVIDIA H200", util=96.0, fb_used_mib=98_000.0, fb_total_mib=143_771.0),),
                     hwtop=True, cpu_busy=3.0),
            HostView(DEAD, error="unreachable: Connection refused"),
        )

    def read(self, ask: Ask) -> Round:
        return Round(self.views)

    def close(self) -> None:
        pass


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_fleet_at_80x24_keeps_its_columns_readable_and_answers_help() -> None:
    app = FleetApp(StillFleet())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot_until(pilot, lambda: app.hosts_screen.table.row_count >= 3)
        await pilot.pause()
        lines = screen_lines(app)
        assert lines[0].rstrip().endswith("3 exporters · every 1s"), lines[0]
        assert lines[1].rstrip() == "2/3 up · 1 down · 9 GPUs · 8 idle · 580/780 GiB · util 35% · gpu-starved 1", \
            lines[1]
        header = next(line for line in lines if "HOST" in line)
        assert "GPU MEM" in header and header.rstrip().endswith("TOP FINDING ▼"), header
        dgx = next(line for line in lines if "dgx-a100-demo" in line)
        assert "484/640G" in dgx and "WARNING gpu-starved" in dgx
        assert any(line.startswith(" 127.0.0.1:39001 ") for line in lines), "\n".join(lines)
        await pilot.press("right", "right", "right", "right")
        await pilot.pause()
        assert any("127.0.0.1:39000" in line for line in screen_lines(app))  # the ADDRESS column, scrolled to
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert any("open the selected host" in line for line in screen_lines(app))
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_at_120_columns_top_finding_is_whole_and_a_down_hosts_status_gives_way() -> None:
    """The columns give way by importance, not by position: a down host's long status is cut before the finding."""
    from msgspec.structs import replace

    fleet = StillFleet()
    throttled = (FindingRow("warning", "gpu-throttled", "GPU0-7"), FindingRow("warning", "gpu-starved", "GPU0-7"))
    fleet.views = (replace(fleet.views[0], findings=throttled), *fleet.views[1:])
    app = FleetApp(fleet)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot_until(pilot, lambda: app.hosts_screen.table.row_count >= 3)
        await pilot.pause()
        lines = screen_lines(app)
        dgx = next(line for line in lines if "dgx-a100-demo" in line)
        assert "WARNING gpu-throttled · GPU0-7 (+1)" in dgx, dgx
        assert any("unreachable: Conn" in line for line in lines), "\n".join(lines)
