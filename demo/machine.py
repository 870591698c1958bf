"""A whole demo machine: the fake NVML library, the simulated host and the scripted job on one scenario clock,
composed into a Sampler that reads nothing of the real host (`hwtop --demo PROFILE [--scenario STORY]`)."""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from hwtop.demo.host import SimulatedHost
from hwtop.demo.job import DemoJob
from hwtop.demo.story import get_story, is_story, unknown_story
from hwtop.model.snapshot import Topology
from hwtop.session.sampler import Sampler

NO_PROC = "/nonexistent/hwtop-demo-proc"  # the GPU probe's /proc: a demo GPU pid must never meet a real process
SOURCE_PREFIX = "demo:"  # a demo snapshot's GPU source: demo:PROFILE[:VARIANT][+STORY]
STORY_MARK = "+"


def split_story(spec: str, scenario: str | None = None) -> tuple[str, str | None]:
    """`dgx-a100:starved` (or `dgx-a100` with scenario `starved`) -> ("dgx-a100", "starved"); a driver variant
    of demo/variants.py (`dgx-a100:r470`) stays in the spec. KeyError for an unknown story."""
    name, _, tail = spec.partition(":")
    if is_story(tail):
        if scenario is not None and scenario != tail:
            raise KeyError(f"two demo stories: {tail!r} and {scenario!r}")
        return name, tail
    if scenario is not None and not is_story(scenario):
        from hwtop.demo.variants import VARIANTS

        hint = f" ({scenario!r} is a driver variant: --demo PROFILE:{scenario})" if scenario in VARIANTS else ""
        raise KeyError(unknown_story(scenario, hint))
    return spec, scenario


def source_of(gpu_spec: str, story_name: str | None) -> str:
    """The GPU source a demo machine's snapshots carry: `demo:dgx-a100+starved`."""
    return SOURCE_PREFIX + gpu_spec + (f"{STORY_MARK}{story_name}" if story_name else "")


def machine_of_source(source: str | None) -> str | None:
    """The demo machine a snapshot's source names, without its story (`demo:dgx-a100:r470+starved` ->
    `dgx-a100:r470`): a story changes what the machine does, not what it is. None for a real machine."""
    if not source or not source.startswith(SOURCE_PREFIX):
        return None
    return source[len(SOURCE_PREFIX):].partition(STORY_MARK)[0] or None


def hostname_of(spec: str) -> str:
    """The demo machine's hostname (for a recording's header: never this machine's)."""
    from hwtop.demo.host import host_of
    from hwtop.demo.variants import profile_of

    return host_of(profile_of(spec)).hostname


def demo_sampler(spec: str, scenario: str | None = None, seed: int = 0,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 process_limit: int = 60, extra_processes: int = 0, gpu: bool = True,
                 workload: bool = True) -> Sampler:
    """`clock` drives the scenario (seconds from now on), `wall` stamps the snapshots; tests pass one fake clock
    for both to play a story at any speed. Without `gpu` its GPUs are not probed (--no-gpu); without `workload`
    its story's job runs unseen in the workload pane (a screenshot of the process table)."""
    from hwtop.demo.nvml import demo_library
    from hwtop.demo.topology import read_demo_topology
    from hwtop.probes.gpu import NvmlProbe

    gpu_spec, story_name = split_story(spec, scenario)
    story = get_story(story_name)
    library = demo_library(gpu_spec, seed=seed, clock=clock)
    if story.setup is not None:
        story.setup(library, library.profile)
    start = clock()

    def elapsed() -> float:
        return clock() - start

    source = source_of(gpu_spec, story.name if story_name else None)
    probe = NvmlProbe(library.pynvml, proc_root=NO_PROC, source=source, clock=clock)
    host = SimulatedHost(library.profile, story, elapsed, seed=seed, process_limit=process_limit,
                         extra_processes=max(extra_processes, story.extra_processes))
    def topology() -> Topology:  # its NUMA memory figures the host's, as every other reading of them
        layout = read_demo_topology(gpu_spec, probe)[0]
        return msgspec.structs.replace(layout, numa=host.numa())

    job = None
    if story.focused:  # a story with a job: it is focused, as --pid focuses a real one (j, the rank rules)
        from hwtop.demo.ranks import DemoRanks

        job = DemoRanks(story, host, elapsed, wall, job_ranks=story.job_ranks)
    return Sampler(gpu=probe if gpu else None, clock=wall, host=host, process_limit=process_limit,
                   topology_reader=topology, job=job,
                   workload=DemoJob(story, library.profile, elapsed, wall) if workload else None)
