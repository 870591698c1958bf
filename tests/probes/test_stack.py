"""Where a rank's time goes: py-spy's raw output parsed, each main-thread stack put in its category, and the
background sampler driving a py-spy stand-in (samples, a refusal, a missing tool, going idle)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from hwtop.probes import stack_sampler
from hwtop.probes.stack_classify import Frame, classify, loader_kind, parse_frame, parse_raw
from hwtop.probes.stack_sampler import StackSampler

SITE = "/usr/lib/python3.11/site-packages/torch"
LIB = "/usr/lib/python3.11"
LOADER = f"{SITE}/utils/data/dataloader.py"


def stack(*frames: str) -> str:
    return ";".join(frames)


def frame(function: str, path: str, line: int = 1) -> str:
    return f"{function} ({path}:{line})"


TRAIN = frame("<module>", "/home/me/train.py", 57)
MULTI_WAIT = stack(TRAIN, frame("_BaseDataLoaderIter.__next__", LOADER, 733),
                   frame("_MultiProcessingDataLoaderIter._next_data", LOADER, 1505),
                   frame("_MultiProcessingDataLoaderIter._try_get_data", LOADER, 1291),
                   frame("Queue.get", f"{LIB}/multiprocessing/queues.py", 113))
SINGLE = stack(TRAIN, frame("_BaseDataLoaderIter.__next__", LOADER),
               frame("_SingleProcessDataLoaderIter._next_data", LOADER),
               frame("_MapDatasetFetcher.fetch", f"{SITE}/utils/data/_utils/fetch.py"),
               frame("Augmented.__getitem__", "/home/me/train.py", 30),
               frame("conv2d", f"{SITE}/nn/functional.py"))  # a transform's torch op is loading, not compute
FORWARD = stack(TRAIN, frame("Module._wrapped_call_impl", f"{SITE}/nn/modules/module.py"),
                frame("Linear.forward", f"{SITE}/nn/modules/linear.py"))
BACKWARD = stack(TRAIN, frame("Tensor.backward", f"{SITE}/_tensor.py"),
                 frame("_engine_run_backward", f"{SITE}/autograd/graph.py"))
STEP = stack(TRAIN, frame("SGD.step", f"{SITE}/optim/sgd.py"))
ALLREDUCE = stack(TRAIN, frame("all_reduce", f"{SITE}/distributed/distributed_c10d.py"))
SAVE = stack(TRAIN, frame("save", f"{SITE}/serialization.py"), frame("_save", f"{SITE}/serialization.py"))
START = stack(TRAIN, frame("DataLoader.__iter__", LOADER), frame("DataLoader._get_iterator", LOADER),
              frame("_MultiProcessingDataLoaderIter.__init__", LOADER),
              frame("BaseProcess.start", f"{LIB}/multiprocessing/process.py"))
JOIN = stack(TRAIN, frame("_BaseDataLoaderIter.__next__", LOADER),
             frame("_MultiProcessingDataLoaderIter._next_data", LOADER),
             frame("_MultiProcessingDataLoaderIter._shutdown_workers", LOADER),
             frame("BaseProcess.join", f"{LIB}/multiprocessing/process.py"))
SYNC = stack(TRAIN, frame("synchronize", f"{SITE}/cuda/__init__.py"))
OTHER = stack(TRAIN, frame("log_metrics", "/home/me/metrics.py", 12))

RAW = "\n".join([
    f"thread (4242): MainThread;{MULTI_WAIT} 40",
    f"thread (4242): MainThread;{FORWARD} 15",
    f"thread (4242): MainThread;{BACKWARD} 10",
    f"thread (4242): MainThread;{STEP} 5",
    f"thread (4242): MainThread;{ALLREDUCE} 6",
    f"thread (4242): MainThread;{SAVE} 4",
    f"thread (4242): MainThread;{START} 7",
    f"thread (4242): MainThread;{JOIN} 3",
    f"thread (4242): MainThread;{SYNC} 2",
    f"thread (4242): MainThread;{OTHER} 8",
    f"thread (4250): Thread-1 (_pin_memory_loop);{frame('_pin_memory_loop', SITE + '/utils/data/_utils/x.py')} 99",
    "py-spy> Stopped sampling because the process exited",
])


def test_main_thread_samples_by_category_with_sites():
    tally = parse_raw(RAW, 4242)
    assert tally.samples == 100  # the pin-memory thread's 99 are not the main thread's
    assert dict(tally.counts) == {"data": 40, "compute": 30, "collective": 6, "checkpoint": 4, "workers": 10,
                                  "gpu-wait": 2, "other": 8}  # torch.cuda.synchronize: waiting for the GPU
    assert tally.sites["data"].most_common(1)[0][0] == "train.py:57 <module>"
    assert tally.sites["other"].most_common(1)[0][0] == "metrics.py:12 log_metrics"
    assert tally.loaders.most_common(1)[0][0] == "multi-process"


# The main thread receiving a batch its worker has already made: the tensors' shared memory, passed as a file
# descriptor that it fetches from the worker (multiprocessing's resource sharer), as py-spy shows slow_store.py.
HANDOVER = stack(TRAIN, frame("_BaseDataLoaderIter.__next__", LOADER, 725),
                 frame("_MultiProcessingDataLoaderIter._next_data", LOADER, 1505),
                 frame("_MultiProcessingDataLoaderIter._get_data", LOADER, 1464),
                 frame("_MultiProcessingDataLoaderIter._try_get_data", LOADER, 1291),
                 frame("Queue.get", f"{LIB}/multiprocessing/queues.py", 122),
                 frame("rebuild_storage_fd", f"{SITE}/multiprocessing/reductions.py", 538),
                 frame("DupFd.detach", f"{LIB}/multiprocessing/resource_sharer.py", 57),
                 frame("_ResourceSharer.get_connection", f"{LIB}/multiprocessing/resource_sharer.py", 86))


def test_receiving_a_batch_already_made_is_data_but_counted_apart_from_waiting_for_one():
    tally = parse_raw("\n".join([f"thread (4242): MainThread;{MULTI_WAIT} 30",
                                  f"thread (4242): MainThread;{HANDOVER} 12",
                                  f"thread (4242): MainThread;{FORWARD} 58"]), 4242)
    assert dict(tally.counts) == {"data": 42, "compute": 58} and tally.handovers == 12
    other = parse_raw(f"thread (4242): MainThread;{HANDOVER} 3", 4242)
    tally.merge(other)
    assert tally.handovers == 15


PYTHON_LOOP = stack(TRAIN, frame("_BaseDataLoaderIter.__next__", LOADER),
                    frame("_SingleProcessDataLoaderIter._next_data", LOADER),
                    frame("_MapDatasetFetcher.fetch", f"{SITE}/utils/data/_utils/fetch.py"),
                    frame("Clips.__getitem__", "/home/me/train.py", 44),
                    frame("Clips.emphasised", "/home/me/train.py", 37))  # the job's own line, innermost
DECODE = stack(TRAIN, frame("_BaseDataLoaderIter.__next__", LOADER),
               frame("_SingleProcessDataLoaderIter._next_data", LOADER),
               frame("_MapDatasetFetcher.fetch", f"{SITE}/utils/data/_utils/fetch.py"),
               frame("Photos.__getitem__", "/home/me/train.py", 50),
               frame("ImageFile.load", "/usr/lib/python3/dist-packages/PIL/ImageFile.py", 290))


def test_loading_in_the_jobs_own_python_lines_is_counted_apart_from_a_librarys():
    """A transform written as a Python loop: its samples end in the job's own line; a decode ends in PIL's."""
    tally = parse_raw("\n".join([f"thread (4242): MainThread;{PYTHON_LOOP} 30",
                                  f"thread (4242): MainThread;{DECODE} 10",
                                  f"thread (4242): MainThread;{MULTI_WAIT} 5",
                                  f"thread (4242): MainThread;{FORWARD} 55"]), 4242)
    assert tally.counts["data"] == 45 and tally.python == 30
    tally.merge(parse_raw(f"thread (4242): MainThread;{PYTHON_LOOP} 2", 4242))
    assert tally.python == 32


def test_a_single_process_loader_is_data_and_says_num_workers_0():
    frames = [parse_frame(part) for part in SINGLE.split(";")]
    assert classify(frames) == "data" and loader_kind(frames) == "single-process"


def test_frames_without_class_names_still_classify():
    """Python before 3.11: py-spy shows bare function names."""
    frames = [Frame("<module>", "/home/me/train.py", 5), Frame("__next__", LOADER, 1), Frame("_next_data", LOADER, 2),
              Frame("_try_get_data", LOADER, 3)]
    assert classify(frames) == "data" and loader_kind(frames) == "multi-process"
    assert parse_frame("odd frame without location") == Frame("odd frame without location", "", None)


def fake_py_spy(tmp_path: Path, body: str) -> str:
    script = tmp_path / "py-spy"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def wait_for(sampler: StackSampler, pid: int, condition, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sampler.want({pid: 0})
        stacks, note = sampler.results()
        if stacks and condition(stacks[0], note):
            return stacks[0], note
        time.sleep(0.05)
    raise AssertionError(sampler.results())


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_sampler_runs_py_spy_in_chunks_and_sums_the_window(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text(RAW.replace("4242", str(os.getpid())))
    # record --pid P ... --output FILE: the stand-in copies a recorded chunk to FILE.
    tool = fake_py_spy(tmp_path, f'while [ "$1" != "--output" ]; do shift; done\ncp {raw} "$2"\n')
    sampler = StackSampler(py_spy=tool, first_chunk_s=0.1, chunk_s=0.1)
    try:
        stacks, note = wait_for(sampler, os.getpid(), lambda s, _: s.samples >= 200)
        assert note is None and stacks.rank == 0 and stacks.message is None
        assert stacks.fraction("data") == pytest.approx(0.4) and stacks.fraction("workers") == pytest.approx(0.1)
        assert stacks.site("data") == "train.py:57 <module>" and stacks.data_loader == "multi-process"
        directory = sampler._directory  # noqa: SLF001
        assert directory is not None and len(list(Path(directory).iterdir())) <= 1  # read files are removed
    finally:
        sampler.close()
    assert not Path(directory).exists()  # and the private directory with the last one


def test_finish_keeps_what_the_running_chunk_sampled(tmp_path):
    """A short watch (doctor) ends inside a 10 s chunk: its samples so far count, as py-spy writes them on SIGINT."""
    raw = tmp_path / "raw.txt"
    raw.write_text(RAW.replace("4242", str(os.getpid())))
    started = tmp_path / "started"
    tool = fake_py_spy(tmp_path, f'while [ "$1" != "--output" ]; do shift; done\nout="$2"\n'
                                 f'trap \'cp {raw} "$out"; exit 0\' INT\ntouch {started}\nsleep 30 &\nwait $!\n')
    sampler = StackSampler(py_spy=tool, first_chunk_s=30.0, chunk_s=30.0)
    try:
        sampler.want({os.getpid(): 0})
        deadline = time.monotonic() + 60.0  # a bound for a hang only: under load the fake tool starts late
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists()  # its trap is set: an interrupt now writes its samples
        assert sampler.results()[0][0].samples == 0
        sampler.finish()
        stacks = sampler.results()[0][0]
        assert stacks.samples == 100 and stacks.message is None and stacks.fraction("data") == pytest.approx(0.4)
        assert not sampler._running  # noqa: SLF001
    finally:
        sampler.close()


def test_ptrace_refused_says_what_to_run_and_missing_py_spy_says_how_to_install(tmp_path, monkeypatch):
    tool = fake_py_spy(tmp_path, "echo 'Error: Failed to attach' >&2\necho 'Permission denied (os error 13)' >&2\n"
                                 "exit 1\n")
    sampler = StackSampler(py_spy=tool, first_chunk_s=0.1, chunk_s=0.1)
    try:
        stacks, _ = wait_for(sampler, os.getpid(), lambda s, _: s.message is not None and "ptrace" in s.message)
        assert stacks.samples == 0 and "SYS_PTRACE" in (stacks.message or "")
    finally:
        sampler.close()
    monkeypatch.setattr(stack_sampler, "find_py_spy", lambda: None)
    missing = StackSampler()
    missing.want({os.getpid(): None})
    assert missing.results()[1] == "py-spy is not installed: pip install py-spy (or pip install 'hwtop[stack]')"
    missing.close()


@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_the_worker_stops_when_nobody_asks_and_kills_a_chunk_that_overruns(tmp_path, monkeypatch):
    monkeypatch.setattr(stack_sampler, "IDLE_STOP_S", 0.3)
    monkeypatch.setattr(stack_sampler, "GRACE_S", 0.2)
    tool = fake_py_spy(tmp_path, "exec sleep 30\n")  # never finishes its 1 s chunk
    sampler = StackSampler(py_spy=tool, first_chunk_s=1.0, chunk_s=1.0)
    sampler.want({os.getpid(): 0})
    stacks, _ = wait_for(sampler, os.getpid(), lambda s, _: s.message is not None and "did not finish" in s.message)
    thread = sampler._thread  # noqa: SLF001
    assert thread is not None
    thread.join(timeout=5.0)  # nobody asks any more
    assert not thread.is_alive() and not sampler._running  # noqa: SLF001
    sampler.close()
