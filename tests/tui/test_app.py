"""The App through run_test() and the Pilot, fed by an injected source (never the live machine)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from msgspec.structs import replace

from hwtop.model.frame import Frame
from hwtop.model.snapshot import ProbeError, Snapshot
from hwtop.tui.app import HwtopApp
from hwtop.tui.help import HelpScreen
from hwtop.widgets.cpu import CpuPanel
from hwtop.widgets.gpu import GpuPanel
from hwtop.widgets.header import HeaderBar
from hwtop.widgets.memory import MemoryPanel
from hwtop.widgets.processes import ProcessTable
from tests.factories import ScriptedSource, demo_snapshots, host_snapshot


def text_of(widget) -> str:
    return "\n".join(line.plain for line in widget.lines(widget.content_size.width))


async def started(app: HwtopApp, pilot) -> None:
    await app.first_frame.wait()
    await pilot.pause()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_tick_taken_before_run_is_drawn_at_mount_and_the_next_waits_an_interval() -> None:
    """What the command line does: sample, import, tick, run. The first frame draws that tick (no frame of empty
    panels, no sample at mount); without it, the app samples at mount as before."""
    source = ScriptedSource([host_snapshot()])
    app = HwtopApp(source, interval=30.0)
    app.tick_before_run()
    assert source.samples == 1
    async with app.run_test(size=(80, 24)) as pilot:
        await app.first_frame.wait()
        assert app.ticks == 1 and "97%" in text_of(app.query_one(CpuPanel))
        await pilot.pause(0.3)
        assert source.samples == 1 and app.ticks == 1
    unticked = ScriptedSource([host_snapshot()])
    app = HwtopApp(unticked, interval=30.0)
    samples_at_show: list[int] = []  # read when each frame is shown, not after some time: the second tick comes
    show = app.show  # 0.25 s after the first, which a busy box may already have reached (issue 48)

    def counting(frame: Frame) -> None:
        samples_at_show.append(unticked.samples)
        show(frame)

    app.show = counting  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)):
        await app.first_frame.wait()
        assert samples_at_show[0] == 1  # sampled at mount, not an interval (30 s) later


async def test_a_tick_that_returns_while_the_app_shuts_down_is_not_shown() -> None:
    """A sample still in flight when the app shuts down (a Pilot test's end; seen once as 'No screens on stack')
    comes back to an app whose screens are gone: it is dropped, and the app ends without a crash."""
    release, sampling = threading.Event(), threading.Event()

    class SlowSource(ScriptedSource):
        def sample(self) -> Snapshot:
            if self.samples >= 1:  # the first sample draws the first frame; the second waits
                sampling.set()
                release.wait(5)
            return super().sample()

    source = SlowSource([host_snapshot()])
    app = HwtopApp(source, interval=0.05)
    close_all = app._close_all

    async def screens_gone_then_the_tick_returns() -> None:
        await close_all()
        release.set()
        await asyncio.sleep(0.3)  # the worker resumes with its frame now

    app._close_all = screens_gone_then_the_tick_returns  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)):
        await app.first_frame.wait()
        assert await asyncio.to_thread(sampling.wait, 5)
    assert app.crash is None and source.samples == 2 and app.ticks == 1


async def test_cpu_host_values_and_no_gpu_message() -> None:
    source = ScriptedSource([host_snapshot()])
    app = HwtopApp(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        header = str(app.query_one(HeaderBar).render())
        assert "trainbox" in header and "6.8.0-45-generic" in header and "up 1d 02:03" in header
        cpu = text_of(app.query_one(CpuPanel))
        assert "97%" in cpu and "  3%" in cpu and "load 1.50 1.20 0.90" in cpu
        memory = text_of(app.query_one(MemoryPanel))
        assert "56.0G/256.0G" in memory and "1.0G/8.0G" in memory
        gpu = text_of(app.query_one(GpuPanel))
        assert "No GPU shown: no NVIDIA driver / NVML not found" in gpu
        table = app.query_one(ProcessTable)
        assert [r.pid for r in table.rows_shown] == [41000, 41010, 812]  # sorted by CPU
    assert source.closed


async def test_numa_groups_on_a_four_node_box() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot(cores=64, nodes=4, busy_core=40)]))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        cpu = text_of(app.query_one(CpuPanel))
        for node in range(4):
            assert f"node {node} (16 cpus)" in cpu
        assert cpu.index("node 2") < cpu.index(" 40 ") < cpu.index("node 3")


async def test_sort_key_and_header_click_resort() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 30)) as pilot:
        await started(app, pilot)
        table = app.query_one(ProcessTable)
        await pilot.press("s")
        assert table.sort_key == "rss"
        assert [r.pid for r in table.rows_shown] == [41000, 41010, 812]
        await pilot.press("s", "s")
        assert table.sort_key == "pid"
        assert [r.pid for r in table.rows_shown] == [812, 41000, 41010]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_pause_stops_sampling_and_says_so() -> None:
    source = ScriptedSource([host_snapshot()])
    app = HwtopApp(source, interval=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("p")
        assert "PAUSED" in str(app.query_one(HeaderBar).render())
        before = source.samples
        await pilot.pause(0.3)
        assert source.samples <= before + 1  # at most the tick already on its way when p was pressed (issue 48)
        paused = source.samples
        await pilot.pause(0.3)
        assert source.samples == paused
        await pilot.press("p")
        while source.samples == paused:  # the next tick, however long a busy box takes to get to it
            await pilot.pause(0.05)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_help_screen_lists_keys() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_probe_errors_are_counted_in_the_header() -> None:
    snapshot = replace(host_snapshot(), errors=(ProbeError("disks", "OSError: gone"),))
    app = HwtopApp(ScriptedSource([snapshot]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        assert "1 probe error(s)" in str(app.query_one(HeaderBar).render())


async def test_dgx_shows_eight_live_gpus_with_processes() -> None:
    snapshots = demo_snapshots("dgx-a100")
    app = HwtopApp(ScriptedSource(snapshots))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        gpu = text_of(app.query_one(GpuPanel))
        for index in range(8):
            assert f"GPU{index} A100-SXM4-80GB" in gpu
        last = snapshots[-1].gpus[0]
        assert f"{last.util_percent:.0f}%" in gpu and "PCIe 4x16" in gpu
        table = app.query_one(ProcessTable)
        row = next(r for r in table.rows_shown if r.pid == 41000)
        assert row.gpus == "0" and row.gpu_memory == last.processes[0].used_memory_bytes


async def test_gtx1660s_shows_na_where_the_card_cannot_say() -> None:
    app = HwtopApp(ScriptedSource(demo_snapshots("gtx1660s")))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        gpu = text_of(app.query_one(GpuPanel))
        assert "GTX 1660 SUPER" in gpu and "fan" in gpu and "GPM: GPM needs a Hopper-class" in gpu
        table = app.query_one(ProcessTable)
        xorg = next(r for r in table.rows_shown if r.pid == 3120)
        assert xorg.gpu_memory is None  # NVML gives no per-process memory for it: N/A, not 0


async def test_h200_shows_gpm_activity() -> None:
    app = HwtopApp(ScriptedSource(demo_snapshots("h200")))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        gpu = text_of(app.query_one(GpuPanel))
        assert "SM act" in gpu and "tensor" in gpu


async def test_lost_gpu_is_shown_as_lost() -> None:
    snaps = demo_snapshots("dgx-a100", count=2)
    gpus = list(snaps[-1].gpus)
    gpus[2] = replace(gpus[2], lost=True)
    app = HwtopApp(ScriptedSource([replace(snaps[-1], gpus=tuple(gpus))]))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        assert "GPU2 A100-SXM4-80GB  LOST" in text_of(app.query_one(GpuPanel))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_tiny_terminal_keeps_running() -> None:
    app = HwtopApp(ScriptedSource(demo_snapshots("dgx-a100", count=2)))
    async with app.run_test(size=(20, 6)) as pilot:
        await started(app, pilot)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.is_running and app.ticks >= 1


@pytest.mark.slow  # a long Pilot session (several screens, live ticks): the slow step runs it
async def test_topology_screen_shows_matrix_nodes_and_live_links() -> None:
    from hwtop.tui.topology_screen import TopologyScreen
    from tests.factories import with_demo_topology

    app = HwtopApp(ScriptedSource(with_demo_topology(demo_snapshots("dgx-a100"), "dgx-a100")))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        assert "node 1" in text_of(app.query_one(GpuPanel))  # a GPU's panel names its node
        await pilot.press("t")
        assert isinstance(app.screen, TopologyScreen)
        text = text_of(app.topology_screen.panel)
        assert text.count("NV12") == 56 and "mlx5_3" in text
        assert "node 0  cpus 0-63,128-191" in text and "GPU0 GPU1 GPU2 GPU3 mlx5_0 mlx5_1" in text
        assert "NVLink ↑" in text and "PCIe 4x16" in text
        await pilot.press("t")
        assert not isinstance(app.screen, TopologyScreen)


async def test_topology_screen_without_gpus_says_so() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("t")
        text = text_of(app.topology_screen.panel)
        assert "No GPU or NIC to place" in text and "node 0  cpus 0-1" in text
