"""Point 5 of issue 48: in every story, at 80x24, 120x40 and 200x60, each figure a finding cites (a rank's wait, a
GPU's memory, a port's rate) reads the same where a panel shows it: the main screen and the job view (j), read off
the screen. A few cases run in the fast suite, the rest with the slow ones (tests/matrix.py)."""

from __future__ import annotations

import pytest

from hwtop.demo.story import STORIES
from hwtop.tui.job_screen import JobScreen
from tests.demo.screen_figures import Figures, cited, compare, shown
from tests.matrix import fast_few
from tests.small_screen import screen_lines, started
from tests.tui.screens import lived_through, story_snapshots

SIZES = ((80, 24), (120, 40), (200, 60))
# Each story where its finding is raised (nccl-hang: spinning as well as stalled; oom: memory at its fullest).
TOLD_AT = {"steady": 40.0, "starved": 30.0, "nccl-hang": 70.0, "oom": 50.0, "amp": 40.0, "thermal": 60.0,
           "straggler": 60.0, "nccl-ethernet": 90.0}
# What each story's findings cite that a panel shows too, at any size: a check that compared none of it passed
# for the wrong reason.
MUST_COMPARE = {"straggler": {"coll"}, "nccl-hang": {"coll"}, "starved": {"data"}, "oom": {"gpu_mem", "pid_mem"},
                "nccl-ethernet": {"port"}}
FAST = {("straggler", (120, 40))}
CASES = [(story, size) for story in sorted(TOLD_AT) for size in SIZES]


def test_every_story_is_checked() -> None:
    assert set(TOLD_AT) == {"steady", *STORIES}


@pytest.mark.parametrize(("story", "size"), fast_few(CASES, lambda case: case in FAST, arguments=2))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_what_a_finding_cites_reads_the_same_on_screen(story: str, size: tuple[int, int]) -> None:
    spec = "dgx-a100" if story == "steady" else f"dgx-a100:{story}"
    app = lived_through(story_snapshots(spec, seconds=TOLD_AT[story], step=5.0))
    async with app.run_test(size=size) as pilot:
        await started(app, pilot)
        assert app.frame is not None and app.snapshot is not None
        workload = app.snapshot.workload
        ranks = [r.rank for r in workload.ranks] if workload is not None else []
        main = screen_lines(app)
        screens = shown(main, f"{size} main")
        if app.snapshot.job is not None:
            await pilot.press("j")
            await pilot.pause()
            assert isinstance(app.screen, JobScreen)
            job = shown(screen_lines(app), f"{size} job view")
            for key, values in job.values.items():
                screens.values.setdefault(key, []).extend(values)
        said = cited(app.frame.findings, ranks)
        verdict = compare(said, screens)
        assert not verdict.contradictions, "\n".join(verdict.contradictions)
        kinds = MUST_COMPARE.get(story)
        if kinds is not None:
            assert any(what.split("_range")[0] in kinds for what, _ in said.values), (story, said.values.keys())
            assert any(what in kinds for what, _ in screens.values), ("\n".join(main), screens.values.keys())
            assert verdict.compared, "nothing compared"
        if app.snapshot.job is not None and len(app.snapshot.job.ranks) > 1:  # the rank table was read, whatever
            assert any("job view" in where for values in screens.values.values() for _, where in values), \
                "the job view's rank table was not read"  # its columns (HOST, NCCL, LAG at 80 columns too)


def test_a_rank_line_that_says_wait_0_beside_a_finding_about_waiting_is_caught() -> None:
    """The check catches what issue 48 saw: `rank 0-7 x8 ... wait 0%` under "the other 7 ranks wait in
    collectives 55-57%" and "rank 3 ... waits in them 3%"."""
    from hwtop.model.finding import Finding

    finding = Finding("rank-straggler", "warning", "Rank 3 holds the job back: the others wait for it",
                      ("the other 7 ranks wait in collectives 55-57% of their stack samples (median 56%)",
                       "rank 3 (pid 41003, host box) waits in them 3% (limit 33% of the others'): it is the one"),
                      ())
    said = cited((finding,), list(range(8)))
    old = shown(["│ rank 0-7 x8 step    92   520.0 ms    492.3 samples/s wait   0% loss  7.643 bf16 mem  50.0G │"],
                "120x40")
    assert len(compare(said, old).contradictions) == 8
    new = shown(["│ rank 0-2 x3 step   141   520.0ms    492.3/s data   0% coll  55% mem  61.0G  │",
                 "│ rank 3      step   141   520.0ms    492.3/s data   0% coll   3% mem  61.0G  │",
                 "│ rank 4-7 x4 step   141   520.0ms    492.3/s data   0% coll  56% mem  61.0G  │"], "120x40")
    verdict = compare(said, new)
    assert not verdict.contradictions and verdict.compared == 8
    wrong = shown(["│ rank 3      step   141   520.0ms    492.3/s data   0% coll  55% mem  61.0G  │"], "80x24")
    assert len(compare(said, wrong).contradictions) == 1
    assert isinstance(Figures(), Figures)
