"""The advice pane in the App: findings from the engine, expanded by key and by click, marks on the GPU, the
empty state, and a finding clearing while the app runs."""

from __future__ import annotations

import pytest
from textual.geometry import Offset

from hwtop.tui.app import HwtopApp
from hwtop.widgets.advice import AdvicePanel
from tests.advice_timeline import Timeline, rank, workload
from tests.factories import ScriptedSource, SequenceSource, host_snapshot


def text_of(widget) -> str:
    return "\n".join(line.plain for line in widget.lines(widget.content_size.width))


def troubled_frames(count: int = 8):
    """A busy RTX 3090 on a Gen3 x8 link, and an embedded job waiting on data 80% of each step."""
    t = Timeline("rtx3090")
    t.fake.set_pcie_link(0, 3, 8)
    job = workload(rank(0, wait=0.8), num_workers=0)
    return [t.tick(workload=job) for _ in range(count)]


def warmed_app(frames) -> HwtopApp:
    app = HwtopApp(ScriptedSource(frames))
    for frame in frames[:-1]:  # the engine has seen the past the scripted source's history holds
        app.session.advance(lambda frame=frame: frame)
    return app


async def started(app: HwtopApp, pilot) -> None:
    await app.first_frame.wait()
    await pilot.pause()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_findings_listed_by_severity_with_their_evidence() -> None:
    app = warmed_app(troubled_frames())
    async with app.run_test(size=(140, 40)) as pilot:
        await started(app, pilot)
        panel = app.query_one(AdvicePanel)
        text = text_of(panel)
        assert "Training waits on data loading" in text and "GPU0 PCIe link below its maximum" in text
        assert "waits for its next batch 80% of the time" in text  # collapsed: the first evidence inline
        assert "fix" not in text
        assert 0 in app.main.panels["gpu"].marked
        assert "2 findings" in str(panel.border_title)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_key_and_a_click_expand_findings() -> None:
    app = warmed_app(troubled_frames())
    async with app.run_test(size=(140, 45)) as pilot:
        await started(app, pilot)
        panel = app.query_one(AdvicePanel)
        await pilot.press("a")
        await pilot.pause()
        assert panel.has_focus
        first, second = panel.findings
        assert panel.expanded == {first.key}
        text = text_of(panel)
        assert first.id == "gpu-starved" and second.id == "pcie-degraded"
        assert "seen  the training step waits" in text and "DataLoader(num_workers=" in text
        assert "lspci -vv -s" not in text
        rows = [key for key, _ in panel._rows]
        await pilot.click(AdvicePanel, offset=Offset(4, 1 + rows.index(second.key)))  # border row + its row
        await pilot.pause()
        assert panel.expanded == {first.key, second.key}
        assert "fix   lspci -vv -s 0000:17:00.0" in text_of(panel)
        await pilot.press("enter")  # the cursor is on the clicked finding: enter closes it
        await pilot.pause()
        assert panel.expanded == {first.key}


async def test_empty_pane_says_what_it_watches() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(200, 40)) as pilot:
        await started(app, pilot)
        panel = app.query_one(AdvicePanel)
        text = text_of(panel)
        assert "no problems seen" in text and "GPU memory and OOM events" in text
        assert panel.has_class("empty") and not panel.has_focus


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_finding_appears_then_clears_while_the_app_runs() -> None:
    t = Timeline()
    frames = [t.tick(workload=workload(rank(0, wait=0.8))) for _ in range(8)]
    frames += [t.tick(workload=workload(rank(0, wait=0.05))) for _ in range(20)]
    app = HwtopApp(SequenceSource(frames), interval=0.02)
    seen = []
    async with app.run_test(size=(120, 30)) as pilot:
        while app.ticks < len(frames) + 1:
            await pilot.pause(0.02)
            seen.append(bool(app.query_one(AdvicePanel).findings))
        assert "no problems seen" in text_of(app.query_one(AdvicePanel))
    assert any(seen) and not seen[0]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_short_terminal_opens_findings_on_their_own_screen() -> None:
    from hwtop.tui.advice_screen import AdviceScreen

    app = warmed_app(troubled_frames())
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AdviceScreen)
        body = str(app.screen.body.render())
        assert "DataLoader(num_workers=" in body and "lspci -vv -s 0000:17:00.0" in body
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AdviceScreen)
        await pilot.click(AdvicePanel, offset=Offset(10, 0))  # a click on its one line asks for the same screen
        await pilot.pause()
        assert isinstance(app.screen, AdviceScreen)


@pytest.mark.parametrize(("text", "cells", "shown"), [
    ("abc", 5, "abc"), ("abcdef", 4, "abc…"), ("abc", 0, ""), ("abc", 1, "…"), ("日本語テキスト", 5, "日本…"),
    (" · watching " + "y" * 600, 20, " · watching yyyyyyy…")])
def test_the_watching_line_is_clipped_to_its_cells(text: str, cells: int, shown: str) -> None:
    from rich.cells import cell_len

    from hwtop.widgets.advice import _clip

    assert _clip(text, cells) == shown and cell_len(shown) <= max(0, cells)


def test_what_changed_names_a_finding_still_shown_by_its_one_title() -> None:
    """A finding whose title grew more exact after it was raised (the rank it waits for named once the stacks
    say it) reads the same in the pane and on its "what changed" line (issue 48)."""
    from hwtop.model.finding import Change, Finding

    finding = Finding("collective-hang", "critical", "Rank 5 never reached the collective the others wait in",
                      ("rank 5 is running",), (), scope="job")
    raised = Change(1_800_000_000.0, "raised", "collective-hang", "critical", "The job's ranks wait in a collective",
                    scope="job", figure="stalled")
    panel = AdvicePanel()
    panel.inline, panel.timeline_rows = True, 4
    panel.keep((finding,), 1_800_000_010.0, (), None, (raised,))
    text = "\n".join(line.plain for line in panel.lines(300))
    assert text.count("Rank 5 never reached the collective") == 2 and "The job's ranks wait" not in text, text
