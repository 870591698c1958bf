"""Snapshot JSON, and so record and replay, carry the network ports and the job's NCCL settings; recordings made
before they existed still load."""

from __future__ import annotations

import json

from msgspec.structs import replace

from hwtop.model.job import JobProcess, JobSnapshot
from hwtop.model.serial import snapshot_from_dict
from hwtop.model.snapshot import NicSnapshot, Snapshot
from hwtop.model.workload import JobConfig, WorkloadState

NICS = (NicSnapshot("mlx5_0", "infiniband", 200.0, 1.5e9, 2.5e9, state="active", port=1, netdev="ib0", numa_node=0,
                    nearest_gpu=0, rx_bytes_total=4 * 10**12, tx_bytes_total=8, bus_id="0000:0c:00.0"),
        NicSnapshot("eth\x1b0", "ethernet", None, None, None))


def snapshot() -> Snapshot:
    process = JobProcess(510, 500, "python3", "python train.py", "rank 0", 0, 1, "S", 10.0, 1, 2, None,
                         nccl_env=(("NCCL_IB_DISABLE", "1"),), world_size=16, local_world_size=8)
    job = JobSnapshot("torchrun", (500,), "running", (process,), 10.0, 1)
    workload = WorkloadState("demo", "running", None, (), None, config=JobConfig(world_size=16))
    return Snapshot(time=5.0, interval_s=1.0, host=None, cpu=None, memory=None, numa=None, nics=NICS, job=job,
                    workload=workload)


def test_ports_and_nccl_settings_survive_json() -> None:
    original = snapshot()
    assert snapshot_from_dict(json.loads(original.to_json())) == original


def test_a_recording_from_before_the_network_loads_with_none_and_empty() -> None:
    data = json.loads(replace(snapshot(), nics=()).to_json())
    del data["nics"]
    old_port = json.loads(snapshot().to_json())["nics"][0]
    for key in ("bus_id", "nearest_gpu", "numa_node", "netdev", "rx_bytes_total", "tx_bytes_total", "state", "port"):
        del old_port[key]
    for key in ("nccl_env", "world_size", "local_world_size"):
        del data["job"]["processes"][0][key]
    data["workload"]["config"] |= {"nodes": 2, "nccl_env": [["NCCL_SOCKET_IFNAME", "eno1"]]}  # fields since gone
    loaded = snapshot_from_dict(data)
    assert loaded.nics == () and loaded.job is not None and loaded.job.processes[0].nccl_env == ()
    assert loaded.workload is not None and loaded.workload.config == JobConfig(world_size=16)
    port = snapshot_from_dict({**data, "nics": [old_port]}).nics[0]
    assert (port.name, port.bus_id, port.nearest_gpu, port.port) == ("mlx5_0", None, None, None)
