"""The rule registry: each rule's id, its check, how long its condition must hold before it shows (so one odd
sample does not raise it) and how long it must be false before it clears (so the pane does not flicker)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from hwtop.advice.rules.collective import collective_hang
from hwtop.advice.rules.contention import cpu_oversubscribed, job_memory_pressure
from hwtop.advice.rules.growth import memory_growing
from hwtop.advice.rules.health import gpu_errors, gpu_throttled
from hwtop.advice.rules.loader import data_starved, loader_io_bound, single_core_loading, worker_churn
from hwtop.advice.rules.main_loop import work_in_loop
from hwtop.advice.rules.memory import cuda_oom, host_memory_pressure
from hwtop.advice.rules.network import data_from_network, nccl_wrong_transport, network_saturated, nic_far_from_gpu
from hwtop.advice.rules.pipeline import cpu_single_core, gpu_starved, io_bound
from hwtop.advice.rules.placement import numa_misplaced, pcie_degraded, topology_slow_p2p
from hwtop.advice.rules.precision import amp_available, amp_overflow, cudnn_benchmark, training_diverged
from hwtop.advice.rules.straggler import rank_straggler
from hwtop.advice.rules.stuck import loop_stuck, worker_stuck
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding


class Rule(msgspec.Struct, frozen=True):
    id: str
    check: Callable[[Window, Thresholds], Iterable[Finding]]
    hold_s: float
    clear_s: float
    watches: str


RULES: tuple[Rule, ...] = (
    # Events (an OOM, a lost GPU, an uncorrectable error) show at once; levels need a few seconds.
    Rule("cuda-oom", cuda_oom, 0.0, 10.0, "GPU memory and OOM events"),
    Rule("gpu-starved", gpu_starved, 5.0, 10.0, "data wait against GPU utilisation"),
    Rule("cpu-single-core", cpu_single_core, 5.0, 10.0, "per-core load while GPUs wait"),
    Rule("numa-misplaced", numa_misplaced, 2.0, 5.0, "GPU processes' CPU affinity against their GPU's node"),
    Rule("pcie-degraded", pcie_degraded, 5.0, 10.0, "PCIe gen and width of busy GPUs"),
    Rule("topology-slow-p2p", topology_slow_p2p, 5.0, 10.0, "links, models and balance of multi-GPU jobs"),
    Rule("io-bound", io_bound, 5.0, 10.0, "iowait and disk throughput against its class"),
    Rule("host-memory-pressure", host_memory_pressure, 5.0, 15.0, "available RAM and swap growth"),
    Rule("gpu-throttled", gpu_throttled, 5.0, 10.0, "clock event reasons of busy GPUs"),
    Rule("amp-available", amp_available, 10.0, 10.0, "precision of the job against Tensor Core support"),
    Rule("cudnn-benchmark", cudnn_benchmark, 5.0, 5.0, "cuDNN autotuning of conv jobs"),
    Rule("amp-overflow", amp_overflow, 0.0, 30.0, "GradScaler scale drops"),
    Rule("gpu-errors", gpu_errors, 0.0, 60.0, "ECC errors and lost GPUs"),
    # The rule itself waits spin_seconds of flat spinning (or the job's 15 s without a step): no extra hold.
    Rule("collective-hang", collective_hang, 0.0, 10.0, "GPUs busy at idle power, and steps that stop"),
    Rule("training-diverged", training_diverged, 0.0, 60.0, "NaN/inf losses and gradients of the job"),
    # A focused job (--pid/--job), GPU or not: its stacks, its process tree, its share of the box.
    Rule("data-starved", data_starved, 5.0, 10.0, "where the job's ranks spend their time (py-spy samples)"),
    # Workers are re-created between epochs, in bursts: a quiet half minute is not yet a fix.
    Rule("worker-churn", worker_churn, 5.0, 30.0, "DataLoader workers born per minute"),
    Rule("single-core-loading", single_core_loading, 5.0, 10.0, "one thread loading data while cores idle"),
    Rule("cpu-oversubscribed", cpu_oversubscribed, 5.0, 10.0, "the job's runnable threads against its cores"),
    Rule("loader-io-bound", loader_io_bound, 5.0, 10.0, "the job's I/O stalls while its ranks wait for data"),
    Rule("job-memory-pressure", job_memory_pressure, 5.0, 15.0, "memory stalls, major faults and what grows"),
    Rule("rank-straggler", rank_straggler, 5.0, 10.0, "each rank's collective waits against the others'"),
    # The user's own job (issue 47): the stuck rules wait stuck_stack_s themselves, memory-growing its span.
    Rule("worker-stuck", worker_stuck, 0.0, 10.0, "DataLoader workers whose stack stopped while the loop waits"),
    Rule("loop-stuck", loop_stuck, 0.0, 10.0, "main threads whose stack stopped outside the loader"),
    Rule("work-in-loop", work_in_loop, 5.0, 10.0, "the main thread's own Python outside the model and the loader"),
    Rule("memory-growing", memory_growing, 0.0, 30.0, "the job's memory (PSS) climbing steadily"),
    # The network: port rates are averaged over 10 s already.
    Rule("network-saturated", network_saturated, 5.0, 10.0, "ports near their line rate while ranks wait in "
         "collectives"),
    Rule("nccl-wrong-transport", nccl_wrong_transport, 5.0, 10.0, "NCCL's environment and which ports carry a "
         "multi-node job"),
    Rule("nic-far-from-gpu", nic_far_from_gpu, 5.0, 10.0, "the NUMA node of busy ports against the job's GPUs"),
    Rule("data-from-network", data_from_network, 5.0, 10.0, "the mounts of the job's open files while it waits "
         "for data"),
)

RULE_IDS = tuple(rule.id for rule in RULES)
