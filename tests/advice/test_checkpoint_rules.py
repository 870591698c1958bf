"""checkpoint-stall against timelines: a rank whose main thread saves a share of its time is named with its line,
how often and how long each save takes (its write bursts, tick by tick) and the share, the fixes in order; a
rank that saves now and then, briefly, stays quiet."""

from __future__ import annotations

from msgspec.structs import replace

from hwtop.model.job import RankStacks
from tests.advice.test_job_rules import RANK, job, proc
from tests.advice_timeline import Timeline, find, ids, run

MIB = 1 << 20
SITE = "checkpoint_every.py:97 main"


def saving(share: float) -> RankStacks:
    return RankStacks(RANK, None, 200, 30.0, (("compute", 1.0 - share), ("checkpoint", share)),
                      (("checkpoint", SITE),), None)


def timeline(share: float, writes: list[float], ticks: int = 20):
    """Ticks a second apart; the rank writes writes[i % len(writes)] MiB/s at tick i."""
    t = Timeline(cores=2)
    return [t.tick(job=job(proc(write_bytes_per_s=writes[i % len(writes)] * MIB), stacks=(saving(share),)))
            for i in range(ticks)]


def test_a_rank_saving_every_few_seconds_is_named_with_its_line_cadence_and_share():
    # a 120 MiB save written in one tick, every 4 s; the main thread saves in 30% of its samples
    finding = find(run(timeline(0.3, [120.0, 0.0, 0.0, 0.0]))[-1], "checkpoint-stall")
    assert finding.title == "Saving checkpoints stalls training 30% of the time"
    assert finding.evidence[0] == ("pid 4100: its main thread saves a checkpoint in 30% of 200 stack samples over "
                                   f"30 s, at {SITE}: training waits meanwhile")
    # 19 ticks watched: bursts at ticks 4, 8, 12, 16 (the first tick has no rate before it)
    assert finding.evidence[1].startswith("  it wrote 4 burst(s) in 19 s, ")
    assert finding.evidence[1].endswith("126 MB each: a save about every 5 s, each taking about 1.4 s")
    assert finding.fix[0].startswith(f"Save less often (at {SITE})")
    assert finding.fix[1].startswith("Save the state_dict")
    assert "torch.distributed.checkpoint.async_save" in finding.fix[2]
    assert finding.fix[3].startswith("Or save in a background thread")
    assert finding.pids == (RANK,) and finding.measure == 30.0


def test_a_rank_saving_every_tick_says_at_least_once_a_tick():
    finding = find(run(timeline(0.4, [60.0]))[-1], "checkpoint-stall")
    assert finding.evidence[1] == ("  it wrote in every one of the last 19 ticks (63 MB/s): a save at least every "
                                   "1 s, each taking at most 0.4 s")


def test_writes_that_cannot_be_seen_still_name_the_line_and_share():
    snapshots = timeline(0.3, [0.0])
    finding = find(run(snapshots)[-1], "checkpoint-stall")
    assert "how often it saves is not known" in finding.evidence[1]


def test_a_short_save_now_and_then_or_no_sampled_rank_stays_quiet():
    assert "checkpoint-stall" not in ids(run(timeline(0.05, [120.0, 0.0, 0.0, 0.0, 0.0, 0.0]))[-1])
    few = [replace(s, job=replace(s.job, stacks=(replace(saving(0.5), samples=5),))) for s in timeline(0.5, [9.0])]
    assert "checkpoint-stall" not in ids(run(few)[-1])
