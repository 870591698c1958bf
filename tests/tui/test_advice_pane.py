"""The advice pane in the App, on a whole demo machine's story: one finding per cause."""

from __future__ import annotations

import pytest

from hwtop.tui.app import HwtopApp
from hwtop.widgets.advice import AdvicePanel
from tests.advice_timeline import play_story
from tests.factories import ScriptedSource
from tests.matrix import fast_few


def warmed_app(snapshots) -> HwtopApp:
    app = HwtopApp(ScriptedSource(snapshots))
    for snapshot in snapshots[:-1]:  # the app's own engine lives through the story up to its last tick
        app.session.advance(lambda snapshot=snapshot: snapshot)
    return app


def text_of(panel: AdvicePanel) -> str:
    return "\n".join(line.plain for line in panel.lines(panel.content_size.width))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_fp32_on_eight_gpus_is_one_finding_covering_them_all() -> None:
    frames = play_story("amp", 30)
    app = warmed_app([f.snapshot for f in frames])
    async with app.run_test(size=(200, 60)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        panel = app.query_one(AdvicePanel)
        (finding,) = [f for f in panel.findings if f.id == "amp-available"]
        assert finding.covers == tuple(f"GPU{i}" for i in range(8)) and finding.scope == "GPU0-7"
        assert finding.gpus == tuple(range(8))
        text = text_of(panel)
        assert text.count("[amp-available]") == 1 and "fp32 training on a GPU with Tensor Cores · GPU0-7" in text
        assert "Advice · 1 finding " in str(panel.border_title)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_advice_screen_tells_what_was_raised_and_cleared_when() -> None:
    from hwtop.tui.advice_screen import AdviceScreen
    from tests.advice_timeline import Timeline, rank, workload

    t = Timeline()
    snapshots = [t.tick(workload=workload(rank(0, wait=w))) for w in [0.85] * 12 + [0.05] * 30]
    app = warmed_app(snapshots)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert not app.query_one(AdvicePanel).findings  # all cleared by now: the pane alone would not say
        await pilot.press("a", "a")  # focus the pane, then everything on a screen of its own
        await pilot.pause()
        assert isinstance(app.screen, AdviceScreen)
        body = str(app.screen.body.render())
        assert "What changed" in body
        lines = body.splitlines()
        raised = next(i for i, line in enumerate(lines) if "raised  WARNING gpu-starved · job" in line)
        cleared = next(i for i, line in enumerate(lines) if "cleared gpu-starved · job after" in line)
        assert raised < cleared


@pytest.mark.parametrize(("size", "told"), [((200, 60), True), ((140, 40), False)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_tall_box_shows_the_latest_of_what_changed_in_the_pane(size: tuple[int, int], told: bool) -> None:
    from tests.widgets.test_advice import troubled_frames

    app = warmed_app(troubled_frames())
    async with app.run_test(size=size) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        panel = app.query_one(AdvicePanel)
        lines = text_of(panel).splitlines()
        assert len(panel.findings) == 2 and lines[0].startswith("▸ ▲ WARN")
        assert ("what changed" in lines) is told
        if told:
            assert [line.split()[1:3] for line in lines[3:]] == [["raised", "WARNING"], ["raised", "WARNING"]]
            assert panel.region.height == len(lines) + 2  # the layout gave it the rows it drew


@pytest.mark.parametrize("size", fast_few([(80, 24), (120, 40), (200, 60)], lambda size: size == (120, 40)))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_one_a_shows_the_selected_finding_open_at_every_size(size: tuple[int, int]) -> None:
    """The first `a` opens the selected finding where it fits in the pane, else on the advice screen: at 120x40
    it closed the evidence drawn inline and opened nothing; a second `a` was needed (issue 48)."""
    from hwtop.tui.advice_screen import AdviceScreen
    from tests.small_screen import started
    from tests.tui.screens import lived_through, story_snapshots

    app = lived_through(story_snapshots("dgx-a100:straggler", seconds=60.0, step=5.0))
    async with app.run_test(size=size) as pilot:
        await started(app, pilot)
        assert app.frame is not None and len(app.frame.findings) >= 2
        await pilot.press("a")
        await pilot.pause()
        await pilot.pause()
        panel = app.main.advice_panel
        opened_here = bool(panel.expanded) and "seen" in text_of(panel)  # its evidence drawn, under its label
        assert isinstance(app.screen, AdviceScreen) or opened_here, (app.screen, panel.expanded, text_of(panel))
