"""Per-GPU series say whose the GPU is with dcgm-exporter's label names (hpc_job; pod, namespace, container): from
the demo box two Slurm jobs share, from a pod, a GPU two jobs share (a series each, as dcgm-exporter copies a
metric per job), and none of these labels on a box where nothing owns a GPU."""

from __future__ import annotations

import re

import pytest

from hwtop.demo.machine import demo_sampler
from hwtop.exporter.metrics import families
from hwtop.exporter.text import render
from hwtop.model.owner import Owner
from hwtop.model.snapshot import GpuProcess, GpuSnapshot, Snapshot

SERIES = re.compile(r'^(\w+)\{(.*)\} (\S+)$')


def series(text: str, name: str) -> list[dict[str, str]]:
    out = []
    for line in text.splitlines():
        match = SERIES.match(line)
        if match and match.group(1) == name:
            out.append(dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2))))
    return out


def exposition(spec: str) -> str:
    sampler = demo_sampler(spec, seed=1)
    try:
        sampler.sample()
        snapshot = sampler.sample()
    finally:
        sampler.close()
    return render(families(snapshot, (), "test")).decode()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_two_slurm_jobs_label_their_gpus() -> None:
    util = series(exposition("dgx-a100:shared"), "DCGM_FI_DEV_GPU_UTIL")
    assert {s["gpu"]: s["hpc_job"] for s in util} == {**{str(i): "4242" for i in range(4)},
                                                      **{str(i): "5151" for i in range(4, 8)}}
    assert all("pod" not in s for s in util)  # no pod here: no pod labels


def test_a_pod_labels_its_gpu() -> None:
    util = series(exposition("h100-pcie:pod"), "DCGM_FI_DEV_GPU_UTIL")
    assert [(s["pod"], s["namespace"], s["container"]) for s in util] == [("llama-ft-0", "ml-research",
                                                                           "3f1c0d5e9a7b")]
    assert "hpc_job" not in util[0]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_no_owner_no_owner_labels() -> None:
    util = series(exposition("dgx-a100"), "DCGM_FI_DEV_GPU_UTIL")
    assert len(util) == 8 and all(set(s) == {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}
                                  for s in util)


def test_a_shared_gpu_has_a_series_per_job() -> None:
    alice, bob = Owner("slurm", job_id="4242", user="alice"), Owner("slurm", job_id="5151", user="bob")
    gpu = GpuSnapshot(0, "NVIDIA A100-SXM4-80GB", "GPU-0", "0000:07:00.0", util_percent=90.0,
                      processes=(GpuProcess(1, "compute", 1, owner=alice), GpuProcess(2, "compute", 1, owner=bob),
                                 GpuProcess(3, "compute", 1, owner=alice)))
    free = GpuSnapshot(1, "NVIDIA A100-SXM4-80GB", "GPU-1", "0000:0f:00.0", util_percent=0.0)
    snapshot = Snapshot(1.0, 1.0, None, None, None, None, gpus=(gpu, free))
    util = series(render(families(snapshot, (), "test", hostname="h")).decode(), "DCGM_FI_DEV_GPU_UTIL")
    assert sorted((s["gpu"], s["hpc_job"]) for s in util) == [("0", "4242"), ("0", "5151"), ("1", "")]
