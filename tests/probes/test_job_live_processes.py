"""Job focus against real processes started here: a parent with DataLoader-like workers pinned to CPUs, workers
that come and go, the job ending (with a zombie's exit code), the embedded workload's ranks, py-spy, the
command line and the job screen."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from hwtop.probes.job import JobError, JobProbe, parse_numa_maps
from hwtop.probes.stack import dump
from tests.usage import assert_one_line_error

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2

PINNED_JOB = textwrap.dedent("""
    import multiprocessing as mp, os, sys, time
    def worker(placed):
        with open("/proc/self/comm", "w") as handle:
            handle.write("pt_data_worker")   # what torch's DataLoader workers call themselves
        os.sched_setaffinity(0, {1})
        placed.wait()
        end = time.time() + 60
        while time.time() < end:
            pass
    if __name__ == "__main__":
        os.sched_setaffinity(0, {0})
        fork = mp.get_context("fork")
        placed = fork.Barrier(3)  # "ready" only once both workers are named and pinned (a loaded box is slow)
        workers = [fork.Process(target=worker, args=(placed,)) for _ in range(2)]
        for w in workers:
            w.start()
        placed.wait()
        print("ready", flush=True)
        time.sleep(60)
""")


def start(script: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def stop(process: subprocess.Popen[str], workers: tuple[int, ...] | list[int] = ()) -> None:
    """The parent and its workers (orphans once the parent is gone, so killed by pid)."""
    for pid in (process.pid, *workers):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    process.wait(10)


def children_of(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [int(p) for p in handle.read().split()]


@pytest.mark.skipif(not TWO_CPUS, reason="pinning parent and workers apart needs two CPUs")
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_tree_roles_affinity_and_the_cpus_threads_ran_on():
    process = start(PINNED_JOB)
    workers = children_of(process.pid)
    try:
        probe = JobProbe(roots=(process.pid,))
        probe.check()
        probe.read()
        time.sleep(1.0)
        job = probe.read()
        by_pid = {p.pid: p for p in job.processes}
        assert set(by_pid) == {process.pid, *workers} and job.status == "running"
        parent = by_pid[process.pid]
        assert parent.depth == 0 and parent.cpu_affinity == (0,) and parent.thread_cpus == (0,)
        for pid in workers:
            worker = by_pid[pid]
            assert worker.role == "DataLoader worker" and worker.depth == 1 and worker.ppid == process.pid
            assert worker.cpu_affinity == (1,) and worker.thread_cpus == (1,)
            # they spin (sharing CPU 1 with whatever else runs there: 8% each was seen beside a load of 20)
            assert worker.cpu_percent is not None and worker.cpu_percent > 1
        assert parent.numa_pages and sum(pages for _, pages in parent.numa_pages) > 0
        assert job.cpu_percent >= sum(by_pid[w].cpu_percent for w in workers) - 0.05  # each rounded to 0.1
        assert job.rss_bytes == sum(p.rss_bytes for p in job.processes)
    finally:
        stop(process, workers)


COMING_AND_GOING = textwrap.dedent("""
    import multiprocessing as mp, time
    def brief():
        time.sleep(1.5)
    if __name__ == "__main__":
        print("ready", flush=True)
        time.sleep(1.0)
        child = mp.get_context("fork").Process(target=brief)
        child.start()
        child.join()
        time.sleep(1.5)
        raise SystemExit(3)
