"""cli/stop_signals.py: a stop is noted, not raised; a second signal is the user insisting and is taken at once."""

from __future__ import annotations

import os
import signal

import pytest

from hwtop.cli.stop_signals import StopSignals
from tests.finalizer_signal import SignalsInItsFinalizer


def test_the_first_signal_is_noted_and_a_second_goes_to_the_handler_that_was_there() -> None:
    before: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: before.append(signum))
    stops: list[str] = []
    try:
        with StopSignals(on_stop=lambda: stops.append("stop")) as stop:
            os.kill(os.getpid(), signal.SIGTERM)
            assert stop.wait(5.0) and stop.signum == signal.SIGTERM and stops == ["stop"] and before == []
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):  # bytecode for the pending handler to run on
                pass
            assert before == [signal.SIGTERM] and stops == ["stop"]  # the previous handler took the second
            assert stop.signum == signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_second_ctrl_c_raises_keyboard_interrupt_at_once() -> None:
    with pytest.raises(KeyboardInterrupt), StopSignals() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.wait(5.0)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):
            pass
        raise AssertionError("the second ctrl-c did not interrupt")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class EndlessJob:
    """A workload whose output goes on until it is terminated (at most 1,000 records: the test's own bound)."""

    stderr_tail: list[str] = []

    def __init__(self, job_args: list[str]) -> None:
        self.terminated = 0
        self.records_seen = 0

    def records(self):
        while not self.terminated and self.records_seen < 1000:
            self.records_seen += 1
            if self.records_seen == 2:
                SignalsInItsFinalizer(signal.SIGTERM)  # dropped at once: the handler runs inside its finalizer
            yield {"event": "step", "step": self.records_seen}

    def terminate(self) -> None:
        self.terminated += 1

    def wait(self) -> int:
        return 0

    def stop(self, grace_s: float = 5.0) -> int:
        return 0


def test_a_signal_landing_in_a_finalizer_still_stops_hwtop_workload(monkeypatch, capsys) -> None:
    from hwtop.cli.workload import workload_command
    from hwtop.workload import launcher

    jobs: list[EndlessJob] = []
    monkeypatch.setattr(launcher, "torch_missing", lambda: None)
    monkeypatch.setattr(launcher, "WorkloadProcess", lambda args: jobs.append(EndlessJob(args)) or jobs[-1])
    assert workload_command(["--json"]) == 130
    assert jobs[0].terminated == 1 and jobs[0].records_seen == 2  # the group was sent SIGTERM at the signal
    assert len(capsys.readouterr().out.splitlines()) == 2
