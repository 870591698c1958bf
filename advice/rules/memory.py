"""cuda-oom and host-memory-pressure: device memory exhausted, host memory squeezed."""

from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.registry import rule
from hwtop.advice.text import command, gib
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, gpus_in_use, workload_running
from hwtop.model.finding import Finding

OOM_SHOWN_S = 120.0  # an OOM event stays a finding this long after it happened


def _fragmentation(window: Window, t: Thresholds) -> list[str]:
    """Evidence that the caching allocator holds far more than the tensors use (the embedded job reports both)."""
    out = []
    workload = window.latest.workload
    for rank in workload.ranks if workload else ():
        allocated, reserved = rank.cuda_allocated_bytes, rank.cuda_reserved_bytes
        if allocated and reserved and reserved >= t["fragmentation_ratio"] * allocated and \
                reserved - allocated >= t["fragmentation_min_bytes"]:
            out.append(f"rank {rank.rank}: reserved {gib(reserved)} is {reserved / allocated:.1f}x the "
                       f"{gib(allocated)} allocated")
    return out


def _oom_fixes(batch: int | None, fragmented: bool) -> tuple[str, ...]:
    start = f"from {batch}" if batch else "start from 32"
    fixes = [
        f"Halve the batch size ({start}, then halve again) until a step fits.",
        "Keep the effective batch with gradient accumulation: divide the loss by K and call optimizer.step() "
        "every K micro-batches.",
        "Enable AMP: torch.autocast('cuda', dtype=torch.bfloat16) (fp16 + torch.amp.GradScaler before Ampere) "
        "keeps activations in half precision.",
        "Activation checkpointing (torch.utils.checkpoint.checkpoint on the large blocks) trades recompute for "
        "activation memory.",
    ]
    if fragmented:
        fixes.append("Fragmentation: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so freed blocks can "
                     "grow into the next, larger request.")
    fixes.append("torch.cuda.empty_cache() only as a last resort: it hands cached blocks back to the driver "
                 "(for other processes), not to your next allocation, and makes the next steps re-allocate.")
    return tuple(fixes)


# Events (an OOM, a lost GPU, an uncorrectable error) show at once; levels need a few seconds.
@rule("cuda-oom", severity="critical", hold_s=0, clear_s=10, order=10, watches="GPU memory and OOM events",
      reads=("fragmentation_min_bytes", "fragmentation_ratio", "gpu_memory_full_percent"))
def cuda_oom(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    fragmentation = _fragmentation(window, t)
    workload = latest.workload
    oom = workload.last_oom if workload else None
    if workload and oom and latest.time - (oom.time if oom.time is not None else latest.time) <= OOM_SHOWN_S:
        batch, largest = oom.batch_size, oom.largest_fit
        evidence = [f"rank {oom.rank if oom.rank is not None else '?'} ran out of device memory at batch "
                    f"{batch if batch is not None else '?'}"
                    + (f"; batch {largest} was the largest that fit" if largest else ""),
                    f"{workload.oom_count} OOM event(s) in this job"]
        if oom.message:
            evidence.append(oom.message[:160])
        yield cuda_oom.finding("critical", "CUDA out of memory", tuple(evidence + fragmentation),
                               _oom_fixes(largest or batch, bool(fragmentation)), scope="job", pids=workload.pids)
    for gpu in latest.gpus:
        total, used = gpu.memory_total_bytes, gpu.memory_used_bytes
        if gpu.lost or not total or used is None:
            continue
        share = 100.0 * used / total
        if share >= t["gpu_memory_full_percent"]:
            users = sorted(gpu.processes, key=lambda p: p.used_memory_bytes or 0, reverse=True)[:2]
            evidence = [f"GPU{gpu.index} memory {gib(used)} of {gib(total)} used ({share:.1f}%, limit "
                        f"{t['gpu_memory_full_percent']:.0f}%)"]
            evidence += [f"pid {p.pid} {command(p.command or '?', p.command, 40)} holds {gib(p.used_memory_bytes)}"
                         for p in users if p.used_memory_bytes]
            yield cuda_oom.finding("warning", f"GPU{gpu.index} memory nearly full", tuple(evidence + fragmentation),
                                   _oom_fixes(None, bool(fragmentation)), scope=f"GPU{gpu.index}", gpus=(gpu.index,),
                                   cause="memory nearly full", measure=share)


@rule("host-memory-pressure", hold_s=5, clear_s=15, order=80, watches="available RAM and swap growth",
      reads=("memory_available_percent", "swap_growth_bytes"))
def host_memory_pressure(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    memory = latest.memory
    if memory is None or not memory.total_bytes:
        return
    evidence = []
    available = 100.0 * memory.available_bytes / memory.total_bytes
    if available < t["memory_available_percent"]:
        evidence.append(f"available RAM {gib(memory.available_bytes)} of {gib(memory.total_bytes)} "
                        f"({available:.1f}%, limit {t['memory_available_percent']:.0f}%)")
    training = workload_running(latest) or bool(gpus_in_use(latest))
    swaps = [s.memory.swap_used_bytes for s in window.snapshots if s.memory is not None]
    growth = swaps[-1] - min(swaps) if swaps else 0
    if training and growth >= t["swap_growth_bytes"]:
        span = latest.time - window.snapshots[0].time
        evidence.append(f"swap used grew by {gib(growth)} in the last {span:.0f} s while training "
                        f"(now {gib(memory.swap_used_bytes)})")
    if not evidence:
        return
    biggest = sorted((p for p in latest.processes if p.rss_bytes), key=lambda p: p.rss_bytes or 0, reverse=True)[:3]
    evidence += [f"pid {p.pid} {command(p.name, p.cmdline, 40)} RSS {gib(p.rss_bytes)}" for p in biggest]
    yield host_memory_pressure.finding(
        "warning", "Host memory pressure", tuple(evidence),
        ("Fewer DataLoader workers: each holds its own copy of the dataset object and prefetch_factor x batch "
         "samples.",
         "A smaller prefetch_factor (default 2 batches per worker).",
         "Share the dataset instead of copying it per worker: numpy.memmap / torch.from_file, or tensors in "
         "shared memory rather than Python lists (refcounts copy-on-write the pages).",
         "Swap does not relieve GPU memory (CUDA allocations never go to swap): it only slows the host."),
        pids=tuple(p.pid for p in biggest))
