"""What the monitor's first frame waits for, kept off its path: the GPU readers' modules and ctypes on a box
without the NVIDIA library, the advice rules and their engine (they run from the second tick), and a second styling
of every widget at the main screen's first resume."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from textual import events
from textual.css.stylesheet import Stylesheet

from hwtop.probes.nvml.session import nvml_library_loads
from hwtop.tui.app import HwtopApp
from hwtop.tui.main_screen import MainScreen
from hwtop.widgets.advice import NOT_YET
from tests.factories import ScriptedSource, host_snapshot
from tests.small_screen import screen_lines
from tests.tui.screens import story_snapshots

# Loaded only once NVML opens (probes/gpu.py): a CPU-only box's first frame never waits for them.
GPU_READERS = ("ctypes", "pynvml", "hwtop.probes.nvml.device", "hwtop.probes.nvml.events",
               "hwtop.probes.nvml.holders", "hwtop.probes.nvml.slow", "hwtop.probes.nvml.processes",
               "hwtop.probes.nvml.pcie", "hwtop.probes.nvml.gpm")

# Imported at the first tick that advises (session/session.py): the first frame's panels judge with
# advice/judge.py and the thresholds declared in advice/thresholds.py, and its advice pane says the advice comes next.
RULES = ("hwtop.advice.engine", "hwtop.advice.rules", "hwtop.advice.registry", "hwtop.advice.window",
         "hwtop.advice.grouping", "hwtop.advice.rules.pipeline")

FIRST_FRAME = """
import asyncio, sys
from hwtop.cli.machine import make_sampler
sampler = make_sampler(None, False)
sampler.sample()
from hwtop.tui.app import HwtopApp
app = HwtopApp(sampler, interval=30.0)
app.tick_before_run()
async def main():
    async with app.run_test(size=(200, 50)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        print(",".join(sorted(m for m in sys.modules if m in {readers!r})))
asyncio.run(main())
"""


@pytest.mark.skipif(nvml_library_loads(), reason="this machine has an NVIDIA library")
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_box_without_the_library_draws_its_first_frame_without_the_gpu_readers() -> None:
    """The monitor as the command line starts it on this CPU-only box, through its first frame (Pilot)."""
    out = subprocess.run([sys.executable, "-c", FIRST_FRAME.format(readers=GPU_READERS)], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == ""


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_readers_guard_sees_a_reader_imported() -> None:
    code = FIRST_FRAME.format(readers=GPU_READERS).replace("from hwtop.cli.machine", "import hwtop.probes.nvml.device\n"
                                                           "from hwtop.cli.machine")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert "hwtop.probes.nvml.device" in out.split(",")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_first_frame_imports_no_rule() -> None:
    """The monitor as the command line starts it, through its first frame (Pilot): no rule, no engine."""
    out = subprocess.run([sys.executable, "-c", FIRST_FRAME.format(readers=RULES)], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == ""


async def test_the_first_frame_says_the_advice_starts_with_the_next_tick() -> None:
    """Not 'no problems seen' before any rule looked: the first frame says the advice comes with the next tick,
    and the next tick (the worker's) brings it."""
    app = HwtopApp(ScriptedSource([host_snapshot()]), interval=60.0)
    app.tick_before_run()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert app.frame is not None and not app.frame.advised
        advice = next(line for line in screen_lines(app) if "Advice" in line)
        assert NOT_YET in advice and "no problems seen" not in advice
        await pilot.press("a")
        await pilot.pause()
        assert app.screen is app.main  # nothing to open yet
        app.show(await asyncio.to_thread(app._tick))  # the worker's next tick
        await pilot.pause()
        assert app.frame.advised
        advice = next(line for line in screen_lines(app) if "Advice" in line)
        assert "no problems seen" in advice and NOT_YET not in advice


async def test_the_first_resume_keeps_the_styles_given_at_mount(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual styles each widget as it mounts, then, at the screen's first resume, the whole screen again: the
    main screen's first resume skips that second pass (its widgets were styled moments before); a later resume
    restyles the screen as Textual does."""
    restyled: list[list[str]] = []  # the node types of each restyle that reached the main screen itself
    update_nodes = Stylesheet.update_nodes

    def recording(self: Stylesheet, nodes, animate: bool = False) -> None:  # noqa: ANN001 - Textual's iterable
        nodes = list(nodes)
        if any(isinstance(node, MainScreen) for node in nodes):
            restyled.append([type(node).__name__ for node in nodes])
        update_nodes(self, nodes, animate=animate)

    monkeypatch.setattr(Stylesheet, "update_nodes", recording)
    app = HwtopApp(ScriptedSource([host_snapshot()]), interval=30.0)
    app.tick_before_run()
    async with app.run_test(size=(200, 50)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert restyled == []
        app.screen.post_message(events.ScreenResume())  # as Textual posts when a screen is switched back to
        await pilot.pause()
        assert restyled and "ProcessTable" in restyled[-1]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_workload_pane_is_made_when_a_workload_first_shows() -> None:
    """A box without a workload composes no workload pane; one started later (w, a job's telemetry) gets its pane
    above the advice pane at the tick that first brings it."""
    from hwtop.widgets.workload import WorkloadPanel

    app = HwtopApp(ScriptedSource([host_snapshot()]), interval=60.0)
    app.tick_before_run()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert "workload" not in app.main.panels and not app.main.query(WorkloadPanel)
        running = story_snapshots("dgx-a100", seconds=10.0, step=5.0)[-1]
        assert running.workload is not None
        app.show(app.session.advance(lambda: running))
        await pilot.pause()
        panel = app.main.query_one(WorkloadPanel)
        children = list(app.main.children)
        assert panel.display and panel.region.height > 2
        assert children.index(panel) == children.index(app.main.advice_panel) - 1
        assert any("Workload" in line for line in screen_lines(app))
