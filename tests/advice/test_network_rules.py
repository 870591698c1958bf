"""The network rules: each raised where what it reads is there (a fake /proc of a torchrun job whose ranks carry
NCCL variables and read from an NFS mount, hand-built ports and topologies), silent on the balanced demo, on a
single-node job, and where it cannot see."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from hwtop.advice.rules.network import (
    data_from_network,
    nccl_wrong_transport,
    network_saturated,
    nic_far_from_gpu,
    socket_interfaces,
)
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.job import JobProcess, JobSnapshot, RankFigures, RankStacks
from hwtop.model.snapshot import GpuProcess, NicSnapshot, Snapshot, TopoDevice, Topology
from hwtop.probes.job import JobProbe
from hwtop.probes.network import NetworkProbe
from tests.factories import host_snapshot
from tests.fakeproc import FakeProc, Proc

PY = "/usr/bin/python3"
T = Thresholds()


def ib(i: int, rate: float, node: int) -> NicSnapshot:
    return NicSnapshot(f"mlx5_{i}", "infiniband", 200.0, rate, rate, state="active", port=1, numa_node=node)


def eth(rate: float, name: str = "eno1", speed: float = 100.0, state: str = "up", node: int = 1) -> NicSnapshot:
    return NicSnapshot(name, "ethernet", speed, rate, rate, state=state, numa_node=node)


def topology() -> Topology:
    devices = tuple(TopoDevice(f"GPU{i}", "gpu", f"0000:{i:02x}:00.0", i // 2, None, None, None, None, None)
                    for i in range(4))
    return Topology(devices, (), (), "sysfs")


def training(nodes: int = 2, collective: float | None = 0.6, env: tuple[tuple[str, str], ...] = (),
             data_wait: float = 0.05) -> JobSnapshot:
    """A focused torchrun job of 4 ranks on this host (of `nodes` hosts), its ranks' NCCL_* environment `env`, the
    share of their stack samples in collectives `collective` (None: not sampled)."""
    processes = tuple(JobProcess(41000 + r, 40999, "python3", "python3 train.py", f"rank {r}", r, 1, "R", 90.0,
                                 1 << 30, 8, None, gpus=((r, 1 << 30),), nccl_env=env, world_size=4 * nodes,
                                 local_world_size=4) for r in range(4))
    shares = () if collective is None else (("collective", collective), ("data", data_wait),
                                            ("compute", 1.0 - collective - data_wait))
    ranks = tuple(RankFigures(r, "node-a", pid=41000 + r, gpu=r, shares=shares, samples=50 if shares else 0)
                  for r in range(4))
    stacks = tuple(RankStacks(41000 + r, r, 50, 5.0, fractions=shares) for r in range(4)) if shares else ()
    return JobSnapshot("torchrun", (40999,), "running", processes, 360.0, 4 << 30, ranks=ranks, stacks=stacks)


def window(nics: tuple[NicSnapshot, ...], job: JobSnapshot | None = None, ticks: int = 12) -> Window:
    base = replace(host_snapshot(), nics=nics, job=job, topology=topology())
    return Window(tuple(replace(base, time=base.time + i) for i in range(ticks)))


def ids(found: object) -> list[str]:
    return [f.scope for f in found]  # type: ignore[attr-defined]


def test_a_saturated_fabric_port_while_ranks_wait_in_collectives() -> None:
    nics = (ib(0, 23e9, 0), ib(1, 2e9, 0), eth(1e6))
    (finding,) = network_saturated(window(nics, training()), T)
    assert finding.scope == "mlx5_0" and "92% of its line rate" in finding.evidence[0]
    assert "wait in collectives 60%" in finding.evidence[1] and "bucket_cap_mb" in " ".join(finding.fix)
    assert not list(network_saturated(window(nics, training(collective=0.1)), T))  # compute-bound: fine
    assert not list(network_saturated(window(nics, training(collective=None)), T))  # cannot see: silent
    assert not list(network_saturated(window(nics), T))  # no job


def test_saturated_reads_the_ranks_collective_share_where_the_focused_job_has_it() -> None:
    ranks = tuple(RankFigures(r, "node-a", shares=(("collective", 0.7), ("compute", 0.3)), samples=50)
                  for r in range(2))
    job = JobSnapshot("torchrun", (500,), "running", (), None, 0, ranks=ranks)
    (finding,) = network_saturated(window((ib(0, 24e9, 0),), job=job), T)
    assert "70%" in finding.evidence[1] and "2 ranks' stack samples" in finding.evidence[1]


def test_wrong_transport_from_traffic_ethernet_busy_fabric_idle() -> None:
    nics = (ib(0, 2e3, 0), ib(1, 2e3, 1), eth(11e9))
    (finding,) = nccl_wrong_transport(window(nics, training()), T)
    assert "Ethernet port eno1 carries 11.00 GB/s (88% of 100 Gb/s)" in finding.evidence[-1]
    assert not list(nccl_wrong_transport(window(nics, training(nodes=1)), T))  # one node: NVLink, not the net
    assert not list(nccl_wrong_transport(window((ib(0, 9e9, 0), eth(11e9)), training()), T))  # fabric in use
    assert not list(network_saturated(window(nics, training()), T))  # the transport is the cause: said once


@pytest.mark.parametrize(("env", "nics", "expected"), [
    ((("NCCL_IB_DISABLE", "1"),), (ib(0, 0.0, 0), eth(0.0)), "NCCL_IB_DISABLE=1 in the ranks' environment"),
    ((("NCCL_P2P_DISABLE", "1"),), (eth(0.0),), "NCCL_P2P_DISABLE=1 with 4 GPUs"),
    ((("NCCL_IB_DISABLE", "1"), ("NCCL_SOCKET_IFNAME", "eno2")), (ib(0, 0.0, 0), eth(0.0), eth(0.0, "eno2", 1.0)),
     "NCCL_SOCKET_IFNAME=eno2 selects eno2 at 1 Gb/s while a 100 Gb/s port is up"),
    ((("NCCL_SOCKET_IFNAME", "=eth9"),), (eth(0.0),), "names no interface of this host"),
    ((("NCCL_SOCKET_IFNAME", "en"),), (eth(0.0, state="down"),), "names only interfaces that are down"),
])
def test_wrong_transport_from_the_environment(env, nics, expected) -> None:
    (found,) = nccl_wrong_transport(_with_gpus(window(nics, training(env=env))), T)
    assert any(expected in line for line in found.evidence), found.evidence
    assert found.pids == (41000, 41001, 41002, 41003)
    assert not list(nccl_wrong_transport(_with_gpus(window(nics, training())), T))  # the same box, no variables


def _with_gpus(w: Window) -> Window:
    from tests.factories import demo_snapshots

    gpus = tuple(replace(g, processes=(GpuProcess(41000 + g.index, "compute", 1 << 30),))
                 for g in demo_snapshots("dgx-a100", count=1)[0].gpus[:4])
    return Window(tuple(replace(s, gpus=gpus) for s in w.snapshots))


def test_socket_ifname_syntax() -> None:
    names = ["eno1", "eno2", "ens1f0", "ib0"]
    assert socket_interfaces("eno", names) == ["eno1", "eno2"]
    assert socket_interfaces("=eno1,ib", names) == ["eno1", "ib0"]
    assert socket_interfaces("^docker,lo", names) is None and socket_interfaces("", names) is None


def test_nic_far_from_gpu_names_the_gpus_across_the_socket() -> None:
    nics = (ib(0, 0.0, 0), ib(1, 12e9, 1), eth(0.0))
    (finding,) = nic_far_from_gpu(_with_gpus(window(nics, training())), T)
    assert finding.gpus == (0, 1) and "mlx5_1 (node 1)" in finding.evidence[0]
    assert "NUMA node 0" in finding.evidence[1]
    balanced = (ib(0, 12e9, 0), ib(1, 12e9, 1))
    assert not list(nic_far_from_gpu(_with_gpus(window(balanced, training())), T))
    assert not list(nic_far_from_gpu(_with_gpus(window(nics, training(nodes=1))), T))


def _torchrun_with_nfs(tmp_path: Path) -> tuple[FakeProc, JobProbe]:
    """A two-rank torchrun job of a 16-rank, 2-node run, its ranks' environment setting NCCL_IB_DISABLE=1, its
    worker reading a file that the process's mountinfo places on an NFS export."""
    data = tmp_path / "data" / "shard-0001.tar"
    data.parent.mkdir()
    data.write_bytes(b"x" * 10)
    proc = FakeProc(tmp_path)
    proc.add(Proc(500, 1, "python3", (PY, "-m", "torch.distributed.run", "--nnodes", "2", "train.py")))
    for rank in (0, 1):
        env = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8",
               "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eno1", "PATH": "/usr/bin"}
        proc.add(Proc(510 + rank, 500, "python3", (PY, "-u", "train.py"), env=env))
    proc.add(Proc(530, 510, "pt_data_worker", (PY, "-u", "train.py"), env={"RANK": "0"}, fds=(str(data),)))
    proc.write()
    st_dev = os.stat(data).st_dev
    for pid in proc.procs:
        (tmp_path / f"proc/{pid}/mountinfo").write_text(
            f"22 1 0:21 / / rw - ext4 /dev/sda1 rw\n"
            f"98 22 {os.major(st_dev)}:{os.minor(st_dev)} / {data.parent} rw - nfs4 fs1:/datasets rw,vers=4.2\n")
    return proc, JobProbe(roots=(500,), root=str(tmp_path), clock=lambda: 100.0)


