"""Driver variants: named situations a demo machine's GPUs can be put in (`--demo dgx-a100:r470` is the DGX A100
profile on an R470 driver), apart from the stories of demo/story.py (what its training job does over time). Each
is what real fleets meet (an old driver, a flaky sensor, MIG toggled, ...) and a test drives the probe through
it; the same names work for `hwtop`, `hwtop snapshot --json` and `hwtop record`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hwtop.demo.nvml import faults as gpu_faults
from hwtop.demo.profiles import PROFILES, DemoOwner, DemoProfile, get_profile
from hwtop.demo.story import SCALE_STORIES, STORIES, is_story
from hwtop.model.owner import Owner

if TYPE_CHECKING:
    from hwtop.demo.nvml.library import FakeNvmlLibrary

NVML_ERROR_UNKNOWN = 999
MIG_PHASE_S = 1.0  # mig-toggle: off for a second, on for a second, off again, ...


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    description: str
    driver_version: str | None = None  # None: the profile's
    cuda_driver_version: int | None = None
    setup: Callable[[FakeNvmlLibrary], None] | None = None
    owners: Callable[[DemoProfile], tuple[DemoOwner, ...]] | None = None  # whose the ranks are (a shared box)


def _fan_unknown(library: FakeNvmlLibrary) -> None:
    library.fail("nvmlDeviceGetFanSpeed", NVML_ERROR_UNKNOWN, gpu=min(3, library.profile.gpu_count - 1))


def _every_link_busy(library: FakeNvmlLibrary) -> None:
    for index in range(library.profile.gpu_count):
        library.set_load(index, 1.0)


def _mig_toggle(library: FakeNvmlLibrary) -> None:
    """GPU 0: MIG off, on, off, on, ... each for MIG_PHASE_S (for 60 phases)."""
    for phase in range(1, 61):
        library.at(phase * MIG_PHASE_S, lambda lib, on=phase % 2 == 1: lib.set_mig(0, on))


def _two_slurm_jobs(profile: DemoProfile) -> tuple[DemoOwner, ...]:
    """The busy GPUs split in two halves, one Slurm job each of two users: a shared box as Slurm places jobs
    (the cgroup v2 layout, step 0 of each)."""
    gpus = tuple(profile.busy_gpus)
    half = max(1, len(gpus) // 2)
    jobs = ((gpus[:half], "4242", "alice", "llama-70b-sft"), (gpus[half:], "5151", "bob", "vit-huge-pretrain"))
    return tuple(DemoOwner(ranks, Owner("slurm", job_id=job, step="0", user=user, job_name=name), user)
                 for ranks, job, user, name in jobs if ranks)


def _one_pod(profile: DemoProfile) -> tuple[DemoOwner, ...]:
    """The job in one Kubernetes pod (burstable, containerd), its name and namespace from the downward API."""
    pod = Owner("pod", pod_uid="6b0a2f4e-1c3d-4e5f-8a9b-0c1d2e3f4a5b", qos="burstable", pod="llama-ft-0",
                namespace="ml-research", container_id="3f1c0d5e9a7b" + "0123456789abcdef" * 3 + "0a1b",
                runtime="containerd")
    return (DemoOwner(tuple(profile.busy_gpus), pod, "1000"),)  # a pod's user has no name on the node


VARIANTS: dict[str, Variant] = {
    s.name: s
    for s in (
        Variant("r470", "an R470 driver (470.256.02, CUDA 11.4): no _v3 process queries, no memory v2, no GPM",
                 "470.256.02", 11040),
        Variant("r535", "an R535 driver (535.183.01, CUDA 12.2)", "535.183.01", 12020),
        Variant("r550", "an R550 driver (550.90.07, CUDA 12.4): no PCIe byte-counter fields", "550.90.07", 12040),
        Variant("r555", "an R555+ driver (560.35.03, CUDA 12.6): PCIe byte counters as field values",
                 "560.35.03", 12060),
        Variant("fan-unknown", "GPU 3 (or the last) answers UNKNOWN for its fan, as passively cooled cards do",
                 setup=_fan_unknown),
        Variant("nvlink-busy", "every GPU at full load, its NVLink traffic spread over all its links",
                 setup=_every_link_busy),
        Variant("mig-toggle", f"GPU 0 switches MIG mode on and off every {MIG_PHASE_S:g} s",
                 setup=_mig_toggle),
        Variant("gpu-faults", gpu_faults.DESCRIPTION, setup=gpu_faults.gpu_faults),
        Variant("shared", "two Slurm jobs of two users share the box, half the GPUs each (alice's job 4242, bob's "
                 "5151)", owners=_two_slurm_jobs),
        Variant("pod", "the job runs in a Kubernetes pod (ml-research/llama-ft-0)", owners=_one_pod),
    )
}


def split(spec: str) -> tuple[DemoProfile, Variant | None]:
    """`profile` or `profile:variant`, resolved; KeyError naming the valid choices otherwise. A story of
    demo/story.py (`dgx-a100:starved`) is the whole machine's business (demo/machine.py): here, the plain profile."""
    name, _, variant_name = spec.partition(":")
    profile = get_profile(name)
    if not variant_name or is_story(variant_name):
        return profile, None
    variant = VARIANTS.get(variant_name)
    if variant is None:
        raise KeyError(f"unknown demo variant or story {variant_name!r}; valid: {', '.join([*VARIANTS, *STORIES])}")
    if variant.driver_version is not None:
        profile = dataclasses.replace(profile, driver_version=variant.driver_version,
                                      cuda_driver_version=variant.cuda_driver_version or profile.cuda_driver_version)
    if variant.owners is not None:
        profile = dataclasses.replace(profile, owners=variant.owners(profile))
    return profile, variant


def profile_of(spec: str) -> DemoProfile:
    return split(spec)[0]


def base_name(spec: str) -> str:
    return spec.partition(":")[0]


def listing() -> list[str]:
    """`--demo list`: the profiles, then the driver variants and the stories any of them can run; each name in a
    column as wide as the longest name of its list and a space, so no name runs into its description."""
    width = max(map(len, PROFILES))
    lines = [f"{name:<{width}} {profile.description}" for name, profile in PROFILES.items()]
    lines.append("")
    lines.append("driver variants (PROFILE:VARIANT, e.g. dgx-a100:r470):")
    width = max(map(len, [*VARIANTS, *STORIES, *SCALE_STORIES]))
    lines += [f"  {name:<{width}} {variant.description}" for name, variant in VARIANTS.items()]
    lines.append("")
    lines.append("stories (--scenario NAME or PROFILE:NAME): a few minutes of a training job, the advice reacting")
    lines += [f"  {name:<{width}} {story.description}" for name, story in (STORIES | SCALE_STORIES).items()]
    return lines
