"""One verdict per rank (advice/ranks.py judge), from every signal: real Flight Recorder dumps of a gloo job made
by torch here (tests/fixtures/flight_recorder/), the ranks' stacks, NCCL's counts at two looks, steps, the GPUs'
faults. A still stack is evidence, never a verdict on its own: progress outweighs it."""

from __future__ import annotations

from pathlib import Path

from hwtop.advice.ranks import Look, judge, worst_first
from hwtop.advice.thresholds import Thresholds
from hwtop.model.job import RankFigures, Stillness
from hwtop.model.verdict import GpuFault
from hwtop.probes.flight_recorder.reader import FlightRecorderReader, RankProcess
from tests.probes.flight_recorder.conftest import WORLD, fake_proc, lay_out

T = Thresholds()
PID = 5000


def flight_ranks(scenario: str, tmp_path: Path, **figures: object) -> list[RankFigures]:
    """The scenario's three ranks with their Flight Recorder as the reader gives it, and `figures` for each."""
    times = lay_out(scenario, tmp_path)
    for rank in range(WORLD):
        fake_proc(tmp_path / "proc", PID + rank, min(times.values()) - 120)
    env = {"TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/fr_rank_", "TORCH_FR_BUFFER_SIZE": "64"}
    read = FlightRecorderReader(proc=str(tmp_path / "proc")).read(
        [RankProcess(PID + r, r, env) for r in range(WORLD)])
    return [RankFigures(r, "node-0", pid=PID + r, flight=read[PID + r], **figures) for r in range(WORLD)]  # type: ignore[arg-type]


def still(seconds: float, site: str, category: str = "other") -> Stillness:
    return Stillness(seconds, round(seconds * 10), frame=site, site=site, category=category)


def test_the_rank_blocked_before_the_all_reduce_is_named_never_launched_and_the_others_are_not_blamed(
        tmp_path: Path) -> None:
    ranks = flight_ranks("hang", tmp_path)
    ranks[1] = ranks[1].__class__(**{**{f: getattr(ranks[1], f) for f in ranks[1].__struct_fields__},
                                     "still": still(40.0, "ddp_hang.py:37 next_batch")})
    verdicts = judge(Look(ranks), None, T)
    one = verdicts.of(1)
    assert one is not None and one.state == "before-collective" and one.blamed
    assert one.words == "never launched all_reduce #26 (default_pg), which ranks 0 and 2 launched and wait in; it " \
                        "is at ddp_hang.py:37 next_batch"
    assert one.site == "ddp_hang.py:37 next_batch" and one.collective == "all_reduce #26 (default_pg)"
    assert one.agree[0].startswith("Flight Recorder: its dump 4") and "(at ddp_hang.py:65 main)" in one.agree[0]
    assert "stack has not moved for 40 s" in one.agree[1]
    for number in (0, 2):
        other = verdicts.of(number)
        assert other is not None and other.state == "inside-collective" and not other.blamed
        assert other.held_by == (1,) and other.words == "launched all_reduce #26 (default_pg) and never finished " \
                                                        "it, waiting for rank 1, which never launched it"
    assert [v.rank for v in verdicts.blamed] == [1]


def test_a_healthy_job_and_one_whose_ranks_mostly_wait_are_quiet_though_each_rank_was_dumped_apart(
        tmp_path: Path) -> None:
    for scenario in ("healthy", "waiting"):
        folder = tmp_path / scenario
        folder.mkdir()
        verdicts = judge(Look(flight_ranks(scenario, folder, samples=100)), None, T)
        assert [v.state for v in verdicts.ranks] == ["running"] * WORLD, scenario
        assert not verdicts.blamed


def test_the_loop_stuck_false_alarm_a_still_stack_with_nccl_counts_advancing_is_running() -> None:
    """Measured on the landed main (issue 53): ranks whose GPU does the work wait most of each step on one line;
    every look at their stacks is the same, while NCCL's counts move with the others'. Not stuck."""
    def ranks(count: int) -> tuple[RankFigures, ...]:
        return tuple(RankFigures(r, "node-0", pid=100 + r, samples=120, shares=(("other", 0.97), ("compute", 0.03)),
                                 still=still(12.0, "train.py:88 train_step"), main_running=0.01,
                                 collectives=(("AllReduce", count),), lag=0, nccl_state="RUNNING")
                     for r in range(4))

    moving = judge(Look(ranks(6650), 1030.0), Look(ranks(6402), 1000.0), T)
    for v in moving.ranks:
        assert v.state == "running" and not v.blamed
        assert v.agree == ("NCCL: collectives launched 6402 → 6650",)
        assert v.disagree == ("its main thread's stack has not moved for 12 s (120 samples at train.py:88 "
                              "train_step)",)
    stopped = judge(Look(ranks(6650), 1030.0), Look(ranks(6650), 1000.0), T)
    assert {v.state for v in stopped.ranks} == {"before-collective"}  # nothing moved: then the still stack says it


def test_a_still_stack_whose_thread_runs_on_a_cpu_is_not_stopped() -> None:
    rank = RankFigures(0, "a", samples=100, still=still(15.0, "train.py:9 spin"), main_running=0.9,
                       shares=(("other", 1.0),))
    (verdict,) = judge(Look([rank]), None, T).ranks
    assert verdict.state == "running" and verdict.agree == ("its main thread is on a CPU 90% of the time",)
    assert verdict.disagree == ()


