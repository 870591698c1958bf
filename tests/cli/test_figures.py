"""The figures `hwtop snapshot --json` and `hwtop topo` print agree with each other and with themselves: NUMA
nodes add up to the machine's memory, "used" is total − available on every line, a demo story's job trains no
faster than its workers supply. On the demo's eight-GPU box and on this machine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]
MIB = 1 << 20


def run(*args: str) -> str:
    result = subprocess.run([*HWTOP, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def snapshot(*args: str) -> dict[str, Any]:
    return json.loads(run("snapshot", "--json", "--interval", "0.2", *args))


def _memory_adds_up(data: dict[str, Any]) -> None:
    memory, nodes = data["memory"], data["numa"]["nodes"]
    assert memory["used_bytes"] == memory["total_bytes"] - memory["available_bytes"]
    assert sum(n["memory_total_bytes"] for n in nodes) == memory["total_bytes"]
    assert sum(n["memory_used_bytes"] for n in nodes) == memory["used_bytes"]
    for node in nodes:
        assert node["memory_used_bytes"] == node["memory_total_bytes"] - node["memory_available_bytes"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_demo_box_nodes_add_up_to_its_two_tebibytes_in_json_and_in_topo() -> None:
    data = snapshot("--demo", "dgx-a100")
    assert data["memory"]["total_bytes"] == 2 * 1024**4
    _memory_adds_up(data)
    topology_nodes = data["topology"]["numa"]["nodes"]
    assert [n["memory_total_bytes"] for n in topology_nodes] == [1024**4, 1024**4]
    sizes = [int(m) for m in re.findall(r"^node \d+ size: (\d+) MiB$", run("topo", "--demo", "dgx-a100"), re.M)]
    assert sizes == [1024**4 // MIB] * 2  # not 515,625 MiB


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_this_machine_has_one_meaning_of_used_in_json() -> None:
    data = snapshot()
    if data["numa"]["source"] == "fallback":
        node = data["numa"]["nodes"][0]
        assert node["memory_used_bytes"] == data["memory"]["used_bytes"]
        return
    assert data["numa"]["nodes"] and all(n["memory_used_bytes"] is not None for n in data["numa"]["nodes"])
    memory = data["memory"]
    assert sum(n["memory_used_bytes"] for n in data["numa"]["nodes"]) <= memory["total_bytes"]
    if len(data["numa"]["nodes"]) == 1:  # one node is the machine: the same "used", to the byte
        assert data["numa"]["nodes"][0]["memory_used_bytes"] == memory["used_bytes"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_this_machines_topo_prints_used_as_the_monitor_means_it() -> None:
    out = run("topo")
    used = [int(m) for m in re.findall(r"^node \d+ used: (\d+) MiB$", out, re.M)]
    assert used and "used = size − available" in out
    assert not re.search(r"^node \d+ free:", out, re.M)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_starved_story_trains_no_faster_than_its_one_worker_supplies_in_json() -> None:
    data = snapshot("--demo", "dgx-a100", "--scenario", "starved")
    config = data["workload"]["config"]
    supply = config["num_workers"] * 1000.0 / config["transform_cost_ms"]
    assert config["num_workers"] == 1
    assert all(r["samples_per_s"] <= supply * 1.001 for r in data["workload"]["ranks"])
    workers = [p for p in data["processes"] if p["name"] == "pt_data_worker"]
    assert len(workers) == 8 and all(p["cpu_percent"] >= 90 for p in workers)  # one pegged worker per rank
    assert all(d["kind"] == "raid" for d in data["disks"] if d["name"].startswith("md"))