""")


@pytest.mark.slow
def test_workers_join_and_leave_and_the_job_ends_with_its_exit_code():
    process = start(COMING_AND_GOING)
    try:
        probe = JobProbe(roots=(process.pid,))
        seen_counts, statuses, job = [], [], None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            job = probe.read()
            seen_counts.append(sum(1 for p in job.processes if p.alive))
            statuses.append(job.status)
            if job.status == "ended":
                break
            time.sleep(0.2)
        assert 2 in seen_counts and seen_counts[0] == 1  # the worker joined the job while focused
        assert job is not None and job.status == "ended" and job.pids_seen == 2
        assert [p.pid for p in job.processes] == [process.pid]  # the child that ended left the table
        parent = next(p for p in job.processes if p.pid == process.pid)
        assert parent.exit_code == 3  # read from the zombie: we have not reaped it yet
        assert "exit codes pid" in (job.message or "") and f"pid {process.pid}: 3" in job.message
    finally:
        process.wait(10)


@pytest.mark.slow
def test_the_embedded_workload_focused_by_pid_shows_its_ranks_and_workers():
    job_process = subprocess.Popen([sys.executable, "-m", "hwtop.workload.job", "--device", "cpu", "--world-size", "2",
                                    "--num-workers", "1", "--seconds", "40"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                   start_new_session=True)
    try:
        assert job_process.stdout is not None
        steps = 0
        deadline = time.monotonic() + 120
        while steps < 2 and time.monotonic() < deadline:  # both ranks are training
            line = job_process.stdout.readline()
            steps += '"event": "step"' in line
        probe = JobProbe(roots=(job_process.pid,))
        probe.read()
        time.sleep(1.0)
        job = probe.read()
        roles = {p.pid: p.role for p in job.processes}
        assert roles[job_process.pid] == "launcher"
        ranks = sorted(p.rank for p in job.processes if p.role.startswith("rank"))
        assert ranks == [0, 1]
        assert all(p.local_rank == p.rank for p in job.processes if p.role.startswith("rank"))
        assert sum(1 for role in roles.values() if role == "DataLoader worker") == 2
        assert "helper" in roles.values()  # multiprocessing's resource tracker, not mistaken for a rank
    finally:
        import signal

        os.killpg(job_process.pid, signal.SIGKILL)
        job_process.wait(10)


def test_numa_maps_parsing():
    text = ("7f00 default anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4\n"
            "7f10 interleave:0-1 file=/usr/lib/libc.so mapped=10 N0=4 N1=6\n7f20 default\n")
    assert parse_numa_maps(text) == {0: 6, 1: 7}


# ----- py-spy -----

@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_py_spy_dumps_a_process_stack():
    if dump(os.getpid()).message and "not installed" in dump(os.getpid()).message:
        pytest.skip("py-spy is not installed (it is in the test extra)")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time\ndef waiting_for_data():\n    time.sleep(60)\n"
                                "waiting_for_data()\n"])
    try:
        time.sleep(1.0)
        result = dump(sleeper.pid)
        assert result.message is None and "waiting_for_data" in result.text
    finally:
        sleeper.kill()
        sleeper.wait()


def test_py_spy_missing_forbidden_and_gone_say_what_is_missing(tmp_path, monkeypatch):
    import shutil

    import hwtop.probes.stack as stack

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(stack, "find_py_spy", lambda: None)
    assert "py-spy is not installed" in (dump(os.getpid()).message or "")
    fake = tmp_path / "py-spy"  # py-spy's own output when ptrace is refused
    fake.write_text("#!/bin/sh\necho 'Error: Failed to get process executable name. Check that the process is "
                    "running.' >&2\necho '' >&2\necho 'Caused by:' >&2\necho '    0: Permission denied (os error 13)'"
                    " >&2\nexit 1\n")
    fake.chmod(0o755)
    forbidden = dump(os.getpid(), py_spy=str(fake)).message
    assert forbidden.startswith(f"ptrace not permitted for pid {os.getpid()}") and "SYS_PTRACE" in forbidden
    assert "Permission denied (os error 13)" in forbidden
    assert dump(99999999).message == "pid 99999999 is gone (no such process)"


# ----- command line and screen -----

@pytest.mark.parametrize(("args", "message"), [
    (("--pid", "99999999"), "no process with pid 99999999"),
    (("--job", "no-such-job-anywhere-[0-9]{40}"), "no process matches --job"),
    (("--job", "("), "is not a regular expression"),
    (("--pid", "abc"), "invalid int value"),
])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_bad_focus_exits_2_with_one_line(args, message):
    assert_one_line_error(subprocess.run([*HWTOP, *args], capture_output=True, text=True, timeout=30), message)


def test_check_refuses_nothing_to_focus():
    with pytest.raises(JobError, match="no process with pid"):
        JobProbe(roots=(99999999,)).check()


@pytest.mark.slow  # a long Pilot session (several screens, live ticks): the slow step runs it
async def test_job_screen_live_with_stack_on_a_key():
    from hwtop.session.sampler import Sampler
    from hwtop.tui.app import HwtopApp
    from hwtop.tui.job_screen import JobScreen

    process = start(PINNED_JOB.replace("os.sched_setaffinity(0, {1})", "pass").replace(
        "os.sched_setaffinity(0, {0})", "pass"))
    workers = children_of(process.pid)
    sampler = Sampler(gpu=None, job=JobProbe(roots=(process.pid,)))
    app = HwtopApp(sampler, interval=0.3, open_job=True)
    try:
        async with app.run_test(size=(200, 45)) as pilot:
            await app.first_frame.wait()
            await pilot.pause(0.8)
            assert isinstance(app.screen, JobScreen)
            text = "\n".join(line.plain for line in app.screen.panel.lines(196))
            assert f"{process.pid} launcher" not in text  # a parent of workers is not a launcher of ranks
            assert str(process.pid) in text and text.count("DataLoader worker") == 2
            assert "RUNNING 3 process(es)" in text
            await pilot.press("d")
            for _ in range(100):
                await pilot.pause(0.1)
                stack = "\n".join(line.plain for line in app.screen.panel.stack)
                if "reading with py-spy" not in stack:
                    break
            assert f"Python stack of pid {process.pid}" in stack
            assert "<module>" in stack or "not installed" in stack
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, JobScreen)
    finally:
        stop(process, workers)
