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
from tests.tui.screens import opened_report


@pytest.mark.parametrize("spec", fast_few([f"dgx-a100:{story}" for story in STORIES] + ["h200", "dgx-a100:r470"],
                                          lambda spec: spec in ("dgx-a100:starved", "h200")))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_b_opens_the_report_of_the_demo_machine_in_every_story(spec: str) -> None:
    app = HwtopApp(make_sampler(spec, no_gpu=False), interval=0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened_report(app, pilot)
        machine = spec.partition(":")[0] if spec.partition(":")[2] in STORIES else spec
        assert screen.text is not None and "could not be made" not in screen.text, screen.text
        assert screen.text.startswith(f"hwtop report · demo:{machine}\n")


@pytest.mark.parametrize(("source", "machine"), [
    ("demo:dgx-a100+starved", "dgx-a100"), ("demo:dgx-a100:r470+nccl-hang", "dgx-a100:r470"),
    ("demo:h200", "h200"), ("nvml", None), ("none", None), ("", None)])
def test_the_demo_machine_is_read_back_from_a_snapshot_source(source: str, machine: str | None) -> None:
    assert machine_of_source(source) == machine


def test_a_wrapped_report_line_continues_under_its_text() -> None:
    from hwtop.tui.report_screen import hanging

    report = ("Checks:\n  [ok   ] NVLink between GPUs: 8 of 8 GPU(s) with active NVLinks (12 links each) · NVLink 600 "
              "GB/s\nGraded against the guide's figures: where the guide is wrong, the check says so, in words.")
    lines = hanging(report, 40).plain.split("\n")
    assert lines[1].startswith("  [ok   ] NVLink") and lines[2].startswith(" " * 10) and lines[2][10] != " "
    graded = next(i for i, line in enumerate(lines) if line.startswith("Graded"))
    assert lines[graded + 1].startswith("  ") and all(len(line) <= 40 for line in lines), lines


@pytest.mark.slow  # an app and the report's facts (the rule itself: the test above)
async def test_at_80x24_every_wrapped_line_of_the_report_is_indented() -> None:
    """Issue 48: the box report's wrapped lines restarted at column 0."""
    from tests.small_screen import screen_lines

    app = HwtopApp(make_sampler("dgx-a100", no_gpu=False), interval=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.first_frame.wait()
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        while screen.text is None:
            await pilot.pause(0.05)
        await pilot.pause()
        starts = {line.strip()[:20] for line in screen.text.split("\n") if line.strip()}
        shown = [line[2:-3].rstrip() for line in screen_lines(app)[1:-2] if line.startswith("│")]
        assert shown
        for line in shown:
            assert not line or line.startswith("  ") or line.strip()[:20] in starts or \
                any(start.startswith(line.strip()[:20]) for start in starts), line
