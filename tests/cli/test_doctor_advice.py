"""`hwtop doctor` on a demo story, the real command: one finding per cause."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]


@pytest.mark.slow  # the story plays in real time: amp-available holds 10 s before it shows
def test_doctor_json_gives_one_amp_available_finding_covering_gpu0_7() -> None:
    result = subprocess.run([*HWTOP, "doctor", "--demo", "dgx-a100", "--scenario", "amp", "--seconds", "14",
                             "--json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    findings = json.loads(result.stdout)["findings"]
    (amp,) = [f for f in findings if f["id"] == "amp-available"]
    assert amp["scope"] == "GPU0-7" and amp["count"] == 8 and amp["gpus"] == list(range(8))
    assert amp["covers"] == [f"GPU{i}" for i in range(8)] and amp["active"]


class FakeTime:
    """doctor's clock and sleep on the demo story's fake clock: 100 s of a story in a second or two."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock

    def monotonic(self) -> float:
        return self.clock[0]

    def sleep(self, seconds: float) -> None:
        self.clock[0] += max(seconds, 0.0)


@pytest.mark.slow  # a whole machine for 50 ticks: ~2 s
@pytest.mark.parametrize("as_json", [False, True])
def test_doctor_prints_what_changed_when_after_its_findings(monkeypatch, capsys, as_json: bool) -> None:
    from hwtop.cli import doctor
    from hwtop.cli.doctor import watch
    from hwtop.demo.machine import demo_sampler
    from hwtop.demo.story import STARVED_FIX_S
    from hwtop.session.session import Session

    clock = [0.0]
    epoch = 1_796_200_000.0
    monkeypatch.setattr(watch, "time", FakeTime(clock))
    sampler = demo_sampler("dgx-a100", "starved", seed=7, clock=lambda: clock[0], wall=lambda: epoch + clock[0])
    assert doctor.doctor_command(Session(sampler), 100.0, 2.0, None, as_json) == 1
    out = capsys.readouterr().out
    if as_json:
        changes = [c for c in json.loads(out)["timeline"] if c["id"] == "gpu-starved"]
        assert [c["what"] for c in changes] == ["raised", "cleared"]
        assert epoch < changes[0]["time"] < epoch + STARVED_FIX_S < changes[1]["time"]
        return
    findings, _, changed = out.partition("\nWhat changed:\n")
    assert "[WARNING] Training waits on data loading · job  (gpu-starved, cleared" in findings
    lines = [line for line in changed.splitlines() if "gpu-starved" in line]
    assert len(lines) == 2
    assert re.fullmatch(r"  \d\d:\d\d:\d\d raised  WARNING gpu-starved · job: Training waits on data loading — "
                        r"the training step waits for its next batch \d+% .*", lines[0])
    assert re.fullmatch(r"  \d\d:\d\d:\d\d cleared gpu-starved · job after \d+ s; at its worst: .*", lines[1])


@pytest.mark.slow  # a whole machine for 33 ticks: ~2 s
def test_doctor_says_a_finding_that_stopped_holding_is_clearing_and_when_its_figures_are_from(monkeypatch,
                                                                                                capsys) -> None:
    from hwtop.cli import doctor
    from hwtop.cli.doctor import watch
    from hwtop.demo.machine import demo_sampler
    from hwtop.demo.story import AMP_SWITCH_S
    from hwtop.session.session import Session

    clock = [0.0]
    monkeypatch.setattr(watch, "time", FakeTime(clock))
    sampler = demo_sampler("dgx-a100", "amp", seed=7, clock=lambda: clock[0], wall=lambda: 1_796_200_000.0 + clock[0])
    doctor.doctor_command(Session(sampler), AMP_SWITCH_S + 4, 2.0, None, False)
    out = capsys.readouterr().out
    assert re.search(r"· GPU0-7  \(amp-available, clearing: not seen for [2-6] s, its figures as of "
                     r"\d\d:\d\d:\d\d\)", out), out
