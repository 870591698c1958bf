"""The advice pane never contradicts the panels beside it: a finding whose condition stopped holding, waiting
out its clear time, is drawn as clearing with the time its evidence is from."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.advice.rules import RULE_IDS
from hwtop.model.finding import Finding
from hwtop.tui.app import HwtopApp
from hwtop.widgets.advice import AdvicePanel
from tests.advice_timeline import Timeline
from tests.factories import ScriptedSource


def cooled_down_frames():
    """GPU0 of an RTX 3090 held back by heat for 8 s, then cool for 4 s (gpu-throttled clears after 10 s)."""
    t = Timeline("rtx3090")
    t.fake.force_reasons(0, "sw_thermal")
    frames = [t.tick() for _ in range(8)]
    t.fake.force_reasons(0)
    return frames + [t.tick() for _ in range(4)]


def warmed_app(frames) -> HwtopApp:
    app = HwtopApp(ScriptedSource(frames))
    for frame in frames[:-1]:
        app.session.advance(lambda frame=frame: frame)
    return app


def text_of(panel: AdvicePanel) -> str:
    return "\n".join(line.plain for line in panel.lines(panel.content_size.width))


async def test_a_finding_past_its_condition_shows_as_clearing_with_its_time(utc) -> None:
    frames = cooled_down_frames()
    app = warmed_app(frames)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        panel = app.query_one(AdvicePanel)
        (finding,) = panel.findings
        assert finding.id == "gpu-throttled" and finding.held_at == frames[7].time
        text = text_of(panel)
        held = time.strftime("%H:%M:%S", time.gmtime(frames[7].time))
        assert "GPU0 clocks throttled · GPU0 · not seen for 4 s [gpu-throttled]" in text
        assert f"at {held}: GPU0 clocks held back by SW thermal" in text
        assert 0 not in app.main.panels["gpu"].marked  # the GPU recovered: not marked red beside a finding that waits


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_clearing_look(snap_compare, utc) -> None:
    async def first_frame(pilot) -> None:
        await pilot.app.first_frame.wait()
        await pilot.pause()

    assert snap_compare(warmed_app(cooled_down_frames()), terminal_size=(120, 32), run_before=first_frame)


BADGES = {"critical": "✖ CRIT", "warning": "▲ WARN", "info": "● INFO"}


@given(titles=st.lists(st.text(min_size=1, max_size=90), min_size=1, max_size=6),
       scope=st.sampled_from(["", "job", "GPU0-7", "ranks 0, 3", "GPU12"]),
       rule=st.sampled_from(RULE_IDS), width=st.integers(60, 200), rows=st.integers(1, 5),
       inline=st.booleans())
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_headlines_fit_the_width_keep_the_rule_id_whole_and_name_every_cause_they_can(
        titles: list[str], scope: str, rule: str, width: int, rows: int, inline: bool) -> None:
    findings = tuple(Finding(rule, "warning", title, ("evidence " * 20,), ("fix",), scope=scope, cause=str(i),
                             since=0.0) for i, title in enumerate(titles))
    panel = AdvicePanel()
    panel.inline, panel.rows = inline, rows
    panel.show(findings, 5.0, ("watching",), {})
    lines = [line for line in panel.lines(width)]
    assert len(lines) <= max(rows, 1) and all(line.cell_len <= width for line in lines)
    if rows == 1 and not inline:
        return  # one line: the first cause, and how many more
    heads = [line.plain for line in lines if line.plain.startswith("▸")]
    assert len(heads) == (len(findings) if len(findings) <= rows else rows - 1)
    assert all(f" [{rule}]" in head and BADGES["warning"] in head for head in heads)
    if not inline or len(findings) > rows:
        assert all(head.endswith(f"[{rule}]") for head in heads)  # headlines only
    if len(findings) > rows:
        assert lines[-1].plain.strip() == f"+{len(findings) - len(heads)} more · a opens them all"


async def test_a_short_terminal_shows_a_headline_per_cause() -> None:
    from tests.widgets.test_advice import troubled_frames

    app = warmed_app(troubled_frames())
    async with app.run_test(size=(80, 24)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        panel = app.query_one(AdvicePanel)
        lines = text_of(panel).splitlines()
        assert len(lines) == 2 and panel.region.height == 2
        assert lines[0].startswith("▸ ▲ WARN Training waits on data loading · job")
        assert lines[0].endswith("[gpu-starved]")
        assert lines[1].startswith("▸ ▲ WARN GPU0 PCIe link below its maximum · GPU0")
        assert lines[1].endswith("[pcie-degraded]")
        assert app.main.panels["gpu"].region.height >= 3 and app.main.panels["gpu"].region.bottom <= 24


def test_rows_the_findings_leave_show_the_latest_of_what_changed(utc) -> None:
    from hwtop.model.finding import Change

    finding = Finding("gpu-throttled", "warning", "GPU2 clocks throttled", ("held back",), ("cool it",),
                      scope="GPU2", since=100.0, held_at=130.0)
    changes = tuple(Change(100.0 + 10 * i, what, "cuda-oom", "warning", "GPU3 memory nearly full", scope="GPU3")
                    for i, what in enumerate(("raised", "cleared", "raised")))
    panel = AdvicePanel()
    panel.show((finding,), 130.0, ("w",), {}, changes)
    assert len(panel.lines(120)) == 1  # no budget given: the findings only
    panel.rows = 8
    plain = [line.plain for line in panel.lines(120)]
    raised = "raised  WARNING cuda-oom · GPU3: GPU3 memory nearly full"
    assert plain[1:] == ["what changed", f"  00:01:40 {raised}", "  00:01:50 cleared cuda-oom · GPU3",
                         f"  00:02:00 {raised}"]
    panel.rows = 3
    assert [line.plain for line in panel.lines(120)][1:] == ["what changed", plain[-1]]


async def test_a_critical_finding_on_a_short_terminal_takes_no_border_rows() -> None:
    """The row budget counts no border for the pane of a short terminal: a critical finding adds none either."""
    from hwtop.model.workload import OomEvent
    from tests.advice_timeline import rank, workload

    t = Timeline()
    job = workload(rank(0, wait=0.8), oom=OomEvent(rank=0, batch_size=8, time=t.time + 1))
    app = warmed_app([t.tick(workload=job) for _ in range(7)])
    async with app.run_test(size=(80, 24)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        panel = app.query_one(AdvicePanel)
        assert panel.has_class("critical") and panel.findings[0].severity == "critical"
        assert panel.region.height == len(text_of(panel).splitlines()) == 2
