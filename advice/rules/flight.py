"""flight-recorder-off: a GPU job whose ranks run with PyTorch's Flight Recorder off. When such a job hangs,
nothing says which collective each rank launched and completed, or from which line (docs/job.md). Said once for
the job, with how to turn it on and what it costs."""

from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.job_facts import running_job
from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

FIXES = (
    "export TORCH_FR_BUFFER_SIZE=2000 (TORCH_NCCL_TRACE_BUFFER_SIZE=2000 before torch 2.6) in the job's "
    "environment: each rank keeps its last 2,000 collectives in a ring in host memory, a record per collective. "
    "PyTorch records them by default since 2.6 (pytorch/pytorch#142260); Intel measured 4-9% of vLLM's inference "
    "throughput for it and turned it off for XPU inference (intel/torch-xpu-ops#5413).",
    "With it on, TORCH_NCCL_DUMP_ON_TIMEOUT=1 writes each rank's record on a watchdog timeout, and "
    "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/fr_pipe_ lets hwtop ask a rank for it without stopping the job; hwtop "
    "then names the rank that never launched the collective the others wait in, with its line.",
)


@rule("flight-recorder-off", severity="info", hold_s=0.0, clear_s=60.0, order=226,
      watches="a GPU job's ranks with PyTorch's Flight Recorder off")
def flight_recorder_off(window: Window, t: Thresholds) -> Iterator[Finding]:  # noqa: ARG001 - reads none
    job = running_job(window)
    if job is None:
        return
    on_gpu = {p.pid for p in job.processes if p.gpus}
    off = [r for r in job.ranks if r.flight is not None and r.flight.enabled is False and
           (r.gpu is not None or r.pid in on_gpu)]
    if not off:
        return
    why = []
    for r in off[:3]:
        flight = r.flight
        assert flight is not None
        said = "its buffer set to 0" if flight.buffer == 0 else \
            f"torch {flight.torch_version}, which records nothing unless its buffer is set"
        why.append(f"rank {r.rank} (pid {r.pid}): {said}")
    more = len(off) - len(why)
    if more:
        why.append(f"and {more} more rank{'s' if more > 1 else ''}")
    yield flight_recorder_off.finding(
        "info", "PyTorch's Flight Recorder is off: a hang would not say which collective", tuple(why), FIXES,
        scope="job", pids=tuple(r.pid for r in off if r.pid is not None))
