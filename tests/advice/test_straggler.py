"""rank-straggler against timelines: the rank the others wait for is named (rank, pid, host, what it does, its
site) with the fix that fits its cause; a balanced job and a near miss raise nothing; ranks whose stacks cannot
be read are named as missing figures and no straggler is guessed; on GPUs, utilisation and power join."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from hwtop.demo.profiles import GIB
from hwtop.model.job import JobProcess, JobSnapshot, RankFigures, RankStacks
from hwtop.model.snapshot import PcieLink
from tests.advice_timeline import Timeline, find, ids, plain_gpu, run

SITE = "ddp_straggler.py:22 python_augmentation"


def rank_process(rank: int, pid: int, **fields) -> JobProcess:
    return JobProcess(pid, 4000, "python3", "python train.py", f"rank {rank}", rank, 1, "R", 99.0, GIB, 4, (0, 1),
                      local_rank=rank, **fields)


def figures(rank: int, collective: float, other: float = 0.0, data: float = 0.0, samples: int = 200,
            gpu: int | None = None, site: str | None = "train.py:40 <module>") -> RankFigures:
    compute = max(0.0, 1.0 - collective - other - data)
    shares = tuple((k, v) for k, v in (("collective", collective), ("compute", compute), ("other", other),
                                       ("data", data)) if v)
    return RankFigures(rank, "node-a", pid=5000 + rank, local_rank=rank, gpu=gpu, shares=shares, samples=samples,
                       site=site)


def job(*ranks: RankFigures, processes: tuple[JobProcess, ...] | None = None, **fields) -> JobSnapshot:
    procs = processes if processes is not None else tuple(rank_process(r.rank, r.pid or 0) for r in ranks)
    return JobSnapshot("pid 4000", (4000,), "running", procs, 200.0, 2 * GIB, ranks=ranks, **fields)


SLOWED = job(figures(0, 0.91, site="train.py:40 <module>"), figures(1, 0.01, other=0.7, site=SITE))


def test_the_rank_the_others_wait_for_is_named_with_what_it_does_and_balance_the_shards():
    t = Timeline(cores=2)
    history = run([t.tick(job=SLOWED) for _ in range(8)])
    assert "rank-straggler" not in ids(history[3])  # held 5 s first
    finding = find(history[-1], "rank-straggler")
    assert finding.severity == "warning" and finding.pids == (5001,)
    assert finding.title == "Rank 1 holds the job back: the others wait for it"
    assert finding.evidence[:4] == (  # the rank's verdict in its words (advice/ranks.py), then the figures
        f"rank 1 (pid 5001 on node-a) is slow: the others wait for it (70% other at {SITE}, 1% in collectives)",
        "rank 0 (pid 5000, host node-a) waits in collectives 91% of 200 stack samples",
        "rank 1 (pid 5001, host node-a) waits in them 1% (limit 33% of the others'): it is the one they wait for",
        f"where its time goes: other Python 70%, compute 29%, collective 1%; commonest site {SITE}")
    assert finding.fix[0].startswith(f"Rank 1 does more work than the others at {SITE}: balance the shards")
    assert finding.fix[-1].startswith("py-spy dump --pid 5001")


@pytest.mark.parametrize("shares", [(0.43, 0.35), (0.38, 0.05), (0.9, 0.4)])
def test_a_balanced_job_or_a_near_miss_names_no_straggler(shares):
    t = Timeline(cores=2)
    balanced = job(figures(0, shares[0]), figures(1, shares[1]))
    assert run([t.tick(job=balanced) for _ in range(10)])[-1] == ()


def test_its_cores_shared_and_its_loader_starved_give_their_own_fixes():
    t = Timeline(cores=2)
    slow = figures(1, 0.02, data=0.5)
    starved = job(figures(0, 0.8), slow,
                  processes=(rank_process(0, 5000, run_wait_share=0.1), rank_process(1, 5001, run_wait_share=0.6)))
    finding = find(run([t.tick(job=starved) for _ in range(8)])[-1], "rank-straggler")
    assert "it waits for data 50% of its samples (limit 30%): its loader cannot keep up" in finding.evidence
    assert ("its threads wait for a CPU 60% of their runnable time (limit 25%, the others 10%): its cores are "
            "shared" in finding.evidence)
    assert finding.fix[0].startswith("Feed rank 1") and finding.fix[1].startswith("Give rank 1 cores of its own")
    assert not any("balance the shards" in fix for fix in finding.fix)


def test_a_box_loaded_by_others_is_not_the_straggler_s_cause():
    t = Timeline(cores=2)
    loaded = replace(SLOWED, processes=(rank_process(0, 5000, run_wait_share=0.85),
                                        rank_process(1, 5001, run_wait_share=0.88)))
    finding = find(run([t.tick(job=loaded) for _ in range(8)])[-1], "rank-straggler")
    assert not any("cores are shared" in line for line in finding.evidence)
    assert "balance the shards" in finding.fix[0]


def test_on_gpus_a_throttled_gpu_on_a_narrow_link_is_the_cause_and_utilisation_and_power_join():
    t = Timeline(cores=16)
    gpus = (plain_gpu(0, 100.0, (5000,), power_w=120.0, power_limit_w=400.0),
            plain_gpu(1, 99.0, (5001,), power_w=390.0, power_limit_w=400.0, throttle_reasons=("HW thermal",),
                      sm_clock_mhz=900.0, pcie=PcieLink(4, 4, 4, 16, None, None)))
    slowed = job(figures(0, 0.85, gpu=0), figures(1, 0.05, gpu=1))
    finding = find(run([t.tick(job=slowed, gpus=gpus) for _ in range(8)])[-1], "rank-straggler")
    assert finding.gpus == (1,)
    assert "rank 1's GPU1: 99% busy, 390 W of 400 W" in finding.evidence
    assert "rank 0's GPU0: 100% busy, 120 W of 400 W" in finding.evidence
    assert "its GPU1 is throttled (HW thermal, SM clock 900 MHz)" in finding.evidence
    assert "its GPU1 link is Gen4 x4 of Gen4 x16" in finding.evidence
    assert finding.fix[0].startswith("GPU1 is held back by its clocks")


def test_unreadable_ranks_are_named_as_missing_figures_and_no_straggler_is_guessed():
    t = Timeline(cores=2)
    refused = replace(SLOWED, ranks=(SLOWED.ranks[0], replace(SLOWED.ranks[1], samples=0, shares=())),
                      stacks=(RankStacks(5001, 1, 0, 0.0, message="ptrace not permitted (run as root)"),))
    findings = run([t.tick(job=refused) for _ in range(8)])[-1]
    finding = find(findings, "rank-straggler")
    assert finding.severity == "info" and finding.pids == ()
    assert finding.evidence == ("rank 1 (pid 5001, host node-a): no stack samples, so no collective-wait share: "
                                "ptrace not permitted (run as root)",)
    missing = replace(SLOWED, ranks=tuple(replace(r, samples=0, shares=()) for r in SLOWED.ranks),
                      stack_message="py-spy is not installed: pip install py-spy")
    finding = find(run([t.tick(job=missing) for _ in range(8)])[-1], "rank-straggler")
    assert finding.severity == "info" and len(finding.evidence) == 2
    assert finding.evidence[0].endswith("no collective-wait share: py-spy is not installed: pip install py-spy")


def test_still_sampling_is_not_a_missing_figure():
    t = Timeline(cores=2)
    early = replace(SLOWED, ranks=tuple(replace(r, samples=0, shares=()) for r in SLOWED.ranks),
                    stacks=(RankStacks(5000, 0, 0, 0.0, message="sampling its stack…"),))
    assert run([t.tick(job=early) for _ in range(8)])[-1] == ()


def test_many_ranks_are_summarised():
    t = Timeline(cores=16)
    many = job(*(figures(r, 0.8 + r / 100) for r in range(7)), figures(7, 0.05, other=0.6, site=SITE))
    finding = find(run([t.tick(job=many) for _ in range(8)])[-1], "rank-straggler")
    assert finding.evidence[1] == "the other 7 ranks wait in collectives 80-86% of their stack samples (median 83%)"
    assert finding.title.startswith("Rank 7 ")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_its_memory_on_the_far_numa_node_gives_the_placement_fix():
    t = Timeline("dgx-a100", topology=True)  # GPUs 0-3 on node 0, 4-7 on node 1
    slowed = job(figures(0, 0.8, gpu=0), figures(1, 0.04, gpu=1),
                 processes=(rank_process(0, 5000), rank_process(1, 5001, numa_pages=((0, 100), (1, 900)))))
    finding = find(run([t.tick(job=slowed) for _ in range(8)])[-1], "rank-straggler")
    assert "90% of its pages are off GPU1's node 0" in finding.evidence
    assert finding.fix[0] == "Place rank 1 on node 0: numactl --cpunodebind=0 --membind=0 (see numa-misplaced)."


def test_a_hang_is_collective_hang_s_finding_not_a_straggler():
    t = Timeline(cores=2)
    hung = job(figures(0, 0.99), figures(1, 0.99), figures(2, 0.0, other=0.9, site="train.py:88 load_shard"))
    found = run([t.tick(job=hung) for _ in range(8)])[-1]
    assert "rank-straggler" not in ids(found)
    assert find(found, "collective-hang").pids == (5002,)
