"""The capture for real hardware (scripts/capture-gpu.sh, python -m hwtop.cli.capture): its raw recording of
every NVML call, checked against the fake library; and the script itself on this GPU-less machine."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hwtop.cli.capture import capture, main

ROOT = Path(__file__).parents[2]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_recording_has_every_call_with_arguments_results_errors_and_latency(tmp_path: Path) -> None:
    summary = capture(tmp_path, "idle", seconds=30, interval=0.1, demo="dgx-a100:fan-unknown", reads=2)
    header, *calls = lines(tmp_path / "nvml-calls-idle.jsonl")
    assert header["format"] == "hwtop.nvml-calls/1" and header["demo"] == "dgx-a100:fan-unknown"
    assert header["nvidia_ml_py"] and summary["reads"] == 2 and summary["gpus"] == 8
    assert summary["calls"] == len(calls) and calls[0]["call"] == "nvmlInit"
    assert all({"t", "call", "args", "latency_us", "thread"} <= set(c) and ("result" in c) != ("error" in c)
               for c in calls)
    handles = [c for c in calls if c["call"] == "nvmlDeviceGetHandleByIndex"]
    assert [(c["args"], c["result"]) for c in handles[:8]] == [([i], {"handle": f"gpu{i}"}) for i in range(8)]
    fans = [c for c in calls if c["call"] == "nvmlDeviceGetFanSpeed"]
    assert {c["args"][0]["handle"]: c["error"]["code"] for c in fans} == {f"gpu{i}": 999 if i == 3 else 3
                                                                         for i in range(8)}
    fields = next(c for c in calls if c["call"] == "nvmlDeviceGetFieldValues" and c["args"][1][0][0] == 138)
    totals = next(c for c in calls if c["call"] == "nvmlDeviceGetFieldValues" and c["args"][1][0][0] != 138)
    assert totals["args"][1] == [[38, 0], [45, 0], [52, 0], [59, 0]]  # the NVLink error totals (probes/nvml/faults)
    assert fields["args"][1] == [[field, link] for link in range(12) for field in (138, 139)]
    first = fields["result"][0]
    assert first["fieldId"] == 138 and first["scopeId"] == 0 and first["valueType"] == 3 and first["timestamp"] > 0
    slow = [c for c in calls if c["call"] == "nvmlDeviceGetPcieThroughput"]
    assert slow and {c["thread"] for c in slow} == {"hwtop-nvml-slow"}  # off the tick's thread
    snapshots = lines(tmp_path / "gpus-idle.jsonl")
    assert len(snapshots) == summary["reads"] and snapshots[-1]["gpus"][3]["fan_percent"] is None
    assert snapshots[-1]["system"]["driver_version"] == "550.90.07"


def test_gpm_and_mig_records_name_their_buffers_and_slices(tmp_path: Path) -> None:
    capture(tmp_path, "load", seconds=30, interval=0.1, demo="h200", reads=3)
    calls = lines(tmp_path / "nvml-calls-load.jsonl")[1:]
    metrics = [c for c in calls if c["call"] == "nvmlGpmMetricsGet"]
    assert metrics and len(metrics[-1]["result"]["metrics"]) == 4  # the filled slots, not all 477
    assert {c["result"]["handle"] for c in calls if c["call"] == "nvmlGpmSampleAlloc"} == {"gpm_sample1",
                                                                                          "gpm_sample2"}


def test_the_command_writes_a_summary(tmp_path: Path, capsys) -> None:
    assert main(["--out", str(tmp_path), "--phase", "idle", "--seconds", "0", "--demo", "rtx3090:r470"]) == 0
    summary = json.loads((tmp_path / "summary-idle.json").read_text())
    assert summary["gpus"] == 1 and "1 GPU(s)" in capsys.readouterr().out


@pytest.mark.slow
def test_the_script_on_a_machine_without_a_gpu_says_what_it_could_not_capture(tmp_path: Path) -> None:
    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA driver")
    out = tmp_path / "capture"
    env = dict(os.environ, CAPTURE_SECONDS="0.2", CAPTURE_INTERVAL="0.1", PYTHONPATH=str(ROOT))
    done = subprocess.run([str(ROOT / "scripts/capture-gpu.sh"), str(out)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    missing = (out / "MISSING.txt").read_text()
    assert "nvidia-smi not found" in missing and "load phase" in missing
    calls = lines(out / "nvml-calls-idle.jsonl")
    assert calls[1]["call"] == "nvmlInit" and calls[1]["error"]["type"] == "NVMLError_LibraryNotFound"
    assert "nvidia-ml-py:" in (out / "versions.txt").read_text()
