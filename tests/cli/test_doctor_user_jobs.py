"""Issue 47 end to end: ordinary PyTorch scripts (tests/jobs/), each with one problem a user meets, watched from
outside by the real `hwtop doctor --pid` for its default 20 s. Each must exit 1 with the right finding, its
evidence (pid, line, rate) and the fix that fits this box (no GPU here: nothing that needs one); each healthy twin
must exit 0 with no finding. Lines are looked up in the scripts, not written here."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_doctor_bottleneck_jobs import JOBS, Job, findings, running, torch_missing
from tests.live_processes import descendants

HWTOP = [sys.executable, "-m", "hwtop"]
SCRIPTS = ("slow_store.py", "stuck_worker.py", "stuck_main.py", "tokenize_in_loop.py", "keep_losses.py")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(torch_missing, reason="the jobs need torch")]


def doctor(pid: int) -> tuple[int, dict[str, Any]]:
    """`hwtop doctor --pid PID --json` with its default watch (20 s for a job)."""
    done = subprocess.run([*HWTOP, "doctor", "--pid", str(pid), "--json"], capture_output=True, text=True,
                          timeout=200)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def line_of(script: str, text: str) -> int:
    lines = (JOBS / script).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def quiet(script: str, *args: str) -> None:
    """The healthy twin: nothing found, exit 0."""
    with running(script, "--time-limit", "120", *args) as job:
        rc, report = doctor(job.process.pid)
    assert report["findings"] == [] and rc == 0, report["findings"]


def every_fix(report: dict[str, Any]) -> str:
    return " ".join(fix for f in report["findings"] for fix in f["fix"])


def steps_per_s(job: Job) -> float:
    """The job's own rate (`... 3.0 steps/s`): the median of the lines it printed after its first step, so one
    slow stretch (an epoch's end, a busy moment of the box) does not stand for the run."""
    rates = [float(m.group(1)) for line in job.output[1:] for m in [re.search(r"([\d.]+) steps/s", line)] if m]
    assert rates, "".join(job.output[-5:])
    return statistics.median(rates)


def test_a_loader_waiting_on_a_slow_store_gets_the_workers_it_needs_and_that_number_speeds_it_up():
    with running("slow_store.py", "--time-limit", "120") as job:
        rc, report = doctor(job.process.pid)
        before = steps_per_s(job)
    found = findings(report)
    assert rc == 1 and "data-starved" in found, report["findings"]
    finding = found["data-starved"]
    arithmetic = next(line for line in finding["evidence"] if "the step's own time" in line)
    assert re.search(r"is on a CPU [\d.]+% of the time .*; its 1 DataLoader worker\(s\) make batches in",
                     arithmetic), arithmetic  # the step's own time from its CPU time, not from a few samples
    named = re.match(r"DataLoader\(num_workers=(\d+)\) \(now 1\): a batch takes one worker ([\d.]+)x",
                     finding["fix"][0])
    assert named, finding["fix"]
    workers, ratio = int(named.group(1)), float(named.group(2))
    assert workers >= ratio > 1.5 and "so more of them cost little CPU" in finding["fix"][0]
    assert "pin_memory" not in every_fix(report) and "prefetch" not in every_fix(report)  # no GPU; cannot keep up
    # The number it named is enough: the job no longer waits for data, and it is several times faster.
    with running("slow_store.py", "--time-limit", "120", "--num-workers", str(workers)) as job:
        rc, after_report = doctor(job.process.pid)
        after = steps_per_s(job)
    shares = [(s["fractions"], s["handover"]) for s in (after_report.get("job") or {}).get("stacks", [])]
    assert "data-starved" not in findings(after_report), (workers, shares, after_report["findings"])
    assert rc == (1 if after_report["findings"] else 0), after_report["findings"]
    # Fed, the step is the limit: its arithmetic, tens of milliseconds on a quiet 2-core box, 100 ms beside other
    # work (3.0 -> 9.8 steps/s there); starved, one worker's 16 reads of 20 ms (~3 steps/s).
    assert after >= 2 * before, (before, after, workers)


def test_a_stuck_worker_is_a_hang_named_with_its_pid_line_and_time():
    line = line_of("stuck_worker.py", "STORE_LOCK.acquire()")
    with running("stuck_worker.py", "--time-limit", "120") as job:
        rc, report = doctor(job.process.pid)
        workers = set(descendants(job.process.pid))
    found = findings(report)
    assert rc == 1 and "worker-stuck" in found, report["findings"]
    finding = found["worker-stuck"]
    evidence = re.match(rf"DataLoader worker pid (\d+) has not moved for (\d+) s: all \d+ stack samples at "
                        rf"stuck_worker\.py:{line} Store\.read, using [\d.]+% of a core", finding["evidence"][0])
    assert evidence, finding["evidence"]
    pid = int(evidence.group(1))
    assert pid in workers and finding["severity"] == "critical" and int(evidence.group(2)) >= 10
    assert "waits for data in 100%" in finding["evidence"][1] or "waits for data in 9" in finding["evidence"][1]
    assert f"worker pid {pid} is blocked at stuck_worker.py:{line}" in finding["fix"][0]
    assert "d on it in the job view" in finding["fix"][0] and "DataLoader(..., timeout=" in finding["fix"][1]
    assert "prefetch" not in every_fix(report) and "num_workers=" not in every_fix(report)
    quiet("stuck_worker.py", "--no-hang")


def test_a_main_thread_stuck_outside_the_loader_is_named_with_its_line():
    line = line_of("stuck_main.py", "records.join()")
    with running("stuck_main.py", "--time-limit", "120") as job:
        job.wait_for(re.compile(r"epoch 0 done at step \d+: waiting"), "the job did not reach its epoch's end")
        rc, report = doctor(job.process.pid)  # its main thread is in records.join() from here on
    found = findings(report)
    assert rc == 1 and "loop-stuck" in found, report["findings"]
    finding = found["loop-stuck"]
    assert re.match(rf"pid {job.process.pid}'s main thread has not moved for \d+ s: all \d+ stack samples at "
                    rf"stuck_main\.py:{line} main \(innermost frame threading\.py:\d+ Condition\.wait\)",
                    finding["evidence"][0]), finding["evidence"]
    assert finding["pids"] == [job.process.pid] and "prefetch" not in every_fix(report)
    quiet("stuck_main.py", "--no-hang")


def test_tokenizing_in_the_training_loop_is_named_with_its_line_and_moved_to_the_dataset():
    line = line_of("tokenize_in_loop.py", 'word = word.replace("--", "-")')
    with running("tokenize_in_loop.py", "--time-limit", "120") as job:
        rc, report = doctor(job.process.pid)
    found = findings(report)
    assert rc == 1 and "work-in-loop" in found, report["findings"]
    finding = found["work-in-loop"]
    share = re.search(r"outside the model, the optimizer and the DataLoader in (\d+)% of \d+ stack samples \(limit "
                      rf"50%\), mostly at tokenize_in_loop\.py:{line} tokenize", finding["evidence"][0])
    assert share and int(share.group(1)) >= 50, finding["evidence"]
    assert finding["fix"][0].startswith(f"Move the work at tokenize_in_loop.py:{line} tokenize into the Dataset's "
                                        "__getitem__")
    quiet("tokenize_in_loop.py", "--pretokenize")  # tokenized once, before training: a healthy job


def test_memory_that_grows_is_named_with_its_rate_and_when_the_box_runs_out():
    with running("keep_losses.py", "--time-limit", "120") as job:
        # Attached once the leak has run ~16 s (eight of its 2-s progress lines), as a user attaches to a job that
        # has been growing: in its first seconds its rate falls by about three quarters (each garbage collection
        # walks more kept graphs), which a 20 s watch from its start can read as levelling off (issue 47's note).
        for _ in range(7):
            job.wait_for(re.compile("epoch "), "the job stopped printing its progress")
        rc, report = doctor(job.process.pid)
    found = findings(report)
    assert rc == 1 and "memory-growing" in found, report["findings"]
    finding = found["memory-growing"]
    rate = re.search(r"grew from [\d.]+ GiB to [\d.]+ GiB in \d+ s: ([\d.]+) MiB/s, steadily", finding["evidence"][0])
    assert rate and float(rate.group(1)) >= 2.0, finding["evidence"]
    assert re.match(r"at that rate the box's [\d.]+ GiB available \(of [\d.]+ GiB\) run out in \d+ (min|h|s)",
                    finding["evidence"][1]), finding["evidence"]
    assert any(line.startswith(f"growing: pid {job.process.pid} +") for line in finding["evidence"])
    assert finding["fix"][0].startswith("Tensors kept across steps: a loss or an output appended to a list")
    quiet("keep_losses.py", "--log-floats")


def test_memory_that_only_warms_up_stays_quiet():
    quiet("keep_losses.py", "--recent", "15")  # grows for 15 steps, then holds


def test_no_job_is_left_behind():
    """Each test stops its job's whole tree (running() kills the descendants): none of the scripts runs now."""
    scripts = {str(JOBS / name).encode() for name in SCRIPTS}  # this checkout's: other checkouts run their own
    left = []
    for pid in Path("/proc").iterdir():
        if pid.name.isdigit():
            try:
                argv = (pid / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if len(argv) > 1 and argv[1] in scripts:
                left.append(pid.name)
    assert not left, left
