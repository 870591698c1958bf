"""The straggler story (`--demo dgx-a100 --scenario straggler`): GPU 3's clocks are held back from 20 s, the other
ranks wait for rank 3 in NCCL; rank-straggler names rank 3 with its throttled GPU as the cause, collective-hang
stays silent (the waiting GPUs draw half their power, not idle power), and the job view's rank table marks it."""

from __future__ import annotations

import pytest

from hwtop.demo.machine import demo_sampler
from hwtop.demo.story import RANK_PID, STRAGGLER_RANK, STRAGGLER_S
from hwtop.session.session import Session
from hwtop.tui.app import HwtopApp
from hwtop.tui.job_screen import JobScreen

EPOCH = 1_800_000_000.0


class StepClock:
    """The scenario clock; each wall-clock reading (one a tick) moves it `step` seconds on."""

    def __init__(self, step: float = 2.0) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        return self.t

    def wall(self) -> float:
        self.t += self.step
        return EPOCH + self.t


@pytest.mark.slow  # a whole machine for 40 ticks, as the other stories
def test_rank_straggler_names_rank_3_and_its_throttled_gpu_and_no_hang_is_raised():
    clock = StepClock()
    session = Session(demo_sampler("dgx-a100", "straggler", seed=7, clock=clock, wall=clock.wall))
    try:
        frames = [session.tick() for _ in range(40)]
    finally:
        session.close()
    raised = next(f.time - EPOCH for f in frames if any(x.id == "rank-straggler" for x in f.findings))
    assert STRAGGLER_S < raised <= STRAGGLER_S + 25
    finding = next(x for x in frames[-1].findings if x.id == "rank-straggler")
    assert finding.title == f"Rank {STRAGGLER_RANK} holds the job back: the others wait for it"
    assert finding.pids == (RANK_PID + STRAGGLER_RANK,) and finding.gpus == (STRAGGLER_RANK,)
    assert f"its GPU{STRAGGLER_RANK} is throttled (HW slowdown, SM clock 1099 MHz)" in finding.evidence
    assert finding.fix[0].startswith(f"GPU{STRAGGLER_RANK} is held back by its clocks")
    assert not any(x.id == "collective-hang" for f in frames for x in f.findings)
    every = frames[-1].snapshot.job.ranks if frames[-1].snapshot.job else ()
    ranks = [r for r in every if not r.nccl_only]  # this node's; NCCL's RAS adds the other node's eight
    assert len(ranks) == 8 and all(r.host == "dgx-a100-demo" for r in ranks) and len(every) == 16
    assert all(r.collective_share >= 0.5 for r in ranks if r.rank != STRAGGLER_RANK)
    assert ranks[STRAGGLER_RANK].collective_share < 0.1 and ranks[STRAGGLER_RANK].steps == ranks[0].steps


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_job_view_marks_the_straggler_and_reads_no_real_stack():
    clock = StepClock()
    app = HwtopApp(demo_sampler("dgx-a100", "straggler", seed=7, clock=clock, wall=clock.wall), interval=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        while clock.t < 60:
            await pilot.pause(0.05)
        await pilot.press("j")
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, JobScreen)
        text = [line.plain for line in screen.panel.lines(76)]
        marked = [line for line in text if line.startswith("◀")]
        # two nodes (NCCL's RAS view, demo/ras.py): a HOST column; the straggler first, behind the others
        assert len(marked) == 1 and marked[0].startswith(f"◀   {STRAGGLER_RANK} ")
        assert f" {RANK_PID + STRAGGLER_RANK} " in marked[0]
        assert any("10.0.0.2" in line for line in text)  # the other node's ranks
        await pilot.press("d")  # a demo's pids are simulated: d says so, and reads no stack (py-spy is not run)
        await pilot.pause()
        title, said = (line.plain for line in screen.panel.stack)
        assert title.startswith("Python stack of pid ") and said.startswith("a demo machine's process is simulated")


def test_the_job_view_and_the_process_table_read_one_table() -> None:
    """Issue 48: the job view said 24 threads where the table said 86, listed no DataLoader workers and no
    memory node; its processes are now the table's rows of the launcher, the ranks and their workers."""
    from tests.tui.screens import story_snapshots

    snapshot = story_snapshots("dgx-a100:straggler", seconds=30.0, step=10.0)[-1]
    job = snapshot.job
    assert job is not None and snapshot.workload is not None and snapshot.workload.config is not None
    table = {p.pid: p for p in snapshot.processes}
    shown = [p for p in job.processes if p.pid in table]  # the table lists the busiest (process_limit)
    assert len(shown) >= 9
    for process in shown:
        row = table[process.pid]
        assert (process.threads, process.cpu_percent, process.rss_bytes, process.state) == \
            (row.threads, row.cpu_percent, row.rss_bytes, row.state), process.pid
    workers = [p for p in job.processes if p.role == "DataLoader worker"]
    listed = [p for p in snapshot.processes if p.name == "pt_data_worker"]
    assert len(workers) == 8 * (snapshot.workload.config.num_workers or 0)
    assert {p.pid for p in listed} <= {p.pid for p in workers} and listed
    ranks = [p for p in job.processes if p.rank is not None]
    assert len(ranks) == 8 and all(p.numa_pages for p in ranks)
