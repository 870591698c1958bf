"""DDP's hidden wait: samples inside `loss.backward()` that the main thread's blocked time proves were waits
become `collective` (a lower bound), on a real process's schedstat through the sampler; GPU ranks and plain
processes are left as the stack reads; cumulative seconds per phase and the busy site for RankFigures."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.stack_classify import CATEGORIES, Frame, Tally
from hwtop.probes.stack_sampler import StackSampler
from hwtop.probes.stack_waits import busy_site, main_thread_times, move_hidden_wait, uses_cuda

SITE = "/usr/lib/python3.11/site-packages/torch"
TRAIN = "/home/me/train.py"


def tally(**counts: int) -> Tally:
    out = Tally()
    frames = {"compute": [Frame("<module>", TRAIN, 40), Frame("Tensor.backward", f"{SITE}/_tensor.py", 1)],
              "other": [Frame("<module>", TRAIN, 30), Frame("augment", TRAIN, 12)],
              "data": [Frame("<module>", TRAIN, 20), Frame("__next__", f"{SITE}/utils/data/dataloader.py", 1),
                       Frame("_next_data", f"{SITE}/utils/data/dataloader.py", 2)]}
    for category, count in counts.items():
        out.add(frames[category], count)
    return out


def test_blocked_time_beyond_every_other_category_moves_from_compute_to_collective():
    t = tally(compute=90, other=10)
    assert move_hidden_wait(t, blocked=0.85) == 75  # 85 blocked, of which at most 10 could be the other Python
    assert dict(t.counts) == {"compute": 15, "collective": 75, "other": 10}
    assert t.sites["collective"].most_common(1)[0][0] == "train.py:40 <module>"  # the loss.backward() line
    assert busy_site(t) == "train.py:40 <module>"  # 15 computing samples there still, against 10 in augment


def test_a_rank_that_is_never_blocked_or_never_in_compute_keeps_its_samples():
    busy = tally(compute=60, other=40)
    assert move_hidden_wait(busy, blocked=0.05) == 0 and busy.counts["collective"] == 0
    waiting = tally(data=70, other=30)
    assert move_hidden_wait(waiting, blocked=0.9) == 0 and dict(waiting.counts) == {"data": 70, "other": 30}
    assert busy_site(waiting) == "train.py:12 augment"  # the data samples are waits, not what it does


def test_a_rank_that_only_waits_is_busy_where_it_waits():
    """Issue 55: ranks at WAIT 100% in a hang showed a site they were not at; with no sample outside waits, the
    site is the line the wait was called from."""
    assert busy_site(tally(data=50)) == "train.py:20 <module>"
    assert busy_site(tally(data=50, other=1)) == "train.py:12 augment"  # one sample of its own work says it
    assert busy_site(Tally()) is None


@given(st.integers(0, 200), st.integers(0, 200), st.integers(0, 200), st.floats(0.0, 1.0))
def test_moved_samples_never_exceed_compute_or_the_blocked_share(compute, other, data, blocked):
    t = tally(compute=compute, other=other, data=data)
    total = t.samples
    moved = move_hidden_wait(t, blocked)
    assert 0 <= moved <= compute and moved <= round(blocked * total) + 1
    assert t.samples == total and t.counts["compute"] == compute - moved


def test_a_process_that_loaded_the_cuda_driver_is_a_gpu_rank(tmp_path):
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "maps").write_text("7f00-7f10 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07\n")
    (tmp_path / "8").mkdir()
    (tmp_path / "8" / "maps").write_text("7f00-7f10 r-xp 0 08:01 1 /usr/lib/python3.11/site-packages/torch/lib/"
                                         "libtorch_cpu.so\n")
    assert uses_cuda(7, str(tmp_path)) and not uses_cuda(8, str(tmp_path)) and not uses_cuda(9, str(tmp_path))


def test_main_thread_times_read_schedstat_and_none_for_a_gone_process():
    times = main_thread_times(os.getpid())
    assert times is not None and times[0] > 0
    assert main_thread_times(2 ** 22 + 7) is None


# ----- through the sampler, on a real process -----

BACKWARD = (f"<module> ({TRAIN}:40);Tensor.backward ({SITE}/_tensor.py:626);"
            f"_engine_run_backward ({SITE}/autograd/graph.py:841)")
AUGMENT = f"<module> ({TRAIN}:30);augment ({TRAIN}:12)"


def fake_py_spy(tmp_path: Path, pid: int) -> str:
    raw = tmp_path / "raw.txt"
    raw.write_text(f"thread ({pid}): MainThread;{BACKWARD} 27\nthread ({pid}): MainThread;{AUGMENT} 3\n")
    script = tmp_path / "py-spy"
    # record --pid P --rate R --duration D ... --output FILE: sleeps out its chunk, then writes the samples
    script.write_text(f'#!/bin/sh\nwhile [ "$1" != "--output" ]; do shift; done\nsleep 0.5\ncp {raw} "$2"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def sampled(sampler: StackSampler, pid: int, rank: int | None, on_gpu: frozenset[int] = frozenset()):
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        sampler.want({pid: rank}, on_gpu)
        stacks, _ = sampler.results()
        if stacks and stacks[0].samples >= 60:
            return stacks[0]
        time.sleep(0.05)
    raise AssertionError(sampler.results())


@pytest.fixture
def sleeper():
    """A process whose main thread is blocked all the time, as a rank waiting for its peers is."""
    process = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"  # its start-up is over
    yield process.pid
    process.kill()
    process.wait()


@pytest.mark.parametrize("rank, on_gpu, collective", [(0, False, True), (0, True, False), (None, False, False)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_blocked_cpu_rank_inside_backward_reads_collective(tmp_path, sleeper, rank, on_gpu, collective):
    sampler = StackSampler(py_spy=fake_py_spy(tmp_path, sleeper), first_chunk_s=1.0, chunk_s=1.0)
    try:
        stacks = sampled(sampler, sleeper, rank, frozenset({sleeper}) if on_gpu else frozenset())
    finally:
        sampler.close()
    assert stacks.main_running is not None and stacks.main_running < 0.2
    assert (stacks.main_cpu is None) == on_gpu and (stacks.main_cpu or 0.0) < 0.2  # its own CPU: none of it
    if collective:  # 27 of 30 in backward, blocked ~100 %: all but the 3 augment samples were waits
        assert stacks.fraction("collective") >= 0.6 and stacks.fraction("compute") <= 0.3
        assert stacks.site("collective") == "train.py:40 <module>"
    else:  # a GPU rank blocks in backward while the engine's device threads work; a lone process has no peers
        assert stacks.fraction("collective") == 0 and stacks.fraction("compute") == pytest.approx(0.9)
    assert stacks.busy_site in ("train.py:12 augment", "train.py:40 <module>")
    seconds = dict(stacks.phase_seconds)
    assert set(seconds) <= set(CATEGORIES) and sum(seconds.values()) >= 1.0  # two or more chunks of ~1 s
    assert stacks.updated_at is not None and abs(stacks.updated_at - time.time()) < 15


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_main_thread_on_a_cpu_reads_its_own_cpu_share(tmp_path):
    """The step's own time for the loader's arithmetic (advice/rules/loader.py): a main thread that spins is on a
    CPU most of each chunk, read from its schedstat, not from its few samples."""
    spinner = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\nwhile True: pass"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert spinner.stdout is not None and spinner.stdout.readline().strip() == "ready"
        sampler = StackSampler(py_spy=fake_py_spy(tmp_path, spinner.pid), first_chunk_s=1.0, chunk_s=1.0)
        try:
            stacks = sampled(sampler, spinner.pid, None)
        finally:
            sampler.close()
    finally:
        spinner.kill()
        spinner.wait()
    assert stacks.main_cpu is not None and stacks.main_running is not None
    # on a CPU in every chunk, its least share above a blocked thread's even on a loaded box; queued time is in
    # main_running only
    assert 0.05 < stacks.main_cpu <= stacks.main_running


def test_the_cpu_share_is_the_quietest_whole_chunks():
    """Others' load only adds CPU to a starved loop (its intra-op threads spin for a partner waiting for a CPU):
    the quietest chunk stands for its own work; a chunk cut short at a watch's end holds too few steps to count."""
    from hwtop.probes.stack_sampler import _Chunk, _least_cpu

    chunks = [_Chunk(0.0, 3.0, Tally(), 0.06, 0.05), _Chunk(3.0, 13.0, Tally(), 0.04, 0.03),
              _Chunk(13.0, 13.5, Tally(), 0.0, 0.0)]
    assert _least_cpu(chunks) == 0.03
    assert _least_cpu(chunks[2:]) == 0.0 and _least_cpu([]) is None
