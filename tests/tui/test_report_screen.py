"""`b` opens the box report on every demo machine, in every story: the report grades the machine the story runs
on (a story changes what the machine does, not what it is)."""

from __future__ import annotations

import pytest

from hwtop.cli.main import make_sampler
from hwtop.demo.machine import machine_of_source
from hwtop.demo.story import STORIES
from hwtop.tui.app import HwtopApp
from hwtop.tui.report_screen import ReportScreen
from tests.matrix import fast_few


@pytest.mark.parametrize("spec", fast_few([f"dgx-a100:{story}" for story in STORIES] + ["h200", "dgx-a100:r470"],
                                          lambda spec: spec in ("dgx-a100:starved", "h200")))
async def test_b_opens_the_report_of_the_demo_machine_in_every_story(spec: str) -> None:
    app = HwtopApp(make_sampler(spec, no_gpu=False), interval=0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        for _ in range(200):
            await pilot.pause(0.05)
            if screen.text is not None:
                break
        machine = spec.partition(":")[0] if spec.partition(":")[2] in STORIES else spec
        assert screen.text is not None and "could not be made" not in screen.text, screen.text
        assert screen.text.startswith(f"hwtop report · demo:{machine}\n")


@pytest.mark.parametrize(("source", "machine"), [
    ("demo:dgx-a100+starved", "dgx-a100"), ("demo:dgx-a100:r470+nccl-hang", "dgx-a100:r470"),
    ("demo:h200", "h200"), ("nvml", None), ("none", None), ("", None)])
def test_the_demo_machine_is_read_back_from_a_snapshot_source(source: str, machine: str | None) -> None:
    assert machine_of_source(source) == machine
