"""Scripted stories a whole demo machine plays over a few minutes (`--demo dgx-a100 --scenario starved`): the
job's telemetry, its processes and its GPUs change together, as they would on real hardware, so the advice pane
raises a finding and (where the story fixes the cause) clears it.

A story is a pure function of the scenario clock (seconds since the demo started): `Story.at(t)` gives what the
job looks like then, and `Story.setup(library)` schedules the GPU side on the fake NVML library's timeline. Nothing
here reads wall time, so tests play a story at any speed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hwtop.advice.rules.health import gpu_throttled
from hwtop.advice.rules.memory import cuda_oom
from hwtop.advice.rules.network import nccl_wrong_transport
from hwtop.advice.rules.pipeline import gpu_starved
from hwtop.advice.rules.precision import amp_available
from hwtop.advice.rules.straggler import rank_straggler
from hwtop.demo.profiles import DemoProcess, DemoProfile

if TYPE_CHECKING:
    from hwtop.demo.nvml.library import FakeNvmlLibrary
    from hwtop.model.workload import Amp

GIB = 1024**3
# A model's gradients as DDP all-reduces them: fp32, one per parameter (autocast runs the ops in bf16 but keeps the
# parameters, so their gradients, in fp32; DDP sends them as they are, with no compression hook)
GRADIENT_BYTES = 4
RESNET50_PARAMETERS = 25.557e6  # torchvision's resnet50: 25,557,032 parameters
STRAGGLER_OWN_WAIT = 0.03  # the rank the others wait for reaches each all-reduce last: it barely waits
RANK_PID = 41000  # rank r is pid 41000 + r, as the fake NVML library lists it
LAUNCHER_PID = 40990
RDZV_PORT = 29400  # torchrun's c10d rendezvous, on the node of rank 0 (this one)


@dataclass(frozen=True, slots=True)
class JobState:
    """The training job at one instant of a story: what the story decides (workers, the CPU cost of a sample, the
    GPU's time for a step), and the figures that follow from it, so that every screen tells one story. A step
    takes the longer of the GPU's compute and the time the workers need to make its batch; the workers supply
    exactly what the step consumes, so their CPU is the share of the step they spend making it; a rank's main
    thread runs while its GPU computes and sleeps on the data queue otherwise."""

    phase: str  # a few words for the pane: "loader-bound", "num_workers raised", ...
    status: str = "running"  # running | stalled | crashed
    num_workers: int = 8  # DataLoader workers per rank
    cpu_ms_per_sample: float = 6.0  # a worker's CPU time to read, decode and augment one sample
    compute_s: float | None = None  # the GPU's part of a step (forward, backward, all-reduce); 0.31 s if not given
    amp: Amp = "bf16"
    batch_size: int = 256
    gpu_memory_scale: float = 1.0  # each rank's device memory, as a share of what its profile's rank holds
    stuck_rank: int | None = None  # a rank that never reached the collective the others wait in
    dead_ranks: tuple[int, ...] = ()
    oom_at: float | None = None  # scenario time of the OOM that killed the first dead rank
    leak_rank: int | None = None  # a rank whose device memory grows step after step at one batch size...
    leak: float = 0.0  # ...this far (0-1) from what it holds in full training to its device's last free bytes
    straggler_rank: int | None = None  # a rank the others wait for in every all-reduce
    collective_wait: float = 0.12  # the share of their time the other ranks spend waiting in NCCL
    # The network side (demo/host.py nics()): hosts the job spans, where its all-reduce goes (nvlink: one node,
    # torchrun --standalone; infiniband; ethernet: NCCL fell back to sockets) and the NCCL_* variables of the
    # ranks' environment (collective_wait above is the share of each step they wait in collectives).
    nodes: int = 1
    transport: str = "nvlink"
    nccl_env: tuple[tuple[str, str], ...] = ()
    model: str = "resnet50"
    gradient_bytes: float = RESNET50_PARAMETERS * GRADIENT_BYTES  # what a step's all-reduce sums: 102 MB
    # Follow from the above unless a story sets them: a step time given alone is the GPU's part of the step (the
    # workers may still make it longer); a training rank's main-thread CPU is the share of the step it computes,
    # less the share it sleeps in the all-reduce.
    step_time_s: float | None = None
    rank_cpu_percent: float | None = None

    def __post_init__(self) -> None:
        compute = self.compute_s if self.compute_s is not None else (self.step_time_s or 0.31)
        if self.num_workers == 0:  # loading in the main thread does not overlap the GPU's work
            step = compute + self.loader_s
        else:
            step = max(compute, self.loader_s, self.step_time_s or 0.0)
        object.__setattr__(self, "compute_s", compute)
        object.__setattr__(self, "step_time_s", step)
        if self.rank_cpu_percent is None:
            object.__setattr__(self, "rank_cpu_percent", 100.0 * compute / step * (1.0 - self.collective_wait))

    @property
    def compute(self) -> float:
        return self.compute_s or 0.0

    @property
    def step_s(self) -> float:
        return self.step_time_s or self.compute

    @property
    def training(self) -> bool:
        return self.status == "running"

    @property
    def loader_s(self) -> float:
        """The workers' time to make one batch, each at full speed (num_workers=0: the main thread alone)."""
        return self.batch_size * self.cpu_ms_per_sample / 1000.0 / max(1, self.num_workers)

    @property
    def data_wait(self) -> float:
        """The share of each step spent waiting for the next batch."""
        return 1.0 - self.compute / self.step_s if self.training else 0.0

    @property
    def samples_per_s(self) -> float:
        """Per rank."""
        return self.batch_size / self.step_s if self.training else 0.0

    @property
    def supply_per_s(self) -> float:
        """The most samples a second a rank's workers can make, all at 100 % CPU."""
        return max(1, self.num_workers) * 1000.0 / self.cpu_ms_per_sample

    @property
    def gpu_busy(self) -> float:
        """The share of the time the GPU computes."""
        return self.compute / self.step_s if self.training else 0.0

    @property
    def worker_cpu_percent(self) -> float:
        """Each worker's CPU: none while the job is stalled or dead (their prefetch queues are full)."""
        if not self.training or self.num_workers == 0:
            return 0.0
        return 100.0 * min(1.0, self.loader_s / self.step_s)

    def cpu_of_rank(self, rank: int) -> float:
        """A rank's main thread. In a hang the one rank that never reached the collective runs (a data-dependent
        branch, a loop of its own), the others sleep in it."""
        if self.status == "crashed" or rank in self.dead_ranks:
            return 0.0
        if self.status == "stalled":
            return 98.0 if rank == self.stuck_rank else 0.3
        if rank == self.straggler_rank:  # the rank the others wait for never waits itself
            return 100.0 * self.gpu_busy
        return self.rank_cpu_percent or 0.0

    def collective_of(self, rank: int) -> float:
        """The share of a rank's time spent waiting in collectives, as its stack samples and its telemetry both say
        it: the straggler hardly waits (the others wait for it); in a hang every rank but the stuck one waits all
        the time; a dead rank waits for nothing."""
        if self.status == "crashed" or rank in self.dead_ranks:
            return 0.0
        if self.status == "stalled":
            return 0.0 if rank == self.stuck_rank else 1.0
        if rank == self.straggler_rank:
            return STRAGGLER_OWN_WAIT
        return self.collective_wait

    def allreduce_bytes_per_s(self, ranks_here: int) -> float:
        """What one node sends (and receives) over the network each second for the gradient all-reduce of a job
        spanning nodes: NCCL's ring all-reduce has each of the n ranks send 2(n-1)/n of the gradients a step
        (its bus bandwidth), and of each ring (one per channel, each carrying its share of the gradients)
        one rank per node sends to the next node and one receives from the previous: a node moves 2(n-1)/n of
        the gradients a step over its ports, whichever its ranks' count. 0 on one node, or with no step."""
        world = ranks_here * self.nodes
        if not self.training or self.stuck_rank is not None or self.nodes <= 1 or world < 2:
            return 0.0
        return 2 * (world - 1) / world * self.gradient_bytes / self.step_s

    def rank_runs(self, rank: int) -> bool:
        """Its state in the process table: R while on the CPU, else S."""
        return self.cpu_of_rank(rank) >= 50.0

    def fitted(self, ranks: tuple[int, ...]) -> JobState:
        """The state on a machine with these ranks: a story names the rank it is about on the eight-GPU box it is
        written for (rank 5 hangs); on a smaller one its last rank plays that part, and the phase says so."""
        if not ranks:
            return self
        last = ranks[-1]
        phase, stuck, dead, slow = self.phase, self.stuck_rank, self.dead_ranks, self.straggler_rank
        leak = self.leak_rank
        if leak is not None and leak not in ranks:
            phase, leak = phase.replace(f"rank {leak}", f"rank {last}"), last
        if stuck is not None and stuck not in ranks:
            phase, stuck = phase.replace(f"rank {stuck}", f"rank {last}"), last
        if slow is not None and slow not in ranks:
            phase, slow = phase.replace(f"rank {slow}", f"rank {last}").replace(f"GPU {slow}", f"GPU {last}"), last
        if any(r not in ranks for r in dead):
            for r in dead:
                phase = phase.replace(f"rank {r}", f"rank {last}") if r not in ranks else phase
            dead = tuple(dict.fromkeys(r if r in ranks else last for r in dead))
        if (phase, stuck, dead, slow, leak) == (self.phase, self.stuck_rank, self.dead_ranks, self.straggler_rank,
                                                self.leak_rank):
            return self
        return dataclasses.replace(self, phase=phase, stuck_rank=stuck, dead_ranks=dead, straggler_rank=slow,
                                   leak_rank=leak)


class StepCounter:
    """The steps each rank has completed by scenario time t, integrated over the story's step time whole seconds
    at a time (a fast-played story counts the same steps). The job's telemetry (demo/job.py) and NCCL's counts of
    collectives launched (demo/ras.py) each keep one, so both count the same steps."""

    def __init__(self, story: Story, ranks: tuple[int, ...]) -> None:
        self.story, self.ranks = story, ranks
        self.t = 0.0
        self.steps = [0.0] * len(ranks)

    def advance(self, t: float) -> None:
        while self.t < t:
            step_end = min(t, math.floor(self.t) + 1.0)
            state = self.story.state(self.t, self.ranks)
            for i, rank in enumerate(self.ranks):
                if state.status == "running" and rank != state.stuck_rank and rank not in state.dead_ranks:
                    self.steps[i] += (step_end - self.t) / state.step_s
                # stalled: every rank waits on the stuck one in the collective, so no step completes
            self.t = step_end

    def of(self, rank: int) -> int:
        """Rank `rank`'s completed steps."""
        return int(self.steps[self.ranks.index(rank)])

    @property
    def most(self) -> int:
        """The most steps a rank has completed (DDP keeps the live ranks in step)."""
        return int(max(self.steps, default=0.0))


def rank_memory(profile: DemoProfile, rank: int) -> int:
    """The device memory a profile's rank holds in full training (its DemoProcess): what the job's telemetry and
    the fake NVML library both start from."""
    return next((p.used_memory_bytes or 0 for p in profile.processes if p.pid == RANK_PID + rank), 0)


OOM_REQUEST = 2 * GIB  # the allocation a leaking rank's step fails at: its largest activation
OOM_FREE = 1.5 * GIB  # what its device has left then


def device_capacity(profile: DemoProfile) -> int:
    """What PyTorch calls the device's total capacity: its memory less what the driver reserves."""
    return profile.gpu.memory_bytes - profile.gpu.reserved_bytes


def rank_held(profile: DemoProfile, state: JobState, rank: int) -> int:
    """The device memory rank `rank` holds in `state` (its process in NVML's list, and its telemetry's reserved
    memory, both read this): its profile's rank in full training, scaled by the story (AMP); a leaking rank holds
    `leak` of the way from there to its device's capacity less OOM_FREE, where its next step's OOM_REQUEST fails."""
    base = int(rank_memory(profile, rank) * state.gpu_memory_scale)
    if rank != state.leak_rank:
        return base
    full = device_capacity(profile) - int(OOM_FREE)
    return base + int(state.leak * max(0, full - base))


def story_rank(profile: DemoProfile, rank: int) -> int:
    """The rank that plays rank `rank`'s part on this profile (its last, where it has fewer)."""
    ranks = tuple(profile.busy_gpus)
    return rank if rank in ranks or not ranks else ranks[-1]


@dataclass(frozen=True, slots=True)
class Story:
    name: str
    description: str
    duration_s: float
    at: Callable[[float], JobState]
    setup: Callable[[FakeNvmlLibrary, DemoProfile], None] | None = None
    # The finding this story raises, and whether the story fixes its cause so that it clears.
    finding: str | None = None
    clears: bool = False
    focused: bool = True  # the job is focused as `--pid` would: the job view, its per-rank figures (demo/ranks.py)
    # At scale (SCALE_STORIES): the job's ranks over all its nodes (this host runs the GPUs' share), and idle
    # processes of other users beside it. 0: the job is this host's ranks, no other users.
    job_ranks: int = 0
    extra_processes: int = 0

    def state(self, t: float, ranks: tuple[int, ...]) -> JobState:
        """The job at scenario time t on a machine with these ranks; a job of `job_ranks` spans as many nodes as
        hold them at this host's share each."""
        state = self.at(t).fitted(ranks)
        if self.job_ranks and ranks:
            nodes = -(-self.job_ranks // len(ranks))
            if state.nodes != nodes:
                state = dataclasses.replace(state, nodes=nodes, transport="infiniband")
        return state


def _steady(_t: float) -> JobState:
    return JobState("training")


# ----- starved: a loader-bound GPU, then num_workers raised -----

STARVED_FIX_S = 60.0


STARVED_BEFORE = JobState("loader-bound: num_workers=1", num_workers=1, compute_s=0.29)
STARVED_AFTER = JobState("num_workers raised to 12", num_workers=12, compute_s=0.29)


def _starved(t: float) -> JobState:
    return STARVED_BEFORE if t < STARVED_FIX_S else STARVED_AFTER


def _starved_gpus(library: FakeNvmlLibrary, profile: DemoProfile) -> None:
    for index in profile.busy_gpus:  # the GPU computes only the share of each step its batch is there
        library.set_load(index, STARVED_BEFORE.gpu_busy)
        library.at(STARVED_FIX_S, lambda lib, i=index: lib.set_load(i, None))


# ----- the two-node job of the stories NCCL's RAS tells (demo/ras.py): this node and one more, over InfiniBand -----

def node_address(node: int) -> str:
    """The address node `node` of a job spanning nodes has on its fabric, where NCCL's RAS reaches its ranks
    (this one is node 0: it runs rank 0)."""
    return f"10.0.0.{node + 1}"


RAS_ADDR = f"{node_address(0)}:28028"  # NCCL_RAS_ADDR in the ranks' environment: RAS listens there, hwtop asks
TWO_NODES = JobState("training", nodes=2, transport="infiniband", nccl_env=(("NCCL_RAS_ADDR", RAS_ADDR),))


# ----- nccl-hang: one rank never reaches a collective, the others wait in it -----

NCCL_HANG_S = 30.0
NCCL_STUCK_RANK = 5


def _nccl_hang(t: float) -> JobState:
    if t < NCCL_HANG_S:
        return TWO_NODES
    return JobState(f"rank {NCCL_STUCK_RANK} never reached the all_reduce the other ranks wait in", status="stalled",
                    stuck_rank=NCCL_STUCK_RANK, nodes=TWO_NODES.nodes, transport=TWO_NODES.transport,
                    nccl_env=TWO_NODES.nccl_env)


def _nccl_gpus(library: FakeNvmlLibrary, profile: DemoProfile) -> None:
    # NCCL kernels spin while they wait: utilization pinned at 100 %, flat, no step rhythm, yet the SMs only poll
    # a flag, so power falls to little above idle
    spin_w = profile.gpu.idle_power_w + 0.15 * (profile.gpu.power_limit_w - profile.gpu.idle_power_w)
    for index in profile.busy_gpus:
        library.at(NCCL_HANG_S, lambda lib, i=index: lib.set_load(i, 1.0))
        library.at(NCCL_HANG_S, lambda lib, i=index: lib.set_spin_power(i, spin_w))


# ----- oom: one rank's memory climbs until it dies -----

OOM_RANK = 3
OOM_AT_S = 52.0
OOM_CLIMB_S = (10.0, OOM_AT_S)  # the leak grows over this span, until the next step cannot allocate


def _oom(t: float) -> JobState:
    """Every rank trains at batch 256; rank 3 keeps something of each step on its GPU (a leak: its memory climbs
    at one batch size) until a step's allocation no longer fits, and torchrun ends the job. The memory is what
    the leak held at the last whole second, when NVML's list of processes changes too (_oom_gpus)."""
    if t < OOM_AT_S:
        start, end = OOM_CLIMB_S
        share = min(1.0, max(0.0, (math.floor(t) - start) / (end - start)))
        return JobState(f"memory of rank {OOM_RANK} climbing" if t >= start else "training", leak_rank=OOM_RANK,
                        leak=share)
    return JobState(f"rank {OOM_RANK} died: CUDA out of memory", status="crashed", dead_ranks=(OOM_RANK,),
                    oom_at=OOM_AT_S, leak_rank=OOM_RANK, leak=1.0)


def _oom_gpus(library: FakeNvmlLibrary, profile: DemoProfile) -> None:
    rank = story_rank(profile, OOM_RANK)
    pid = RANK_PID + rank

    def grow(lib: FakeNvmlLibrary, t: float) -> None:
        lib.remove_process(pid)
        held = rank_held(profile, _oom(t).fitted(tuple(profile.busy_gpus)), rank)
        lib.add_process(DemoProcess(rank, pid, "compute", held, "python train.py"))

    for second in range(int(OOM_CLIMB_S[0]), int(OOM_CLIMB_S[1])):
        library.at(float(second), lambda lib, s=second: grow(lib, float(s)))

    def die(lib: FakeNvmlLibrary) -> None:
        for index in profile.busy_gpus:  # torchrun tears the whole job down once one rank fails
            lib.remove_process(RANK_PID + index)
            lib.set_load(index, 0.0)

    library.at(OOM_AT_S, die)


# ----- amp: fp32, then AMP (bf16): memory and step time drop -----

AMP_SWITCH_S = 60.0
AMP_MEMORY = 38 / 61  # bf16 activations: a rank that held 61 GiB in fp32 holds 38 GiB


def _amp(t: float) -> JobState:
    if t < AMP_SWITCH_S:
        return JobState("fp32 (amp off)", amp="off", compute_s=0.52)
    return JobState("restarted with AMP (bf16)", amp="bf16", compute_s=0.27, gpu_memory_scale=AMP_MEMORY)


def _amp_gpus(library: FakeNvmlLibrary, profile: DemoProfile) -> None:
    def switch(lib: FakeNvmlLibrary) -> None:
        for index in profile.busy_gpus:
            lib.remove_process(RANK_PID + index)
            lib.add_process(DemoProcess(index, RANK_PID + index, "compute",
                                        int(rank_memory(profile, index) * AMP_MEMORY), "python train.py"))

    library.at(AMP_SWITCH_S, switch)


# ----- thermal: temperature climbs, clocks fall; airflow restored -----

THERMAL_RISE_S = (10.0, 50.0)
THERMAL_SLOW_S = 40.0  # SW thermal slowdown from here
THERMAL_FIXED_S = 90.0  # cooling restored


THERMAL_GPU = 2
_COOL = JobState("training")
# DDP steps at the hot GPU's pace: the others compute their share of its step (the cool step's, less its wait) and
# wait in the all-reduce for the rest; its own rank hardly waits
THERMAL_HOT = JobState("a GPU too hot: clocks held back, the others wait for it each step", compute_s=0.41,
                       straggler_rank=THERMAL_GPU,
                       collective_wait=1 - _COOL.compute * (1 - _COOL.collective_wait) / 0.41)


def _thermal(t: float) -> JobState:
    if THERMAL_SLOW_S <= t < THERMAL_FIXED_S:
        return THERMAL_HOT
    return JobState("cooling restored" if t >= THERMAL_FIXED_S else "training")



def _thermal_gpus(library: FakeNvmlLibrary, profile: DemoProfile) -> None:
    gpu = min(THERMAL_GPU, profile.gpu_count - 1)
    start, end = THERMAL_RISE_S
    for second in range(int(start), int(end) + 1, 2):
        library.at(float(second), lambda lib, s=second: lib.set_temperature_offset(
            gpu, 22.0 * (s - start) / (end - start)))
    library.at(THERMAL_SLOW_S, lambda lib: lib.force_reasons(gpu, "sw_thermal"))
    library.at(THERMAL_FIXED_S, lambda lib: lib.force_reasons(gpu))
    # DDP steps at the slowest GPU's pace: the cool ones compute their share of its step, then wait in all-reduce
    waiting = JobState("training").compute / THERMAL_HOT.compute
    for index in profile.busy_gpus:
        if index != gpu:
            library.at(THERMAL_SLOW_S, lambda lib, i=index: lib.set_load(i, 0.9 * waiting))
            library.at(THERMAL_FIXED_S, lambda lib, i=index: lib.set_load(i, None))
    library.at(THERMAL_FIXED_S, lambda lib: lib.set_temperature_offset(gpu, 0.0))


# ----- straggler: one rank's GPU slows down, the other ranks wait for it in NCCL -----

STRAGGLER_S = 20.0
STRAGGLER_RANK = 3


STRAGGLING = JobState(f"GPU {STRAGGLER_RANK} clocks held back: the other ranks wait for rank {STRAGGLER_RANK}",
                      step_time_s=0.52, straggler_rank=STRAGGLER_RANK, collective_wait=0.55, nodes=TWO_NODES.nodes,
                      transport=TWO_NODES.transport, nccl_env=TWO_NODES.nccl_env)


def _straggler(t: float) -> JobState:
    return TWO_NODES if t < STRAGGLER_S else STRAGGLING


def _straggler_gpus(library: FakeNvmlLibrary, profile: DemoProfile) -> None:
    # The slow rank's GPU: HW slowdown holds its clocks at ~78% and it computes all the time. The others finish
    # their part of each step early and wait in the all-reduce: NCCL's kernels spin, so they read 100% busy,
    # at about half their power (a hung collective, by contrast, falls to little above idle).
    slow = min(STRAGGLER_RANK, profile.gpu_count - 1)
    wait_w = profile.gpu.idle_power_w + 0.5 * (profile.gpu.power_limit_w - profile.gpu.idle_power_w)
    library.at(STRAGGLER_S, lambda lib: lib.force_reasons(slow, "hw_slowdown"))
    library.at(STRAGGLER_S, lambda lib: lib.set_load(slow, 1.0))
    for index in profile.busy_gpus:
        if index != slow:
            library.at(STRAGGLER_S, lambda lib, i=index: lib.set_load(i, 1.0))
            library.at(STRAGGLER_S, lambda lib, i=index: lib.set_spin_power(i, wait_w))


# ----- nccl-ethernet: a two-node job whose launch script disables InfiniBand: NCCL runs over the management port -----

NCCL_ETH_FROM_S = 40.0  # relaunched with NCCL_IB_DISABLE=1 left in the script
NCCL_ETH_FIXED_S = 100.0  # relaunched without it
NCCL_ETH_PORT = "enp225s0f0"  # the 100 GbE storage/management port the sockets pick


NCCL_ETH_MODEL = "gpt-1.3b"  # 1.3 B parameters: 5.2 GB of fp32 gradients each step
NCCL_ETH_GRADIENTS = 1.3e9 * GRADIENT_BYTES
NCCL_ETH_RANKS = 16  # two nodes of eight
NCCL_ETH_COMPUTE_S = 0.86 * (1 - 0.18)  # over InfiniBand a step takes 0.86 s, 18% of it waiting in the all-reduce
# Over sockets the port sends at its most while the all-reduce runs: a node's 2(n-1)/n of the gradients a step
# take 0.81 s through 100 GbE. DDP overlaps it with the backward pass (about two thirds of the compute): the step
# is the forward pass, then the longer of the backward pass and the all-reduce.
NCCL_ETH_LINE = 100e9 / 8
NCCL_ETH_SOCKETS_S = 2 * (NCCL_ETH_RANKS - 1) / NCCL_ETH_RANKS * NCCL_ETH_GRADIENTS / (0.96 * NCCL_ETH_LINE)
NCCL_ETH_STEP_S = NCCL_ETH_COMPUTE_S / 3 + max(2 * NCCL_ETH_COMPUTE_S / 3, NCCL_ETH_SOCKETS_S)
NCCL_ETH_BUSY = NCCL_ETH_COMPUTE_S / NCCL_ETH_STEP_S  # the GPUs' share of the step


def _nccl_ethernet(t: float) -> JobState:
    if NCCL_ETH_FROM_S <= t < NCCL_ETH_FIXED_S:  # the all-reduce through one 100 GbE port sets the pace
        return JobState("relaunched: NCCL_IB_DISABLE=1, all-reduce over Ethernet", nodes=2, batch_size=16,
                        transport="ethernet", collective_wait=1 - NCCL_ETH_BUSY, step_time_s=NCCL_ETH_STEP_S,
                        model=NCCL_ETH_MODEL, gradient_bytes=NCCL_ETH_GRADIENTS,
                        nccl_env=(("NCCL_IB_DISABLE", "1"), ("NCCL_SOCKET_IFNAME", NCCL_ETH_PORT)))
    phase = "relaunched without NCCL_IB_DISABLE" if t >= NCCL_ETH_FIXED_S else "2 nodes, all-reduce over InfiniBand"
    return JobState(phase, nodes=2, batch_size=16, transport="infiniband", collective_wait=0.18, step_time_s=0.86,
                    model=NCCL_ETH_MODEL, gradient_bytes=NCCL_ETH_GRADIENTS,
                    nccl_env=(("NCCL_SOCKET_IFNAME", NCCL_ETH_PORT),))


def _nccl_ethernet_gpus(library: FakeNvmlLibrary, profile: DemoProfile) -> None:
    for index in profile.busy_gpus:  # each step waits on the network for the rest
        library.at(NCCL_ETH_FROM_S, lambda lib, i=index: lib.set_load(i, NCCL_ETH_BUSY))
        library.at(NCCL_ETH_FIXED_S, lambda lib, i=index: lib.set_load(i, None))


STORIES: dict[str, Story] = {
    s.name: s
    for s in (
        Story("starved", f"DataLoader-bound GPUs (num_workers=1) until {STARVED_FIX_S:g} s, then num_workers=12",
              120.0, _starved, _starved_gpus, finding=gpu_starved.id, clears=True),
        Story("nccl-hang", f"rank {NCCL_STUCK_RANK} never reaches a collective from {NCCL_HANG_S:g} s; the others "
              "wait in it, GPU utilization flat; NCCL's RAS names it (j: every node's ranks)", 120.0, _nccl_hang,
              _nccl_gpus, focused=True),
        Story("oom", f"rank {OOM_RANK}'s device memory climbs until it dies of CUDA OOM at {OOM_AT_S:g} s", 90.0,
              _oom, _oom_gpus, finding=cuda_oom.id),
        Story("amp", f"fp32 until {AMP_SWITCH_S:g} s, then AMP (bf16): memory and step time drop", 120.0, _amp,
              _amp_gpus, finding=amp_available.id, clears=True),
        Story("thermal", f"GPU {THERMAL_GPU} heats up; clocks fall from {THERMAL_SLOW_S:g} s until cooling returns "
              f"at {THERMAL_FIXED_S:g} s", 120.0, _thermal, _thermal_gpus, finding=gpu_throttled.id, clears=True),
        Story("straggler", f"GPU {STRAGGLER_RANK} slows down from {STRAGGLER_S:g} s; the other ranks wait for rank "
              f"{STRAGGLER_RANK} in NCCL (the job view, j, shows each rank)", 120.0, _straggler, _straggler_gpus,
              finding=rank_straggler.id),
        Story("nccl-ethernet", f"two nodes over InfiniBand, then from {NCCL_ETH_FROM_S:g} s NCCL_IB_DISABLE=1: the "
              f"all-reduce fills the 100 GbE management port until {NCCL_ETH_FIXED_S:g} s", 140.0,
              _nccl_ethernet, _nccl_ethernet_gpus, finding=nccl_wrong_transport.id, clears=True),
    )
}

STEADY = Story("steady", "a healthy job", float("inf"), _steady)

# The stories again on a machine at the size hwtop is run on (benchmarks/README.md measures its cost there); kept
# out of STORIES, whose every story the tests' matrices and screenshots play.
SCALE_STORIES: dict[str, Story] = {
    "straggler-256": dataclasses.replace(
        STORIES["straggler"], name="straggler-256", job_ranks=256, extra_processes=2000,
        description="straggler in a 256-rank job (32 nodes; this host runs 8 of them), 2,000 other processes"),
}


def is_story(name: str) -> bool:
    return name in STORIES or name in SCALE_STORIES


def get_story(name: str | None) -> Story:
    if name is None:
        return STEADY
    found = STORIES.get(name) or SCALE_STORIES.get(name)
    if found is None:
        raise KeyError(unknown_story(name))
    return found


def unknown_story(name: str, hint: str = "") -> str:
    """The line for a story name that is none: `hint` says what else it may be (demo/machine.py knows the driver
    variants, which read the stories)."""
    return f"unknown demo scenario {name!r}{hint}; valid: {', '.join([*STORIES, *SCALE_STORIES])}"
