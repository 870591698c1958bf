"""`hwtop doctor` end to end: the real command, the real embedded job on this machine's CPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.usage import assert_one_line_error

pytestmark = pytest.mark.slow  # real torch jobs / a real terminal

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]


def doctor(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWTOP, "doctor", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("scenario", "fires"), [("dataloader-bound", True), ("balanced", False)])
def test_doctor_finds_the_data_loading_bottleneck_only_where_it_is(scenario, fires):
    result = doctor("--workload", scenario, "--device", "cpu", "--json")
    report = json.loads(result.stdout)
    starved = [f for f in report["findings"] if f["id"] == "gpu-starved"]
    assert report["workload"]["scenario"] == scenario and report["ticks"] >= 10
    assert bool(starved) is fires, report["findings"]
    if fires:
        assert result.returncode == 1
        assert starved[0]["severity"] == "warning" and starved[0]["active"]
        assert "waits for its next batch" in starved[0]["evidence"][0]
        assert any("num_workers" in fix for fix in starved[0]["fix"])
    else:
        assert result.returncode == 0, report["findings"]


def test_doctor_text_without_a_workload():
    result = doctor("--seconds", "2", "--interval", "0.5")
    first = result.stdout.splitlines()[0]
    assert first.startswith("hwtop doctor: ") and "samples over 2 s" in first
    serious = "[WARNING]" in result.stdout or "[CRITICAL]" in result.stdout
    assert result.returncode == (1 if serious else 0)  # this machine's own state decides; the exit code agrees


@pytest.mark.parametrize(("args", "message"), [
    (("--seconds", "0"), "must be more than 0"),
    (("--bogus",), "unrecognized arguments: --bogus"),
    (("--workload", "no-such"), "invalid choice: 'no-such'"),
    (("--workload", "balanced", "--bad-job-opt", "1"), "unrecognized arguments: --bad-job-opt"),
])
def test_doctor_bad_usage_exits_2_with_one_line(args, message):
    assert_one_line_error(doctor(*args), message)


def test_broken_config_file_exits_2(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[advice.thresholds]\nnot_a_threshold = 3\n")
    result = subprocess.run([*HWTOP, "--config", str(config), "doctor", "--seconds", "1"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"hwtop: error: {config}: advice.thresholds.not_a_threshold: unknown "
                                            "advice threshold; known: gpu_memory_full_percent, ")
    missing = subprocess.run([*HWTOP, "--config", str(tmp_path / "nope.toml"), "snapshot", "--json"],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "config file not found" in missing.stderr
