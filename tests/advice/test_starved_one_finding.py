"""One cause, one finding: a GPU that idles because its loader cannot feed it. In the `starved` story gpu-starved
(the job's own step figures), data-starved (the same wait read from the ranks' stacks) and cpu-single-core (a
pegged core that is one of the loader's workers) all said it at once; the job's own telemetry tells it there, and
on a job without telemetry data-starved's stacks tell it, gpu-starved's guess from pegged workers standing down."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from tests.advice.test_job_rules import BALANCED, RANK, ticks, worker
from tests.advice.test_user_job_rules import WORKER_PID, waiting, worker_stacks
from tests.advice_timeline import Timeline, find, ids, plain_gpu, play_story, process, run

LOADER_RULES = {"gpu-starved", "data-starved", "cpu-single-core"}


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_starved_story_tells_its_one_cause_once() -> None:
    frames = play_story("starved", 58.0, step=4.0)
    told = [ids(frame.findings) & LOADER_RULES for frame in frames]
    assert all(len(found) <= 1 for found in told), told
    assert {"gpu-starved"} in told and not any(found - {"gpu-starved"} for found in told), told
    # the stacks still read the same wait (the job view's DATA column): the finding is one, not the figures
    job = frames[-1].snapshot.job
    assert job is not None and all(s.fraction("data") >= 0.5 for s in job.stacks if s.rank is not None)


def test_without_telemetry_the_stacks_tell_it_and_pegged_workers_add_no_second_finding() -> None:
    t = Timeline(cores=2)
    pegged = waiting(0.75, worker(WORKER_PID, cpu=99.0), worker_stacks=(worker_stacks(),))
    gpu = (plain_gpu(0, 12.0, pids=(RANK,)),)
    processes = (process(RANK, cpu=40.0), process(WORKER_PID, RANK, cpu=99.0, name="pt_data_worker"))
    found = run(ticks(t, 8, pegged, gpus=gpu, processes=processes))[-1]
    assert "data-starved" in ids(found) and "gpu-starved" not in ids(found), ids(found)
    assert find(found, "data-starved").title.startswith("GPU0 starved")
    # the same GPU and pegged worker, with stacks that do not wait for data: gpu-starved's guess still speaks
    fed = replace(BALANCED, processes=(*BALANCED.processes[:1], worker(WORKER_PID, cpu=99.0)))
    alone = run(ticks(Timeline(cores=2), 8, fed, gpus=gpu, processes=processes))[-1]
    assert "gpu-starved" in ids(alone) and "data-starved" not in ids(alone), ids(alone)