def test_the_job_probe_reads_nccl_variables_and_nfs_mounts_and_the_rules_see_them(tmp_path: Path) -> None:
    proc, probe = _torchrun_with_nfs(tmp_path)
    job = probe.read(now=100.0)
    ranks = [p for p in job.processes if p.rank is not None]
    assert {p.pid: p.nccl_env for p in ranks} == {
        pid: (("NCCL_IB_DISABLE", "1"), ("NCCL_SOCKET_IFNAME", "eno1")) for pid in (510, 511)}
    assert {(p.world_size, p.local_world_size) for p in ranks} == {(16, 8)}
    assert ("nfs4 fs1:/datasets", 1) in job.dataset_devices
    stacks = tuple(RankStacks(p.pid, p.rank, 60, 6.0, fractions=(("data", 0.7), ("compute", 0.3))) for p in ranks)
    job = replace(job, stacks=stacks)
    nics = (ib(0, 0.0, 0), eth(3e8))
    (transport,) = nccl_wrong_transport(window(nics, job=job), T)
    assert "NCCL_IB_DISABLE=1 in the ranks' environment (/proc/PID/environ of its ranks)" in transport.evidence[0]
    assert set(transport.pids) == {510, 511}
    (data,) = data_from_network(window(nics, job=job), T)
    assert data.evidence[0] == "the job has 1 file(s) open on nfs4 mount fs1:/datasets"
    assert "wait for data 70%" in data.evidence[1] and "eno1 receives 300 MB/s" in data.evidence[2]
    fed = replace(job, stacks=tuple(replace(s, fractions=(("compute", 0.95),)) for s in stacks))
    assert not list(data_from_network(window(nics, job=fed), T))  # fed: where the data lives does not matter
    local = replace(job, dataset_devices=(("nvme0n1", 4),))
    assert not list(data_from_network(window(nics, job=local), T))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_silent_on_the_balanced_demo_and_on_this_machine_at_rest() -> None:
    from hwtop.advice.rules import RULES
    from hwtop.demo.machine import demo_sampler

    network = {"network-saturated", "nccl-wrong-transport", "nic-far-from-gpu", "data-from-network"}
    rules = [r for r in RULES if r.id in network]
    assert len(rules) == 4
    clock = [0.0]
    sampler = demo_sampler("dgx-a100", clock=lambda: clock[0], wall=lambda: 1e9 + clock[0])
    snapshots: list[Snapshot] = []
    for _ in range(15):
        snapshots.append(sampler.sample())
        clock[0] += 1.0
    sampler.close()
    assert any(n.kind == "infiniband" for n in snapshots[-1].nics)
    assert not [f for r in rules for f in r.check(Window(tuple(snapshots)), T)]
    here = NetworkProbe()
    base = host_snapshot()
    here.read()
    mine = tuple(replace(base, time=base.time + i, nics=here.read()) for i in range(3))
    assert not [f for r in rules for f in r.check(Window(mine), T)]


@given(st.text(max_size=40), st.lists(st.text(min_size=1, max_size=12), max_size=6, unique=True))
def test_any_socket_ifname_selects_only_existing_interfaces(spec: str, names: list[str]) -> None:
    chosen = socket_interfaces(spec, names)
    assert chosen is None or (set(chosen) <= set(names) and len(chosen) == len(set(chosen)))


def test_the_job_s_network_facts_kept_for_a_tick_follow_the_job_and_the_thresholds() -> None:
    """Four rules ask the focused job's facts of each tick's snapshot: the answer kept for that snapshot is never
    given for other thresholds (the samples a share needs) or for another job."""
    from hwtop.advice.rules.network import job_network

    w = window((ib(0, 1e9, 0),), training(collective=0.6))
    first = job_network(w, Thresholds())
    assert first is not None and first.collective_share == pytest.approx(0.6)
    assert job_network(w, Thresholds()) is first
    strict = job_network(w, Thresholds({"stack_min_samples": 60}))
    assert strict is not None and strict.collective_share is None  # its ranks' 50 samples are too few
    other = job_network(window((ib(0, 1e9, 0),), training(collective=0.3)), Thresholds())
    assert other is not None and other.collective_share == pytest.approx(0.3)
