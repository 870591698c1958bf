"""The embedded workload for real: torch DDP over gloo on CPU, telemetry, scenarios, lifecycle."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hwtop.workload import launcher
from hwtop.workload.launcher import WorkloadProcess, group_alive

# real torch jobs; torch is found, not imported, so that collecting the fast suite stays fast
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="the workload tests need torch (pip install torch==2.13.0)")]

JOBHOOKS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "jobhooks")


def faults(**hooks: str) -> dict[str, str]:
    """The environment that makes tests/jobhooks/faulty_job.py inject these faults."""
    return {"PYTHONPATH": JOBHOOKS, **{f"HWTOP_TEST_{name.upper()}": value for name, value in hooks.items()}}


@pytest.fixture
def faulty_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher starts the fault-injecting job instead of the real one (which has no test hooks)."""
    monkeypatch.setattr(launcher, "JOB_MODULE", "faulty_job")


def run_job(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> list[dict]:
    module = "faulty_job" if env else "hwtop.workload.job"
    result = subprocess.run([sys.executable, "-P", "-m", module, *args], capture_output=True, text=True,
                            timeout=timeout, env=dict(os.environ, **(env or {})))
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert records, result.stderr[-2000:]
    return records


def test_two_ranks_ddp_synchronises_and_learns() -> None:
    records = run_job("--device", "cpu", "--world-size", "2", "--steps", "40", "--model", "mlp",
                      "--num-workers", "0")
    steps = [r for r in records if r["event"] == "step"]
    assert {r["rank"] for r in steps} == {0, 1}
    assert {r["rank"] for r in records if r["event"] == "started"} == {0, 1}
    finished = {r["rank"]: r for r in records if r["event"] == "finished"}
    assert finished[0]["param_checksum"] == finished[1]["param_checksum"]  # DDP kept the replicas equal
    losses = [r["loss"] for r in steps if r["rank"] == 0]
    assert all(loss == loss and loss < 1e3 for loss in losses)  # finite
    assert sum(losses[-10:]) / 10 < sum(losses[:10]) / 10  # decreasing on average
    assert all(r["rss_bytes"] > 0 and r["step_time_s"] > 0 for r in steps)


def test_bf16_autocast_and_grad_accumulation() -> None:
    records = run_job("--device", "cpu", "--steps", "4", "--model", "mlp", "--amp", "bf16", "--grad-accum", "2",
                      "--batch-size", "8")
    steps = [r for r in records if r["event"] == "step"]
    assert all(r["amp"] == "bf16" for r in steps) and len(steps) == 4
    assert steps[-1]["samples_per_s"] == pytest.approx(16 / steps[-1]["step_time_s"])


def test_dataloader_bound_waits_more_than_balanced() -> None:
    common = ("--device", "cpu", "--steps", "6", "--batch-size", "8")
    bound = run_job("--scenario", "dataloader-bound", *common)
    balanced = run_job("--scenario", "balanced", *common, "--transform-cost", "0.1")
    wait_bound = next(r for r in bound if r["event"] == "finished")["data_wait_fraction"]
    wait_balanced = next(r for r in balanced if r["event"] == "finished")["data_wait_fraction"]
    assert wait_bound > 0.5 and wait_bound > wait_balanced + 0.2, (wait_bound, wait_balanced)


def test_amp_compare_reports_both_runs_and_the_saving() -> None:
    records = run_job("--scenario", "amp-compare", "--device", "cpu", "--steps", "3", "--batch-size", "8",
                      "--num-workers", "0")
    summary = next(r for r in records if r["event"] == "summary")
    assert summary["fp32"]["steps"] == 3 and summary["bf16"]["steps"] == 3
    assert summary["memory_saving_fraction"] is None and "none on CPU" in summary["memory_metric"]
    assert summary["speedup"] > 0
    assert {r["phase"] for r in records if r["event"] == "step"} == {"fp32", "bf16"}


def test_oom_ramp_reports_the_largest_batch_that_fit() -> None:
    records = run_job("--scenario", "oom-ramp", "--device", "cpu", "--model", "mlp", "--batch-size", "8",
                      env=faults(oom_at="64"))
    oom = next(r for r in records if r["event"] == "oom")
    assert oom["batch_size"] == 64 and oom["largest_fit"] == 32
    assert next(r for r in records if r["event"] == "finished")["largest_batch_that_fit"] == 32


def test_stop_leaves_no_process_of_the_job() -> None:
    job = WorkloadProcess(["--device", "cpu", "--world-size", "2", "--seconds", "120", "--model", "mlp",
                           "--num-workers", "1"])
    records = job.records()
    first = next(records)
    assert first["event"] == "started"
    assert group_alive(job.pgid)
    job.stop(grace_s=5)
    assert not group_alive(job.pgid)


def test_sigterm_to_hwtop_workload_stops_the_whole_group() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "hwtop.cli.main", "workload", "--device", "cpu", "--world-size", "2",
                             "--seconds", "120", "--model", "mlp", "--json"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    started = json.loads(line)
    job_pid = started["pid"]
    pgid = os.getpgid(job_pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 130
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.1)
    assert not group_alive(pgid)


def test_crash_of_one_rank_is_reported_and_nothing_remains(faulty_job: None) -> None:
    job = WorkloadProcess(["--device", "cpu", "--world-size", "2", "--steps", "50", "--model", "mlp",
                           "--num-workers", "0"], env=faults(crash_rank="1"))
    steps = [r for r in job.records() if r["event"] == "step"]
    assert steps and max(r["step"] for r in steps) < 50
    assert job.wait(60) != 0
    assert any("exit code 7" in line for line in job.stderr_tail), list(job.stderr_tail)
    job.stop(grace_s=2)
    assert not group_alive(job.pgid)


def test_bad_job_option_exits_2_with_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "hwtop.cli.main", "workload", "--bogus"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "unrecognized arguments: --bogus" in lines[0]


async def test_tui_starts_watches_and_stops_the_job_and_quit_leaves_nothing() -> None:
    from hwtop.session.sampler import Sampler
    from hwtop.tui.app import HwtopApp
    from hwtop.tui.workload_dialog import WorkloadDialog
    from hwtop.widgets.workload import WorkloadPanel

    sampler = Sampler(gpu=None)
    app = HwtopApp(sampler, interval=0.3)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.first_frame.wait()
        await pilot.press("w")
        assert isinstance(app.screen, WorkloadDialog)
        options = app.screen.query_one("#options")
        options.value = "--device cpu --world-size 2 --seconds 60 --model mlp --num-workers 1"
        await pilot.click("#start")
        monitor = sampler.workload
        assert monitor is not None
        for _ in range(100):  # the ranks start and report steps
            await pilot.pause(0.2)
            state = app.snapshot.workload if app.snapshot else None
            if state and len(state.ranks) == 2 and all(r.step for r in state.ranks):
                break
        panel = app.query_one(WorkloadPanel)
        text = "\n".join(line.plain for line in panel.lines(150))
        assert "RUNNING" in text and "rank 0 step" in text and "rank 1 step" in text and "samples/s" in text
        marked = app.main.process_table.marked
        assert monitor.job.pgid in marked and all(r.pid in marked for r in state.ranks)
        pgid = monitor.job.pgid
        await pilot.press("x")
        await pilot.pause(0.5)
        assert not group_alive(pgid)
        # Start again and quit with it running: closing the app stops the group.
        await pilot.press("w")
        app.screen.query_one("#options").value = "--device cpu --seconds 60 --model mlp"
        await pilot.click("#start")
        await pilot.pause(1.0)
        second = sampler.workload.job.pgid
        assert group_alive(second)
    assert not group_alive(second)


def test_crashed_job_state_has_exit_code_and_stderr_tail(faulty_job: None) -> None:
    from hwtop.workload.monitor import WorkloadMonitor

    monitor = WorkloadMonitor(["--device", "cpu", "--world-size", "2", "--steps", "50", "--model", "mlp",
                               "--num-workers", "0"], env=faults(crash_rank="1"))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and monitor.state().status not in ("crashed", "finished"):
        time.sleep(0.2)
    monitor._reader.join(10)
    state = monitor.state()
    assert state.status == "crashed" and state.exit_code not in (None, 0)
    assert any("exit code 7" in line for line in state.stderr_tail)
    monitor.stop()


def test_oom_of_the_real_job_reaches_the_cuda_oom_rule(faulty_job: None) -> None:
    """The job's OOM record, through the monitor and a real Sampler's snapshot, raises cuda-oom at once."""
    from hwtop.advice.engine import AdviceEngine
    from hwtop.session.sampler import Sampler
    from hwtop.workload.monitor import WorkloadMonitor

    sampler = Sampler(gpu=None, workload=WorkloadMonitor(["--scenario", "oom-ramp", "--device", "cpu", "--model",
                                                         "mlp", "--batch-size", "8", "--num-workers", "0"],
                                                        env=faults(oom_at="64")))
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and sampler.workload.state().status not in ("crashed", "finished"):
            time.sleep(0.2)
        sampler.workload._reader.join(10)
        snapshot = sampler.sample()
        state = snapshot.workload
        assert state.oom_count == 1 and state.last_oom is not None
        assert state.last_oom.batch_size == 64 and state.last_oom.time
        assert state.config is not None and state.config.model == "mlp" and state.config.num_workers == 0
        oom = [f for f in AdviceEngine().update(snapshot) if f.id == "cuda-oom"]
        assert oom and oom[0].severity == "critical"
        assert "at batch 64; batch 32 was the largest that fit" in oom[0].evidence[0]
    finally:
        sampler.workload.stop()
        sampler.close()


def test_a_diverging_run_is_reported_not_killed() -> None:
    """A learning rate of 1e30 turns the loss into inf/NaN within steps: each such step is skipped and said,
    the job ends normally (a traceback from json.dumps(NaN) used to kill it)."""
    records = run_job("--device", "cpu", "--steps", "6", "--model", "mlp", "--num-workers", "0", "--lr", "1e30")
    steps = [r for r in records if r["event"] == "step"]
    assert len(steps) == 6 and any(r["step_skipped"] for r in steps)
    assert all(r["loss"] is None for r in steps if not r["loss_finite"])
    finished = next(r for r in records if r["event"] == "finished")
    assert finished["nonfinite_steps"] == sum(r["step_skipped"] for r in steps) > 0


def test_on_nonfinite_stop_ends_the_run_cleanly_at_that_step() -> None:
    records = run_job("--device", "cpu", "--steps", "50", "--model", "mlp", "--num-workers", "0", "--lr", "1e30",
                      "--on-nonfinite", "stop")
    diverged = next(r for r in records if r["event"] == "diverged")
    finished = next(r for r in records if r["event"] == "finished")
    assert finished["steps"] == diverged["step"] < 50


@pytest.mark.parametrize(("option", "value", "reason"), [
    ("--world-size", "0", "0 is out of range (1 to 64)"),
    ("--batch-size", "-3", "-3 is out of range"),
    ("--num-workers", "-1", "-1 is out of range"),
    ("--lr", "nan", "not a finite number"),
    ("--seconds", "0", "must be more than 0"),
    ("--steps", "x", "'x' is not a whole number"),
])
def test_out_of_range_job_options_exit_2_with_one_line(option: str, value: str, reason: str) -> None:
    result = subprocess.run([sys.executable, "-m", "hwtop", "workload", option, value], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"hwtop workload: error: argument {option}: {reason}"] or \
        (len(result.stderr.strip().splitlines()) == 1 and reason in result.stderr)
