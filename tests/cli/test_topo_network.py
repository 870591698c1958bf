"""`hwtop topo` shows each network port's live throughput beside PCIe and NVLink: its kind, line rate, RX and TX,
NUMA node and nearest GPU; `--json` carries the same ports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def hwtop(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "hwtop", *args], capture_output=True, text=True, timeout=60,
                          env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_topo_shows_the_demo_ports_with_their_traffic_node_and_gpu() -> None:
    out = hwtop("topo", "--demo", "dgx-a100:nccl-ethernet")
    network = out.split("network:\n", 1)[1].splitlines()
    assert len(network) == 10
    first = network[0].split()
    assert first[:3] == ["mlx5_0", "IB", "200Gb/s"] and network[0].endswith("node 0 near GPU0")
    assert network[7].endswith("node 1 near GPU7") and network[8].split()[:2] == ["enp225s0f0", "Eth"]
    rx_share = int(first[4].rstrip("%"))
    # the story's all-reduce over InfiniBand: a node's 2(16-1)/16 of 5.2 GB of gradients per 0.86 s step, over
    # eight ports: 1.42 GB/s of 25 GB/s each
    assert rx_share == round(100 * 2 * 15 / 16 * 5.2e9 / 0.86 / 8 / 25e9)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_topo_json_carries_the_ports_and_this_machine_keeps_loopback_apart() -> None:
    ports = json.loads(hwtop("topo", "--demo", "dgx-a100", "--json"))["network"]
    assert [p["name"] for p in ports if p["kind"] == "infiniband"] == [f"mlx5_{i}" for i in range(8)]
    here = json.loads(hwtop("topo", "--json"))["network"]
    assert any(p["kind"] == "loopback" for p in here)
    text = hwtop("topo").split("network:\n", 1)[1]
    assert not any(line.split()[0] == "lo" for line in text.splitlines() if line.strip())
