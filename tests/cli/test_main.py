from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import hwtop

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWTOP, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(("args", "needle"), [
    (["--interval", "0"], "more than 0"),
    (["--interval", "abc"], "not a number"),
    (["--interval", "-1"], "more than 0"),
    (["snapshot", "--json", "--interval", "nan"], "more than 0"),
    (["--demo", "nope"], "valid: gtx1660s"),
    (["--bogus"], "unrecognized"),
    (["snapshot"], "--json"),
])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_bad_input_exits_2_with_one_line(args: list[str], needle: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hwtop: error:") and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_version_and_help() -> None:
    assert run("--version").stdout.strip() == f"hwtop {hwtop.__version__}"
    text = run("--help").stdout
    for option in ("--interval", "--demo", "--no-gpu", "snapshot", "--version"):
        assert option in text
    assert "--json" in run("snapshot", "--help").stdout


def test_demo_list_names_every_profile() -> None:
    out = run("--demo", "list").stdout
    for name in ("gtx1660s", "rtx3050", "rtx3090", "a4000", "dgx-a100", "h100-pcie", "h200"):
        assert name in out


def _meminfo_total() -> int:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_snapshot_json_matches_this_machine() -> None:
    result = run("snapshot", "--json", "--interval", "0.5")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    nproc = subprocess.run(["nproc", "--all"], capture_output=True, text=True).stdout.strip()
    assert len(data["cpu"]["cores"]) == int(nproc) == os.cpu_count()
    assert all(c["percent"] is not None for c in data["cpu"]["cores"])  # two samples: rates known
    assert data["memory"]["total_bytes"] == _meminfo_total()
    if os.path.isdir("/sys/devices/system/node"):
        nodes = sorted(int(n[4:]) for n in os.listdir("/sys/devices/system/node") if n[4:].isdigit())
        assert [n["index"] for n in data["numa"]["nodes"]] == nodes
    assert data["gpus"] == [] and data["gpu_system"]["available"] is False
    assert data["errors"] == []


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_snapshot_json_demo_dgx_lists_eight_80gb_gpus() -> None:
    result = run("--demo", "dgx-a100", "snapshot", "--json", "--interval", "0.2")
    data = json.loads(result.stdout)
    assert len(data["gpus"]) == 8
    for index, gpu in enumerate(data["gpus"]):
        assert gpu["index"] == index and gpu["name"] == "NVIDIA A100-SXM4-80GB"
        assert gpu["memory_total_bytes"] == 80 * 1024**3
        for key in ("uuid", "pci_bus_id", "memory_used_bytes", "util_percent", "temperature_c", "power_w",
                    "pcie", "processes"):
            assert key in gpu