def stacks(number: int, host: str, collective: float, other: str = "compute", site: str | None = None,
           **more: object) -> RankFigures:
    return RankFigures(number, host, pid=100 + number, shares=(("collective", collective), (other, 1 - collective)),
                       samples=300, seen_at=1000.0, site=site, **more)  # type: ignore[arg-type]


def test_from_stacks_alone_the_odd_rank_never_reached_the_collective_and_the_others_wait_for_it() -> None:
    verdicts = judge(Look([stacks(0, "n0", 0.99), stacks(1, "n1", 0.0, "other", site="train.py:41 load"),
                           stacks(2, "n1", 1.0)]), None, T)
    one = verdicts.of(1)
    assert one is not None and one.state == "before-collective" and one.blamed
    assert one.words == "never reached the collective the others wait in; it is at train.py:41 load"
    assert [(v.state, v.held_by, v.blamed) for v in verdicts.ranks if v.rank != 1] == \
        [("inside-collective", (1,), False)] * 2


def test_a_hang_from_the_stacks_with_steps_moving_is_a_slow_rank() -> None:
    ranks = [stacks(0, "n0", 0.99, steps=40), stacks(1, "n1", 0.0, "other", steps=40)]
    later = [stacks(0, "n0", 0.99, steps=44), stacks(1, "n1", 0.0, "other", steps=44)]
    verdicts = judge(Look(later, 1010.0), Look(ranks, 1000.0), T)
    one = verdicts.of(1)
    assert one is not None and one.state == "slow" and one.blamed and "steps 40 → 44" in one.agree
    assert verdicts.of(0).state == "running"  # type: ignore[union-attr]


def test_the_straggler_is_slow_with_its_cause_and_the_others_run() -> None:
    verdicts = judge(Look([stacks(0, "n0", 0.62), stacks(1, "n0", 0.1, "data"), stacks(2, "n1", 0.6)]), None, T)
    one = verdicts.of(1)
    assert one is not None and one.state == "slow" and one.blamed
    assert one.words == "is slow: the others wait for it (it waits for data 90% of its samples)"
    assert [v.state for v in verdicts.ranks] == ["running", "slow", "running"]


def ras(number: int, count: int, lag: int, host: str = "10.0.0.1") -> RankFigures:
    return RankFigures(number, host, pid=4000 + number, gpu=number % 8, collectives=(("AllReduce", count),), lag=lag,
                       nccl_state="RUNNING", nccl_only=True)


def test_nccl_counts_unchanged_across_two_looks_name_the_rank_behind() -> None:
    now = [ras(r, 6649 if r == 5 else 6650, 1 if r == 5 else 0) for r in range(8)]
    verdicts = judge(Look(now, 1040.0), Look(now, 1000.0), T)
    five = verdicts.of(5)
    assert five is not None and five.state == "before-collective" and five.blamed
    assert five.words == "has not launched AllReduce #6650, which the others launched; no count changed for 40 s"
    assert {(v.state, v.held_by, v.blamed) for v in verdicts.ranks if v.rank != 5} == \
        {("inside-collective", (5,), False)}
    assert judge(Look(now, 1010.0), Look(now, 1000.0), T).blamed == ()  # 10 s: one query in flight, normal


def test_a_dead_rank_is_dead_and_a_gpu_fault_is_on_the_rank_that_owns_the_gpu() -> None:
    now = [ras(r, 6649 if r == 3 else 6650, 1 if r == 3 else 0) for r in range(4)] + \
        [RankFigures(4, "10.0.0.2", pid=4004, nccl_state="DEAD", nccl_only=True)]
    fault = GpuFault(1, "Xid 79 (GPU has fallen off the bus)", severe=True, at=1_700_000_000.0)
    verdicts = judge(Look(now, 1040.0), Look(now, 1000.0), T, {("10.0.0.1", 1): (fault,)})
    assert verdicts.of(4).state == "dead" and verdicts.of(4).blamed  # type: ignore[union-attr]
    one = verdicts.of(1)
    assert one is not None and one.state == "inside-collective" and one.blamed and one.faults == (fault,)
    assert "; its GPU 1 raised Xid 79 (GPU has fallen off the bus) at " in one.words


def test_a_rank_one_behind_once_does_not_sort_above_the_others_but_one_behind_at_both_looks_does() -> None:
    before = [ras(r, 100, 0) for r in range(4)]
    now = [ras(0, 110, 0), ras(1, 110, 0), ras(2, 109, 1), ras(3, 110, 0)]
    order = worst_first(Look(now, 1010.0), Look(before, 1000.0), judge(Look(now, 1010.0), Look(before, 1000.0), T))
    assert [r.rank for r in order] == [0, 1, 2, 3]
    behind = [ras(0, 100, 0), ras(1, 100, 0), ras(2, 99, 2), ras(3, 100, 0)]
    order = worst_first(Look(now, 1010.0), Look(behind, 1000.0), judge(Look(now, 1010.0), Look(behind, 1000.0), T))
    assert [r.rank for r in order][0] == 2


def test_too_few_samples_is_unknown_and_says_why() -> None:
    verdicts = judge(Look([stacks(0, "a", 0.5).__class__(0, "a", samples=3), RankFigures(1, "a", samples=2)]),
                     None, T)
    assert [v.state for v in verdicts.ranks] == ["unknown", "unknown"]
    assert verdicts.ranks[0].words == "cannot be judged: too few stack samples (3 of the 20 a share needs)"
    assert verdicts.message == "too few stack samples (3 of the 20 a share needs)"
