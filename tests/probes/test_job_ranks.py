"""JobSnapshot.ranks: one RankFigures per rank of the focused job, from its process (pid, local rank, GPU, this
host's name) and its stack samples (phase seconds, shares, busy site, samples, when last updated); a rank whose
stacks cannot be read still has its row, with no shares."""

from __future__ import annotations

from hwtop.model.job import RankStacks, WorkerStacks
from hwtop.probes.job import JobProbe, with_stacks
from tests.fakeproc import FakeProc, Proc
from tests.manual_clock import ManualClock

PY = "/usr/bin/python3"
LAUNCHER = (PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py")


class ScriptedStacks:
    """A stack source with fixed answers: rank 0 waits in the all-reduce, rank 1's samples were refused."""

    def __init__(self) -> None:
        self.asked: list[tuple[dict[int, int | None], frozenset[int]]] = []

    def want(self, targets: dict[int, int | None], on_gpu: frozenset[int] = frozenset(),
             workers: dict[int, int | None] | None = None) -> None:
        self.asked.append((targets, on_gpu))

    def worker_results(self) -> tuple[WorkerStacks, ...]:
        return ()

    def results(self) -> tuple[tuple[RankStacks, ...], str | None]:
        return (RankStacks(510, 0, 300, 30.0, (("collective", 0.8), ("compute", 0.2)),
                           phase_seconds=(("compute", 12.5), ("collective", 40.0)), busy_site="train.py:88 step",
                           main_running=0.2, updated_at=1_700_000_000.0),
                RankStacks(511, 1, 0, 0.0, message="ptrace not permitted")), None

    def finish(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_each_rank_of_the_job_gets_its_figures_in_rank_order(tmp_path):
    proc = FakeProc(tmp_path)
    proc.add(Proc(500, 1, "python3", LAUNCHER))
    for rank, pid in ((1, 511), (0, 510)):
        proc.add(Proc(pid, 500, "python3", (PY, "-u", "train.py"),
                      env={"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2"}))
    proc.write()
    clock = ManualClock(100.0)
    stacks = ScriptedStacks()
    probe = JobProbe(roots=(500,), root=str(tmp_path), clock=clock, stacks=stacks, host="node-a")
    job = probe.read(now=clock.now)
    assert stacks.asked[-1] == ({510: 0, 511: 1}, frozenset())  # the ranks' main threads, none on a GPU
    assert [(r.rank, r.host, r.pid, r.local_rank, r.gpu) for r in job.ranks] == [(0, "node-a", 510, 0, None),
                                                                               (1, "node-a", 511, 1, None)]
    zero, one = job.ranks
    assert zero.collective_share == 0.8 and zero.share("compute") == 0.2 and zero.samples == 300
    assert dict(zero.phase_seconds) == {"compute": 12.5, "collective": 40.0}
    assert zero.site == "train.py:88 step" and zero.seen_at == 1_700_000_000.0
    assert one.samples == 0 and one.shares == () and one.site is None and one.seen_at is None


def test_final_samples_replace_the_figures_by_pid():
    from hwtop.model.job import RankFigures

    ranks = (RankFigures(0, "h", pid=510), RankFigures(1, "h", pid=511), RankFigures(2, "other-host"))
    final = (RankStacks(511, 1, 40, 4.0, (("other", 1.0),), busy_site="train.py:5 f", phase_seconds=(("other", 4.0),)),)
    out = with_stacks(ranks, final)
    assert out[0] == ranks[0] and out[2] == ranks[2]
    assert out[1].share("other") == 1.0 and out[1].site == "train.py:5 f" and out[1].samples == 40


def test_the_host_defaults_to_this_machine_s_name(tmp_path):
    import os

    proc = FakeProc(tmp_path)
    proc.write()
    assert JobProbe(roots=(1,), root=str(tmp_path)).host == os.uname().nodename
