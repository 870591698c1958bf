"""The big machine of benchmarks/ (issue 46): `--demo dgx-a100 --scenario straggler-256` is the straggler story
with a 256-rank job over 32 nodes (this host's eight local, with their pids) and 2,000 other processes."""

from __future__ import annotations

from hwtop.demo.host import SimulatedHost
from hwtop.demo.machine import demo_sampler, split_story
from hwtop.demo.story import STORIES
from hwtop.demo.variants import listing, split


def test_the_scale_story_is_a_story_of_its_own_not_in_the_matrices() -> None:
    assert "straggler-256" not in STORIES  # every story of STORIES is played by the tests' matrices
    assert split_story("dgx-a100", "straggler-256") == ("dgx-a100", "straggler-256")
    assert split("dgx-a100:straggler-256")[1] is None
    assert any(line.strip().startswith("straggler-256") for line in listing())


def test_a_256_rank_job_and_two_thousand_processes() -> None:
    clock = [100.0]
    sampler = demo_sampler("dgx-a100:straggler-256", clock=lambda: clock[0], wall=lambda: clock[0])
    assert sampler.job is not None
    job = sampler.job.read()
    assert [r.rank for r in job.ranks] == list(range(256))
    local = [r for r in job.ranks if r.pid is not None]
    assert [r.rank for r in local] == list(range(8)) and {r.host for r in local} == {"dgx-a100-demo"}
    assert job.ranks[255].host == "dgx-a100-demo-31" and job.ranks[255].gpu == 7
    host = sampler.host
    assert isinstance(host, SimulatedHost)
    assert len(host._all_processes(*host._now())) >= 2000  # noqa: SLF001 - the whole table, not the top shown
