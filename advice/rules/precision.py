"""amp-available, cudnn-benchmark and amp-overflow: speed and memory left on the table by precision settings.
Only facts hwtop can see: the embedded job's own configuration, or Hopper's GPM tensor-core activity."""

from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.registry import rule
from hwtop.advice.text import job_name
from hwtop.advice.thresholds import Threshold, Thresholds
from hwtop.advice.window import Window, compute_pids, empty_job_config, mean, workload_running
from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpuSnapshot, Snapshot
from hwtop.probes.gpu_caps import capabilities


def _precision_fixes(capability: tuple[int, int]) -> tuple[str, ...]:
    if capability >= (8, 0):
        return ("torch.autocast('cuda', dtype=torch.bfloat16) around forward and loss: bf16 keeps fp32's range, "
                "no GradScaler needed.",
                "TF32 for the matmuls left in fp32: torch.backends.cuda.matmul.allow_tf32 = True (or "
                "torch.set_float32_matmul_precision('high')); cuDNN convolutions use TF32 by default.")
    return ("torch.autocast('cuda', dtype=torch.float16) with torch.amp.GradScaler('cuda') (this card has "
            "fp16 Tensor Cores but no bf16 or TF32).",)


def _precision_cause(what: str, capability: tuple[int, int]) -> str:
    """GPUs whose fix is the same precision (bf16 from Ampere on, fp16 before) share one finding."""
    return f"{what}, {'bf16' if capability >= (8, 0) else 'fp16'} available"


def _job_gpus(snapshot: Snapshot) -> list[GpuSnapshot]:
    workload = snapshot.workload
    pids = set(workload.pids) if workload else set()
    mine = [g for g in snapshot.gpus if set(compute_pids(g)) & pids]
    return mine or list(snapshot.gpus)


@rule("amp-available", severity="info", hold_s=10, clear_s=10, order=100,
      watches="precision of the job against Tensor Core support", reads=("gpu_waiting_util_percent",))
