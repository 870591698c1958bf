"""`straggler` and `nccl-hang` told through NCCL's RAS view of a two-node job (demo/ras.py): the focused job holds
the other node's ranks, and the findings name the rank with its host and GPU as on a cluster."""

from __future__ import annotations

import pytest

from hwtop.demo.story import NCCL_STUCK_RANK, RANK_PID, STRAGGLER_RANK
from tests.demo.test_consistency import play


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_nccl_hang_names_the_rank_from_nccl_and_shows_the_other_node() -> None:
    last = play("dgx-a100", "nccl-hang", 5.0)[-1]
    job = last.snapshot.job
    assert job is not None and job.nccl is not None and job.nccl.queries >= 6
    hosts = {r.host for r in job.ranks if r.nccl_only}
    assert hosts == {"10.0.0.2"} and len(job.ranks) == 16
    hang = next(f for f in last.findings if f.id == "collective-hang")
    assert hang.title == f"Rank {NCCL_STUCK_RANK} never reached the collective the others wait in"  # one title
    assert hang.evidence[0] == (f"NCCL RAS: rank {NCCL_STUCK_RANK} (pid {RANK_PID + NCCL_STUCK_RANK} on dgx-a100-demo "
                                f"at 10.0.0.1, GPU {NCCL_STUCK_RANK}) has not launched AllReduce #582, which the other "
                                "15 ranks wait in")
    assert hang.pids == (RANK_PID + NCCL_STUCK_RANK,)  # this node's rank: its pid is a local one


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_straggler_named_by_stacks_and_nccl_in_one_finding() -> None:
    last = play("dgx-a100", "straggler", 5.0)[-1]
    found = [f for f in last.findings if f.id == "rank-straggler"]
    assert len(found) == 1 and found[0].pids == (RANK_PID + STRAGGLER_RANK,)
    assert any(line.startswith(f"NCCL RAS: rank {STRAGGLER_RANK} (pid {RANK_PID + STRAGGLER_RANK} on dgx-a100-demo "
                               "at 10.0.0.1") for line in found[0].evidence), found[0].evidence
