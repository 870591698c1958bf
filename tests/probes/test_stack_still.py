"""The stack sampler's stillness and its DataLoader workers: a chunk whose every sample shows one stack (frames
and lines) keeps the time it has not moved, across chunks, until a chunk shows another; a worker's share of
samples inside the loader's fetch, and where in its Dataset. From py-spy's raw format, through a stand-in
py-spy that writes recorded chunks."""

from __future__ import annotations

import os
import time

import pytest

from hwtop.probes.stack_classify import parse_raw
from hwtop.probes.stack_sampler import StackSampler
from tests.probes.test_stack import LIB, MULTI_WAIT, SITE, TRAIN, fake_py_spy, frame, stack

FETCH = f"{SITE}/utils/data/_utils/fetch.py"
WORKER_LOOP = stack(TRAIN, frame("_worker_loop", f"{SITE}/utils/data/_utils/worker.py", 334))
STUCK = stack(WORKER_LOOP, frame("_MapDatasetFetcher.fetch", FETCH, 54),
              frame("Store.__getitem__", "/home/me/stuck_worker.py", 37),
              frame("Store.read", "/home/me/stuck_worker.py", 28))
IDLE = stack(WORKER_LOOP, frame("Queue.get", f"{LIB}/multiprocessing/queues.py", 113))


def raw(pid: int, *stacks: tuple[str, int]) -> str:
    return "\n".join(f"thread ({pid}): MainThread;{s} {count}" for s, count in stacks)


def test_one_stack_in_every_sample_is_kept_and_a_second_one_undoes_it():
    uniform = parse_raw(raw(7, (STUCK, 30)), 7)
    assert uniform.only is not None and uniform.only[-1].function == "Store.read" and uniform.fetches == 30
    assert uniform.fetch_sites.most_common(1)[0][0] == "stuck_worker.py:28 Store.read"
    mixed = parse_raw(raw(7, (STUCK, 20), (IDLE, 10)), 7)
    assert mixed.only is None and mixed.mixed and mixed.fetches == 20
    moved = parse_raw(raw(7, (STUCK, 29), (STUCK.replace(":28)", ":29)"), 1)), 7)
    assert moved.only is None  # one line further is a stack that moved


def sampler_over(tmp_path, body: str) -> StackSampler:
    chunk = tmp_path / "chunk.txt"
    chunk.write_text(body)
    tool = fake_py_spy(tmp_path, f'while [ "$1" != "--output" ]; do shift; done\ncp {chunk} "$2"\n')
    return StackSampler(py_spy=tool, first_chunk_s=0.1, chunk_s=0.1)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_main_thread_that_does_not_move_has_its_stillness_grow_over_chunks(tmp_path):
    pid = os.getpid()
    sampler = sampler_over(tmp_path, raw(pid, (MULTI_WAIT, 30)))
    try:
        deadline = time.monotonic() + 10.0
        stacks = None
        while time.monotonic() < deadline:
            sampler.want({pid: None})
            stacks = sampler.results()[0]
            if stacks and stacks[0].still is not None and stacks[0].still.samples >= 90:
                break
            time.sleep(0.05)
        assert stacks and stacks[0].still is not None, stacks
        still = stacks[0].still
        assert still.category == "data" and still.site == "train.py:57 <module>"
        assert still.frame == "queues.py:113 Queue.get" and still.seconds > 0 and not still.fetching
    finally:
        sampler.close()


def test_workers_are_sampled_beside_the_ranks_with_their_busy_share_and_stillness(tmp_path):
    pid = os.getpid()  # the stand-in answers any pid: one "rank" and one "worker", both this process
    sampler = sampler_over(tmp_path, raw(pid, (STUCK, 30)))
    try:
        deadline = time.monotonic() + 10.0
        workers = ()
        while time.monotonic() < deadline:
            sampler.want({}, workers={pid: 1})
            workers = sampler.worker_results()
            if workers and workers[0].still is not None:
                break
            time.sleep(0.05)
        assert workers, sampler.worker_results()
        worker = workers[0]
        assert worker.parent == 1 and worker.busy == 1.0 and worker.site == "stuck_worker.py:28 Store.read"
        assert worker.still is not None and worker.still.fetching and worker.still.site == worker.site
        assert sampler.results()[0] == ()  # a worker is not a rank
    finally:
        sampler.close()
