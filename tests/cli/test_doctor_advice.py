"""`hwtop doctor` on a demo story, the real command: one finding per cause."""

from __future__ import annotations

import json
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
