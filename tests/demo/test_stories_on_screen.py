"""The stories as the monitor shows them (Pilot, the story's clock driven by the test): the process table beside
the advice pane says what the finding says — in nccl-hang the rank named as running is the only rank on the CPU
and the others sleep; the advice calls the demo's job by its launcher; the disks panel lists md arrays as raid."""

from __future__ import annotations

import pytest

from hwtop.demo.machine import demo_sampler
from hwtop.demo.story import NCCL_HANG_S, NCCL_STUCK_RANK, RANK_PID
from hwtop.tui.app import HwtopApp
from tests.manual_clock import ManualClock

pytestmark = pytest.mark.slow  # a story's first minute, a tick per 0.15 s of real time
EPOCH = 1_800_000_000.0


async def _play_until(app: HwtopApp, pilot, clock: ManualClock, until: float, step: float = 3.0) -> None:  # noqa: ANN001
    await app.first_frame.wait()
    while clock.now < until:
        clock.now += step
        ticks = app.ticks
        for _ in range(100):
            await pilot.pause(0.05)
            if app.ticks > ticks and app.snapshot is not None and app.snapshot.time >= EPOCH + clock.now:
                break


async def test_nccl_hang_the_rank_the_advice_names_is_alone_on_the_cpu_in_the_table() -> None:
    clock = ManualClock()
    app = HwtopApp(demo_sampler("dgx-a100", "nccl-hang", seed=5, clock=clock, wall=lambda: EPOCH + clock.now),
                   interval=0.1)
    async with app.run_test(size=(160, 50)) as pilot:
        await _play_until(app, pilot, clock, NCCL_HANG_S + 33)
        assert app.frame is not None
        finding = next(f for f in app.frame.findings if f.id == "collective-hang")
        stuck = RANK_PID + NCCL_STUCK_RANK
        named = next(line for line in finding.evidence if "running on the CPU" in line)
        assert f"rank {NCCL_STUCK_RANK} (pid {stuck})" in named and "while the others sleep" in named
        steps = next(line for line in finding.evidence if "stopped reporting steps" in line)
        assert steps.count("at step") == 1  # ranks in lockstep named once, not eight times
        rows = {r.pid: r for r in app.main.process_table.rows_shown if RANK_PID <= r.pid < RANK_PID + 8}
        assert len(rows) == 8
        assert rows[stuck].cpu is not None and rows[stuck].cpu > 90
        asleep = [r.cpu for pid, r in rows.items() if pid != stuck]
        assert all(cpu is not None and cpu < 5 for cpu in asleep), asleep
        workload = app.snapshot.workload if app.snapshot else None
        assert workload is not None and f"rank {NCCL_STUCK_RANK} never reached" in (workload.last_event or "")


async def test_amp_advice_names_the_torchrun_job_and_md_arrays_are_raid() -> None:
    clock = ManualClock()
    app = HwtopApp(demo_sampler("dgx-a100", "amp", seed=5, clock=clock, wall=lambda: EPOCH + clock.now),
                   interval=0.1)
    async with app.run_test(size=(200, 60)) as pilot:
        await _play_until(app, pilot, clock, 30)
        assert app.frame is not None
        finding = next(f for f in app.frame.findings if f.id == "amp-available")
        assert finding.evidence[0].startswith("the torchrun job (pid 40990) trains in fp32")
        text = "\n".join(line.plain for line in app.main.panels["disks"].lines(120))
        assert "md1" in text and not any("md" in line and " ssd" in line for line in text.split("\n"))
        assert any(line.split()[:2] == ["md1", "raid"] for line in text.split("\n")), text
