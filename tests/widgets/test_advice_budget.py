"""The advice pane on a short terminal is built once a tick: the lines the row budget weighs (`natural`) are the
lines it then draws from, folded to the rows the budget gives, and the fold draws what a pane built for those
rows draws."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.advice.rules import RULE_IDS
from hwtop.model.finding import Finding
from hwtop.widgets.advice import AdvicePanel
from tests.small_screen import started
from tests.tui.screens import lived_through, story_snapshots


def drawn(panel: AdvicePanel, width: int) -> list[tuple[str, object]]:
    return [(line.plain, line.spans) for line in panel.lines(width)]


@given(titles=st.lists(st.text(min_size=1, max_size=60), max_size=6), rule=st.sampled_from(RULE_IDS),
       errors=st.dictionaries(st.sampled_from(RULE_IDS), st.text(max_size=30), max_size=2),
       width=st.integers(40, 200), rows=st.integers(0, 6), clearing=st.booleans())
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_pane_folded_to_the_budget_draws_what_a_pane_built_for_it_draws(
        titles: list[str], rule: str, errors: dict[str, str], width: int, rows: int, clearing: bool) -> None:
    findings = tuple(Finding(rule, "critical" if i == 0 else "warning", title, ("evidence " * 9,), ("fix",),
                             scope="job", cause=str(i), since=0.0, held_at=3.0 if clearing else None)
                     for i, title in enumerate(titles))
    folded, built = AdvicePanel(), AdvicePanel()
    for panel in (folded, built):
        panel.inline = False  # a short terminal
        panel.show(findings, 5.0, ("GPU memory", "data wait"), errors)
    folded.asked = min(3, max(1, len(findings)))  # as the main screen asks; `built` asks for nothing: built anew
    assert folded.natural(width) >= 1
    folded.rows = built.rows = rows
    assert drawn(folded, width) == drawn(built, width)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_short_terminal_builds_the_advice_pane_once_a_tick(monkeypatch) -> None:
    """100x30, the straggler story's two findings: the budget gives the pane one line, where it asks for two."""
    builds = []
    build = AdvicePanel._build

    def counted(panel: AdvicePanel, width: int, budget: int | None):
        builds.append(budget)
        return build(panel, width, budget)

    snapshots = story_snapshots("dgx-a100:straggler", seconds=48, step=4.0)
    app = lived_through(snapshots[:-2])
    async with app.run_test(size=(100, 30)) as pilot:
        await started(app, pilot)
        await pilot.press("p")  # paused: the ticks below are the test's
        panel = app.main.advice_panel
        monkeypatch.setattr(AdvicePanel, "_build", counted)
        for snapshot in snapshots[-2:]:
            app.main.show(app.session.advance(lambda snapshot=snapshot: snapshot))
            await pilot.pause()
        assert builds == [2, 2], builds  # once a tick, for the two lines it asks: none for the one it draws
        assert panel.asked == 2 and panel.rows == app.main.rows["advice"] == 1
        [line] = panel.cached_lines(panel.content_size.width)
        assert line.plain.startswith("Advice ▲ WARN GPU3 clocks throttled · GPU3 +1 more · a opens"), line.plain
