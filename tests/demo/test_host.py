"""The simulated host of a demo machine: its figures follow the profile, and nothing of the real host shows."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hwtop.demo.host import SimulatedHost, gpu_node, node_cpus
from hwtop.demo.profiles import PROFILES
from hwtop.demo.story import STEADY, get_story

TIB = 1024**4
WORKTREE = Path(__file__).resolve().parents[2]


def host(profile: str = "dgx-a100", t: float = 5.0, **kwargs: int) -> SimulatedHost:
    return SimulatedHost(PROFILES[profile], STEADY, lambda: t, seed=3, **kwargs)


def test_dgx_a100_is_two_epyc_7742_with_2_tib_and_two_nodes() -> None:
    machine = host()
    cpu, memory, numa = machine.cpu({}), machine.memory(), machine.numa(None)
    assert (cpu.logical_cores, cpu.physical_cores, len(cpu.cores)) == (256, 128, 256)
    assert cpu.model == "AMD EPYC 7742 64-Core Processor"
    assert memory.total_bytes == 2 * TIB and 0 < memory.used_bytes < memory.total_bytes
    assert [n.cpus[:2] + n.cpus[-1:] for n in numa.nodes] == [(0, 1, 191), (64, 65, 255)]
    assert sum(n.memory_total_bytes or 0 for n in numa.nodes) == 2 * TIB
    assert [n.distances for n in numa.nodes] == [(10, 32), (32, 10)]
    assert [gpu_node(PROFILES["dgx-a100"], g) for g in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_gtx1660s_is_a_six_core_desktop_with_one_sata_ssd() -> None:
    machine = host("gtx1660s")
    cpu, memory, disks = machine.cpu({}), machine.memory(), machine.disks()
    assert (cpu.logical_cores, cpu.physical_cores) == (12, 6)
    assert memory.total_bytes == 16 * 1024**3
    assert [(d.name, d.kind) for d in disks] == [("sda", "ssd")]
    names = {p.name for p in machine.processes()}
    assert {"Xorg", "python", "pt_data_worker"} <= names


def test_ranks_are_pinned_to_their_gpus_node_and_workers_are_their_children() -> None:
    machine = host(process_limit=200)
    processes = {p.pid: p for p in machine.processes()}
    nodes = node_cpus(PROFILES["dgx-a100"].host)  # type: ignore[arg-type]
    assert processes[41000].cpu_affinity == nodes[0] and processes[41007].cpu_affinity == nodes[1]
    assert processes[41000].ppid == 40990 and processes[40990].name == "torchrun"
    workers = [p for p in processes.values() if p.name == "pt_data_worker"]
    assert workers and all(p.ppid in range(41000, 41008) for p in workers)


def test_the_dataset_raid_reads_while_the_job_trains() -> None:
    disks = {d.name: d for d in host().disks()}
    assert disks["md1"].read_bytes_per_s is not None and disks["md1"].read_bytes_per_s > 50e6
    assert disks["nfs0"].kind == "network"


def test_dgx_a100_has_eight_hdr_infiniband_ports_and_two_100g_ethernet() -> None:
    nics = host().nics()
    assert [(n.kind, n.speed_gbps) for n in nics] == [("infiniband", 200.0)] * 8 + [("ethernet", 100.0)] * 2
    assert [n.name for n in nics[:2]] == ["mlx5_0", "mlx5_1"]
    assert host("gtx1660s").nics()[0].kind == "ethernet"


def test_same_seed_and_time_same_host_and_time_moves_it() -> None:
    assert host().cpu({}) == host().cpu({}) and host().processes() == host().processes()
    assert host(t=5.0).cpu({}) != host(t=6.0).cpu({})


def test_the_starved_story_runs_one_pegged_worker_per_rank_then_twelve() -> None:
    story = get_story("starved")
    early = SimulatedHost(PROFILES["dgx-a100"], story, lambda: 10.0, process_limit=200).processes()
    late = SimulatedHost(PROFILES["dgx-a100"], story, lambda: 80.0, process_limit=200).processes()
    assert len([p for p in early if p.name == "pt_data_worker"]) == 8
    assert all((p.cpu_percent or 0) >= 90 for p in early if p.name == "pt_data_worker")
    assert len([p for p in late if p.name == "pt_data_worker"]) == 96


def test_a_5000_process_host_lists_every_process_the_busiest_first() -> None:
    """As the real probe: every process listed (its limit is on reading details), the busiest first."""
    machine = host(extra_processes=5000, process_limit=60)
    started = time.perf_counter()
    listed = machine.processes()
    elapsed = time.perf_counter() - started
    assert len(listed) == len(machine.every_process()) > 5000
    assert {40990} | {41000 + r for r in range(8)} <= {p.pid for p in listed}
    cpu = [p.cpu_percent or 0.0 for p in listed]
    assert cpu == sorted(cpu, reverse=True)
    assert elapsed < 0.3


def _canary() -> tuple[subprocess.Popen[bytes], str]:
    name = f"hwtop-canary-{secrets.token_hex(4)}"
    process = subprocess.Popen(["bash", "-c", f"exec -a {name} sleep 60"])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # until exec has renamed it
        try:
            if name in Path(f"/proc/{process.pid}/cmdline").read_bytes().decode(errors="replace"):
                break
        except OSError:
            pass
        time.sleep(0.02)
    return process, name


def _real_pids() -> set[int]:
    return {int(n) for n in os.listdir("/proc") if n.isdigit()}


@pytest.mark.slow
def test_snapshot_json_of_the_demo_shows_no_real_process() -> None:
    canary, name = _canary()
    try:
        result = subprocess.run([sys.executable, "-m", "hwtop", "--demo", "dgx-a100", "snapshot", "--json"],
                                cwd=WORKTREE, capture_output=True, text=True, timeout=120, check=True)
    finally:
        canary.kill()
        canary.wait()
    assert name not in result.stdout and "hwtop-canary" not in result.stdout
    snapshot = json.loads(result.stdout)
    assert snapshot["cpu"]["logical_cores"] == 256
    assert abs(snapshot["memory"]["total_bytes"] - 2 * TIB) < 0.01 * TIB
    assert len(snapshot["gpus"]) == 8 and len(snapshot["topology"]["devices"]) >= 8
    gpu_nodes = [d["numa_node"] for d in snapshot["topology"]["devices"] if d["kind"] == "gpu"]
    assert gpu_nodes == [0, 0, 0, 0, 1, 1, 1, 1]
    pids = {p["pid"] for p in snapshot["processes"]}
    assert canary.pid not in pids
    assert snapshot["host"]["hostname"] == "dgx-a100-demo" != os.uname().nodename
    simulated = {1, 512, 540, 1288, 1301, 1402, 1433, 1460, 1490, 1510, 1601, 40950, 40990}
    assert all(pid in simulated or 41000 <= pid < 60000 for pid in pids)
    assert {d["name"] for d in snapshot["disks"]}.isdisjoint(set(os.listdir("/sys/block")) - {
        f"nvme{i}n1" for i in range(10)} - {"md0", "md1"})


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_demo_monitor_pane_shows_no_real_process() -> None:
    canary, name = _canary()
    socket, session = f"hwtop-demo-{secrets.token_hex(3)}", "demo"
    tmux = ["tmux", "-L", socket]
    try:
        subprocess.run(tmux + ["new-session", "-d", "-s", session, "-x", "200", "-y", "60", "-c", str(WORKTREE),
                               "env", "-u", "COLUMNS", "-u", "LINES", sys.executable, "-m", "hwtop", "--demo",
                               "dgx-a100"], check=True)
        screen = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not ("A100-SXM4" in screen and "41000" in screen):
            time.sleep(1.0)
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", session], capture_output=True,
                                    text=True).stdout
    finally:
        subprocess.run(tmux + ["kill-server"], check=False, capture_output=True)
        canary.kill()
        canary.wait()
    assert "A100" in screen and "41000" in screen, screen
    assert name not in screen and "hwtop-canary" not in screen and f" {canary.pid} " not in screen


@pytest.mark.slow
def test_a_demo_recording_names_the_demo_machine_not_this_one(tmp_path: Path) -> None:
    canary, name = _canary()
    path = tmp_path / "demo.jsonl"
    try:
        subprocess.run([sys.executable, "-m", "hwtop", "--demo", "dgx-a100", "--scenario", "oom", "record", str(path),
                        "--seconds", "1.2", "--interval", "0.5"], cwd=WORKTREE, capture_output=True, timeout=120,
                       check=True)
    finally:
        canary.kill()
        canary.wait()
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["host"] == "dgx-a100-demo" and len(lines) >= 3
    text = path.read_text()
    assert name not in text and '"hostname":"dgx-a100-demo"' in text.replace(" ", "")
    assert f'"hostname":"{os.uname().nodename}"' not in text.replace(" ", "")