def amp_available(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    if _trains_in_fp32(latest):
        for gpu in _job_gpus(latest):
            capability = _tensor_capability(gpu)
            if capability is not None:
                yield _fp32_finding(latest, gpu, capability)
        return
    for gpu in latest.gpus:  # any job: Hopper's GPM says whether Tensor Cores do any of the work
        capability = _tensor_capability(gpu)
        if gpu.gpm is None or capability is None:
            continue
        sm, tensor = _gpm_activity(window, gpu.index)
        if sm is None or tensor is None or sm < t["gpu_waiting_util_percent"] or tensor >= 1.0:
            continue
        yield amp_available.finding(
            "info", f"GPU{gpu.index} busy without its Tensor Cores",
            (f"GPU{gpu.index} SMs {sm:.0f}% active, Tensor Cores {tensor:.1f}% (GPM, last 10 s): the matmuls run "
             "in plain fp32",),
            _precision_fixes(capability), scope=f"GPU{gpu.index}", gpus=(gpu.index,), pids=compute_pids(gpu),
            cause=_precision_cause("Tensor Cores idle", capability), measure=sm - tensor)


def _trains_in_fp32(snapshot: Snapshot) -> bool:
    """The embedded job runs on CUDA with every rank's AMP off (its own configuration says so)."""
    workload = snapshot.workload
    config = workload.config if workload else None
    return workload_running(snapshot) and workload is not None and config is not None and \
        config.device == "cuda" and bool(workload.ranks) and all(r.amp == "off" for r in workload.ranks)


def _tensor_capability(gpu: GpuSnapshot) -> tuple[int, int] | None:
    """The GPU's compute capability where it has Tensor Cores; None where it has none or is not known."""
    capability, caps = gpu.compute_capability, capabilities(gpu.name, gpu.compute_capability)
    return None if capability is None or caps is None or not caps.tensor_cores else capability


def _fp32_finding(snapshot: Snapshot, gpu: GpuSnapshot, capability: tuple[int, int]) -> Finding:
    return amp_available.finding(
        "info", "fp32 training on a GPU with Tensor Cores",
        (f"{job_name(snapshot)} trains in fp32 (amp off) on GPU{gpu.index} {gpu.name}, compute capability "
         f"{capability[0]}.{capability[1]}",),
        _precision_fixes(capability) + ("hwtop's amp-compare scenario measures the saving on this box.",),
        scope=f"GPU{gpu.index}", gpus=(gpu.index,), cause=_precision_cause("fp32", capability))


def _gpm_activity(window: Window, index: int) -> tuple[float | None, float | None]:
    """(SM activity, Tensor Core activity), percent, GPM's means over the last 10 s."""
    recent = window.recent(10.0)
    sm = mean(g.gpm.sm_activity_percent for s in recent for g in s.gpus if g.index == index and g.gpm)
    tensor = mean(g.gpm.tensor_activity_percent for s in recent for g in s.gpus if g.index == index and g.gpm)
    return sm, tensor


@rule("cudnn-benchmark", severity="info", hold_s=5, clear_s=5, order=110, watches="cuDNN autotuning of conv jobs")
def cudnn_benchmark(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    workload = latest.workload
    config = workload.config if workload else None
    if not workload_running(latest) or config is None or config.device != "cuda" or config.model != "convnet" or \
            config.cudnn_benchmark:
        return
    yield cudnn_benchmark.finding(
        "info", "cuDNN autotuning is off for a fixed-shape conv net",
        (f"{job_name(latest)} trains a conv net on fixed 224x224 inputs with torch.backends.cudnn.benchmark = False",),
        ("torch.backends.cudnn.benchmark = True: cuDNN times its convolution algorithms once per input shape and "
         "keeps the fastest.",
         "Leave it off when input shapes change every batch (variable-length inputs): it would re-tune each time."),
        scope="job", gpus=tuple(g.index for g in _job_gpus(latest)))


@rule("amp-overflow", hold_s=0, clear_s=30, order=120, watches="GradScaler scale drops", thresholds={
    "scale_drops": Threshold(3, "drops", "GradScaler halves its scale on each inf/NaN step; a few drops at the "
                                         "start are normal calibration, 3 within the window are not"),
    "scale_warmup_steps": Threshold(20, "steps", "the scaler starts at 2^16 and halves until it fits the "
                                                "gradients: drops in the first steps are expected")})
def amp_overflow(window: Window, t: Thresholds) -> Iterator[Finding]:
    workload = window.latest.workload
    for rank in workload.ranks if workload else ():
        scales = rank.scales
        first_step = (rank.step or len(scales)) - len(scales) + 1  # the step of scales[0]
        drops = sum(1 for k, (a, b) in enumerate(zip(scales, scales[1:], strict=False))
                    if b < a and first_step + k + 1 > t["scale_warmup_steps"])
        if drops < t["scale_drops"]:
            continue
        yield amp_overflow.finding(
            "warning", f"rank {rank.rank}: fp16 gradients overflow",
            (f"rank {rank.rank} GradScaler scale fell {drops} times in its last {len(scales)} steps "
             f"({max(scales):g} → {scales[-1]:g}): those steps had inf/NaN gradients and were skipped",),
            ("Check the loss for inf/NaN (torch.isfinite(loss)); a too-high learning rate or an exp/log/div in "
             "fp16 overflows.",
             "Call scaler.unscale_(optimizer) before torch.nn.utils.clip_grad_norm_.",
             "On Ampere or newer, bf16 autocast has fp32's range and needs no scaler."),
            scope=f"rank {rank.rank}", pids=(rank.pid,) if rank.pid else (), cause="fp16 overflow", measure=drops)


@rule("training-diverged", severity="critical", hold_s=0, clear_s=60, order=150,
      watches="NaN/inf losses and gradients of the job")
def training_diverged(window: Window, t: Thresholds) -> Iterator[Finding]:
    """NaN/inf losses or gradients in the embedded job: data the user needs, never a crash of the job."""
    workload = window.latest.workload
    last = workload.last_nonfinite if workload else None
    if workload is None or last is None or not workload.nonfinite_steps:
        return
    config = workload.config or empty_job_config()
    stopped = last.stopped
    step, rank = ("?" if value is None else value for value in (last.step, last.rank))
    evidence = [f"{workload.nonfinite_steps} step(s) with a NaN/inf loss or gradient; the latest at step {step} "
                f"on rank {rank}",
                "the run stopped there (--on-nonfinite stop)" if stopped else
                "each such step was skipped (no optimizer update), as AMP's GradScaler skips one"]
    if config.amp == "fp16":
        evidence.append("fp16 autocast: values beyond ±65504 overflow to inf")
    yield training_diverged.finding(
        "critical" if stopped else "warning", "Training produced NaN/inf values",
        tuple(evidence),
        (f"Lower the learning rate (now {config.lr if config.lr is not None else '?'}) or add warm-up; clip "
         "gradients with torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).",
         "Under fp16 use bf16 where the GPU has it (its range is fp32's), or keep GradScaler on.",
         "torch.autograd.set_detect_anomaly(True) for one run names the operation that made the first NaN."),
        scope=f"rank {rank}")
