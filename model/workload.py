"""The embedded workload's telemetry (`--workload`, w): what its ranks report of their steps, its configuration and
its events. The job itself (its processes, ranks, stacks) is model/job.py's JobSnapshot, read by the job probe from
its pid as any attached job is; this is what the embedded job (or a demo machine's story) adds to it. Kept apart
from model/snapshot.py, so a monitor with no workload never imports this module."""

from __future__ import annotations

from typing import Literal

import msgspec

from hwtop.model.record import Record

# How the embedded job trains (its options, workload/job.py)
Device = Literal["cpu", "cuda"]
Backend = Literal["gloo", "nccl"]
Amp = Literal["off", "fp16", "bf16"]
OnNonfinite = Literal["skip", "stop"]


class RankState(Record, frozen=True):
    """The last telemetry of one rank of the embedded workload, with short rings for its sparklines."""

    rank: int
    pid: int | None
    step: int | None
    step_time_s: float | None
    samples_per_s: float | None
    data_wait_fraction: float | None
    loss: float | None
    amp: str | None
    scale: float | None
    batch_size: int | None
    rss_bytes: int | None
    cuda_allocated_bytes: int | None = None
    cuda_reserved_bytes: int | None = None
    cuda_peak_bytes: int | None = None
    step_times: tuple[float, ...] = ()
    throughput: tuple[float, ...] = ()
    scales: tuple[float, ...] = ()  # GradScaler scale per step (fp16): repeated drops mean inf/NaN gradients


class JobConfig(Record, frozen=True):
    """Rank 0's `started` record: how the embedded job trains. Every field is optional: a job of another version
    (or a recording made by one) may lack any of them."""

    kind: str | None = msgspec.field(default=None, name="scenario")  # balanced, dataloader-bound, ... (--scenario)
    world_size: int | None = None
    device: Device | None = None
    backend: Backend | None = None
    model: str | None = None  # its name: mlp or convnet (the embedded job), a story's resnet50 (the demo)
    amp: Amp | None = None
    batch_size: int | None = None
    num_workers: int | None = None
    pin_memory: bool | None = None
    transform_cost_ms: float | None = None
    cudnn_benchmark: bool | None = None
    grad_accum: int | None = None
    on_nonfinite: OnNonfinite | None = None
    lr: float | None = None


class AmpSummary(Record, frozen=True):
    """The amp-compare kind's result: the AMP-savings demo's figures."""

    speedup: float | None = None  # mixed-precision samples/s over fp32's
    memory_saving_fraction: float | None = None  # None where no per-phase peak exists (CPU)
    memory_metric: str | None = None  # the figure the saving compares, or why there is none


class OomEvent(Record, frozen=True):
    """The latest CUDA out-of-memory a rank reported."""

    rank: int | None = None
    batch_size: int | None = None
    largest_fit: int | None = None  # the largest batch that fitted (oom-ramp)
    message: str | None = None
    time: float | None = None


class NonfiniteEvent(Record, frozen=True):
    """The latest step whose loss or gradients were NaN/inf."""

    rank: int | None = None
    step: int | None = None
    time: float | None = None
    skipped: bool = False  # the optimizer step was skipped, as GradScaler skips one
    stopped: bool = False  # the run stopped there (--on-nonfinite stop)


class WorkloadState(Record, frozen=True):
    """The embedded job's telemetry as the monitor reads it: starting | running | stalled | finished | crashed |
    stopped."""

    kind: str = msgspec.field(name="scenario")  # balanced, ... (the job's --scenario); a demo machine's: its story's
    status: str
    exit_code: int | None
    ranks: tuple[RankState, ...]
    last_event: str | None
    stderr_tail: tuple[str, ...] = ()
    pids: tuple[int, ...] = ()
    garbage_lines: int = 0
    summary: AmpSummary | None = None
    config: JobConfig | None = None
    oom_count: int = 0
    last_oom: OomEvent | None = None
    nonfinite_steps: int = 0  # steps whose loss or gradients were NaN/inf (skipped, or the run stopped)
    last_nonfinite: NonfiniteEvent | None = None
