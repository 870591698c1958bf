"""What a training run needs in GPU memory per rank under plain DDP, with the arithmetic spelled out.

Conventions (stated, because sources differ):
- fp32 training: weights 4 B + gradients 4 B + optimizer state (Adam: two fp32 moments, 8 B; SGD with momentum:
  4 B) per parameter. So fp32 Adam is 16 B/parameter before activations.
- --amp: the mixed-precision convention of the ZeRO paper (Rajbhandari et al. 2020): fp16 weights 2 B + fp16
  gradients 2 B + fp32 master weights 4 B + optimizer state (Adam 8 B, SGD 4 B). Adam is again 16 B/parameter:
  AMP saves activation memory (and time), not parameter state. (PyTorch's autocast keeps fp32 weights and
  gradients and casts per op; its total is the same 16 B plus a transient fp16 copy.)
- Activations: only from a figure the user measured (--activation-gb at --batch B, in fp32); AMP halves it (most
  activations are stored in fp16 under autocast). hwtop does not guess activations from a parameter count.
- Overhead: 1 GiB per GPU for the CUDA context, cuBLAS/cuDNN workspaces and allocator slack.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GIB = 1 << 30
OVERHEAD_BYTES = GIB
OPTIMIZER_BYTES = {"adam": 8, "sgd": 4}


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    bytes: float
    arithmetic: str


@dataclass(slots=True)
class FitEstimate:
    params: float
    optimizer: str
    amp: bool
    batch: int | None
    activation_gb: float | None
    gpu_count: int
    gpu_memory_bytes: int | None  # the smallest GPU's
    ram_bytes: int | None
    lines: list[Line] = field(default_factory=list)
    total_bytes: float = 0.0
    fits: bool | None = None
    ram_need_bytes: float = 0.0
    changes: list[str] = field(default_factory=list)

    @property
    def bytes_per_param(self) -> int:
        return (2 + 2 + 4 if self.amp else 4 + 4) + OPTIMIZER_BYTES[self.optimizer]


def _gib(value: float) -> str:
    return f"{value / GIB:.2f} GiB"


def estimate(params: float, optimizer: str = "adam", amp: bool = False, batch: int | None = None,
             activation_gb: float | None = None, gpu_count: int = 1, gpu_memory_bytes: int | None = None,
             ram_bytes: int | None = None) -> FitEstimate:
    if params <= 0:
        raise ValueError("--params must be more than 0")
    if optimizer not in OPTIMIZER_BYTES:
        raise ValueError(f"unknown optimizer {optimizer!r}; valid: {', '.join(OPTIMIZER_BYTES)}")
    fit = FitEstimate(params, optimizer, amp, batch, activation_gb, max(1, gpu_count), gpu_memory_bytes, ram_bytes)
    p = params
    opt = OPTIMIZER_BYTES[optimizer]
    opt_name = "Adam moments m, v (2 x 4 B)" if optimizer == "adam" else "SGD momentum (4 B)"
    if amp:
        fit.lines += [Line("weights, fp16", 2 * p, f"{p:.3g} x 2 B"),
                      Line("gradients, fp16", 2 * p, f"{p:.3g} x 2 B"),
                      Line("master weights, fp32", 4 * p, f"{p:.3g} x 4 B")]
    else:
        fit.lines += [Line("weights, fp32", 4 * p, f"{p:.3g} x 4 B"),
                      Line("gradients, fp32", 4 * p, f"{p:.3g} x 4 B")]
    fit.lines.append(Line(f"optimizer: {opt_name}", opt * p, f"{p:.3g} x {opt} B"))
    activations = _activations(activation_gb, amp)
    if activations is not None:
        how = f"{activation_gb:g} GB measured at batch {batch or '?'}" + (" x 0.5 (fp16 under AMP)" if amp else "")
        fit.lines.append(Line("activations", activations, how))
    fit.lines.append(Line("CUDA context and workspaces", OVERHEAD_BYTES, "1 GiB (convention)"))
    fit.total_bytes = sum(line.bytes for line in fit.lines)
    if gpu_memory_bytes:
        fit.fits = fit.total_bytes <= gpu_memory_bytes
    fit.ram_need_bytes = fit.gpu_count * 4 * p  # every rank loads an fp32 checkpoint into host memory
    if fit.fits is False:
        fit.changes = _changes(fit, activations)
    return fit


def _activations(activation_gb: float | None, amp: bool) -> float | None:
    if activation_gb is None:
        return None
    return activation_gb * 1e9 * (0.5 if amp else 1.0)


def _changes(fit: FitEstimate, activations: float | None) -> list[str]:
    """What would make it fit, each with its new per-GPU figure where it can be computed."""
    assert fit.gpu_memory_bytes
    limit = fit.gpu_memory_bytes
    states = fit.params * fit.bytes_per_param
    fixed = OVERHEAD_BYTES
    out = []
    if activations is not None:
        if not fit.amp:
            total = fit.total_bytes - activations / 2
            out.append(f"AMP (--amp): activations halve → {_gib(total)} per GPU"
                       + (" (fits)" if total <= limit else ""))
        if fit.batch and fit.batch > 1:
            room = limit - states - fixed
            halvings = 0
            act = activations
            while act > max(room, 0) and halvings < 10 and fit.batch >> (halvings + 1) >= 1:
                halvings += 1
                act /= 2
            if act <= room:
                micro = fit.batch >> halvings
                out.append(f"batch {micro} with gradient accumulation of {1 << halvings} (same effective batch "
                           f"{fit.batch}) → {_gib(states + fixed + act)} per GPU")
            else:
                out.append("a smaller batch alone cannot fit: the parameter state is too large")
        out.append("activation checkpointing (torch.utils.checkpoint): keeps only block inputs, recomputes the "
                   "rest in backward (about a third more compute)")
    if fit.gpu_count > 1:
        n = fit.gpu_count
        weights_grads = fit.params * (4 if fit.amp else 8)
        opt_state = states - weights_grads
        zero1 = weights_grads + opt_state / n + fixed + (activations or 0)
        fsdp = states / n + fixed + (activations or 0)
        out.append(f"ZeRO-1 (torch.distributed.optim.ZeroRedundancyOptimizer): optimizer state split over {n} GPUs → "
                   f"{_gib(zero1)} per GPU" + (" (fits)" if zero1 <= limit else ""))
        out.append(f"FSDP full sharding (ZeRO-3) over {n} GPUs: weights, gradients and optimizer state split → "
                   f"{_gib(fsdp)} per GPU" + (" (fits)" if fsdp <= limit else "")
                   + " (plus the largest layer gathered during its forward/backward)")
    else:
        out.append("one GPU: offload the optimizer state to the CPU (ZeRO-Offload / FSDP CPU offload), or more GPUs "
                   "with FSDP")
    return out
