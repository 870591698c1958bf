"""What counts as a stopped job for a careful NCCL release: no progress by any measure the job has (steps, its
ranks' stacks) for the still time. Waits in a collective and GPUs spinning at idle power are what a healthy
straggler's fast ranks show too: said beside a stop, never one alone."""

from __future__ import annotations

import pytest

from hwtop.model.job import JobSnapshot, RankFigures, RankStacks, Stillness
from hwtop.probes.nccl_ras.stopped import STILL_S, StopSignals


def rank_stacks(rank: int, waits: float, still_s: float | None, samples: int = 40) -> RankStacks:
    still = None if still_s is None else Stillness(still_s, samples, "ncclKernelWait", "train.py:40 step")
    return RankStacks(4000 + rank, rank, samples, 10.0, (("collective", waits), ("compute", 1 - waits)), still=still)


def snapshot(steps: int | None, still: tuple[float | None, ...] = (), waits: float = 0.97,
             samples: int = 40) -> JobSnapshot:
    ranks = () if steps is None else tuple(RankFigures(r, "node-a", 4000 + r, steps=steps) for r in range(2))
    return JobSnapshot("job", (1,), "running", (), None, 0, ranks=ranks,
                       stacks=tuple(rank_stacks(r, waits, s, samples) for r, s in enumerate(still)))


def looks(jobs: list[JobSnapshot], spinning: bool = False, every_s: float = 100.0) -> list[str | None]:
    signals = StopSignals()
    return [signals.stopped(j, every_s * i, spinning) for i, j in enumerate(jobs)]


def test_waits_and_spinning_gpus_alone_are_no_stop() -> None:
    """The straggler's job: every rank waits 97% in the all-reduce, the GPUs spin; its steps advance, or its stacks
    move, or nothing measures progress at all."""
    assert looks([snapshot(10 + i, (None, None)) for i in range(5)], spinning=True) == [None] * 5
    assert looks([snapshot(None, (None, None))] * 5, spinning=True) == [None] * 5
    assert looks([snapshot(None)] * 5, spinning=True) == [None] * 5  # nothing measured: never stopped


def test_steps_still_for_the_still_time_stop() -> None:
    said = looks([snapshot(7)] * 3, every_s=STILL_S / 2)
    assert said[:2] == [None, None] and said[2] == "no step for 30 s"


def test_every_rank_still_stops_where_no_steps_are_known() -> None:
    assert looks([snapshot(None, (31.0, 45.0), waits=0.2)]) == [
        "every rank's main thread on one stack for 31 s"]
    assert looks([snapshot(None, (29.0, 45.0))]) == [None]


@pytest.mark.parametrize("still", [(None, 200.0), (200.0, 5.0)])
def test_a_stack_that_moves_is_progress_even_without_a_step(still: tuple[float | None, ...]) -> None:
    assert looks([snapshot(7, still)] * 3) == [None] * 3


def test_waits_and_spinning_are_said_beside_a_stop() -> None:
    said = looks([snapshot(7, (40.0, 90.0))] * 2, spinning=True)
    assert said == [None, "no step for 100 s and every rank's main thread on one stack for 40 s; every rank waits "
                          "in a collective (97% or more of its samples); its GPUs busy at idle power (NCCL kernels "
                          "waiting for a peer)"]


def test_too_few_samples_say_nothing_and_steps_decide() -> None:
    assert looks([snapshot(None, (None, None), samples=3)] * 3) == [None] * 3
    assert looks([snapshot(7, (None, None), samples=3)] * 2)[1] == "no step for 100 s"


def test_a_step_ends_the_stop() -> None:
    signals = StopSignals()
    said = [signals.stopped(snapshot(steps, (None,) if moving else (50.0,)), t)
            for t, steps, moving in [(0, 7, False), (100, 7, False), (110, 8, False), (200, 8, True),
                                     (300, 8, False)]]
    assert [s is not None for s in said] == [False, True, False, False, True]
