"""`hwtop doctor --workload` when the workload crashed: a non-zero exit, the failed rank's exit code
and its last stderr lines, never a report that reads like a clean run."""

from __future__ import annotations

import json
import signal

import pytest

from hwtop.cli import doctor
from hwtop.cli.doctor.facts import BoxFacts, WorkloadFacts
from hwtop.cli.doctor.render import Report, report
from hwtop.session.session import Session
from tests.finalizer_signal import SignalsInItsFinalizer

TAIL = ["  File \"train.py\", line 9, in step", "ValueError: batch_size should be a positive integer",
        "rank 1 (pid 4242) terminated with exit code 1"]


class Closable:
    closed = False

    def close(self) -> None:
        self.closed = True


def crashed(stderr_tail: list[str], code: int = 1, status: str = "crashed") -> Report:
    workload = WorkloadFacts("balanced", status, code, tuple(stderr_tail))
    return report(3.0, BoxFacts(3, workload, "box", 0, None, {}, ()), ())


@pytest.mark.parametrize("as_json", [False, True])
def test_a_crashed_workload_exits_3_with_the_rank_and_its_stderr(monkeypatch, capsys, as_json: bool) -> None:
    monkeypatch.setattr(doctor, "run_doctor", lambda *args: crashed(TAIL))
    sampler = Closable()
    code = doctor.doctor_command(Session(sampler), 3.0, 1.0, ["--scenario", "balanced"], as_json)
    out, err = capsys.readouterr()
    assert code == doctor.EXIT_CRASHED == 3 and sampler.closed
    assert "the workload crashed: rank 1 (pid 4242) exited with code 1" in err
    assert "ValueError: batch_size should be a positive integer" in err
    if as_json:
        assert json.loads(out)["workload"]["status"] == "crashed"
    else:
        assert "workload balanced (crashed)" in out


def test_a_crash_without_a_rank_line_gives_the_job_exit_code(monkeypatch, capsys) -> None:
    monkeypatch.setattr(doctor, "run_doctor", lambda *args: crashed([], code=-9))
    assert doctor.doctor_command(Session(Closable()), 3.0, 1.0, [], False) == 3
    err = capsys.readouterr().err
    assert "the workload crashed: exit code -9" in err and "wrote nothing to stderr" in err


def test_a_finished_workload_is_not_a_crash(monkeypatch, capsys) -> None:
    monkeypatch.setattr(doctor, "run_doctor", lambda *args: crashed(TAIL, status="finished"))
    assert doctor.doctor_command(Session(Closable()), 3.0, 1.0, [], False) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.slow  # a real torch job, made to crash: its rendezvous port is taken
def test_doctor_workload_that_crashes_exits_non_zero_with_the_rank_and_its_stderr() -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "hwtop", "doctor", "--workload", "balanced", "--device", "cpu",
                                 "--world-size", "2", "--port", str(port), "--seconds", "3"],
                                capture_output=True, text=True, timeout=240)
    assert result.returncode == 3, result.stderr
    assert "workload balanced (crashed)" in result.stdout
    assert "the workload crashed: rank 0 (pid " in result.stderr and "exited with code 1" in result.stderr
    assert "address already in use" in result.stderr  # the rank's own last words


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_landing_in_a_finalizer_still_ends_the_watch_with_130(monkeypatch, capsys, sig) -> None:
    from hwtop.cli.machine import make_sampler

    ticks = 0
    real_tick = Session.tick

    def tick(self):
        nonlocal ticks
        ticks += 1
        if ticks == 2:
            SignalsInItsFinalizer(sig)  # dropped at once
        return real_tick(self)

    monkeypatch.setattr(Session, "tick", tick)
    previous = signal.getsignal(sig)
    code = doctor.doctor_command(Session(make_sampler("rtx3090", False)), 20.0, 0.01, None, False)
    assert (code, ticks) == (130, 2)  # at the signal, not after the 20 s watch
    out, err = capsys.readouterr()
    assert out == "" and err.endswith("hwtop doctor: stopped before the watch ended; no report\n")
    assert signal.getsignal(sig) is previous
