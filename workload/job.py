"""A real PyTorch DDP/AMP training job that makes bottlenecks appear, reporting JSON lines on stdout.

    python -m hwtop.workload.job --device cpu --world-size 2 --steps 50 --scenario balanced

Each rank writes one JSON object per line (atomic single writes, so ranks never interleave mid-line):
events `started`, `step`, `oom`, `error`, `finished`, and for `amp-compare` a `summary`. Under torchrun it reads
RANK / WORLD_SIZE / LOCAL_RANK; otherwise it spawns --world-size processes itself.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

from hwtop.workload.kinds import KINDS


def emit(record: dict[str, Any]) -> None:
    record.setdefault("time", time.time())
    os.write(1, (json.dumps(record, allow_nan=False, default=str) + "\n").encode())


class ToyMlp(nn.Module):
    """The model of the classic DDP tutorial."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 100), nn.ReLU(), nn.Linear(100, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallConvNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 5, stride=4, padding=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.head = nn.Linear(32 * 16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


class SyntheticImages(Dataset):
    """224x224 images made on the fly with a CPU transform whose cost (ms per sample) is tunable."""

    def __init__(self, length: int, transform_cost_ms: float, seed: int) -> None:
        self.length, self.cost, self.seed = length, transform_cost_ms, seed

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + index)
        image = torch.rand(3, 224, 224, generator=generator)
        end = time.perf_counter() + self.cost / 1000.0
        while time.perf_counter() < end:  # real CPU work, as a decode + augmentation would cost
            image = image.flip(2).mul_(0.999).add_(0.0005)
        label = torch.randint(0, 10, (1,), generator=generator).squeeze(0)
        return image, label


class SyntheticVectors(Dataset):
    def __init__(self, length: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(length, 10, generator=generator)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[index], self.y[index]


def rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _at_least(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high], else the one-line reason."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range ({low} to {high})")
        return value

    return parse


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _positive_float(text: str) -> float:
    if (value := _number(text)) <= 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be more than 0")
    return value


def _non_negative_float(text: str) -> float:
    if (value := _number(text)) < 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be 0 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hwtop workload")  # its errors reach the user as they are
    parser.add_argument("--scenario", dest="kind", choices=list(KINDS), default="balanced")  # the job's kind
    parser.add_argument("--model", choices=["mlp", "convnet"], default="convnet")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--world-size", type=_at_least(1, 64), default=1)
    parser.add_argument("--batch-size", type=_at_least(1, 1 << 16), default=16)
    parser.add_argument("--num-workers", type=_at_least(0, 256), default=None)
    parser.add_argument("--pin-memory", action="store_true")
    parser.add_argument("--amp", choices=["off", "fp16", "bf16"], default="off")
    parser.add_argument("--grad-accum", type=_at_least(1, 1024), default=1)
    parser.add_argument("--cudnn-benchmark", action="store_true")
    parser.add_argument("--steps", type=_at_least(1, 10**9), default=None)
    parser.add_argument("--seconds", type=_positive_float, default=None)
    parser.add_argument("--transform-cost", type=_non_negative_float, default=None, help="ms of CPU work per sample")
    parser.add_argument("--lr", type=_positive_float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--on-nonfinite", choices=["skip", "stop"], default="skip",
                        help="a NaN/inf loss or gradient: skip that step (as AMP's GradScaler does) or stop the run")
    parser.add_argument("--port", type=_at_least(1, 65535), default=None, help="rendezvous port (default: a free one)")
    return parser


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    for key, value in KINDS[args.kind].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.num_workers = 0 if args.num_workers is None else args.num_workers
    args.transform_cost = 0.2 if args.transform_cost is None else args.transform_cost
    if args.steps is None and args.seconds is None:
        args.steps = 50
    return args


class Trainer:
    """One rank's model, optimizer, AMP scaler and loader, made for a run; `step` is one optimizer step."""

    def __init__(self, rank: int, args: argparse.Namespace, amp: str, batch_size: int) -> None:
        self.args, self.amp, self.batch_size = args, amp, batch_size
        torch.manual_seed(args.seed)
        cuda = args.device == "cuda"
        self.device = torch.device("cuda", rank % max(1, torch.cuda.device_count())) if cuda else torch.device("cpu")
        model = (ToyMlp() if args.model == "mlp" else SmallConvNet()).to(self.device)
        self.ddp = DistributedDataParallel(model, device_ids=[self.device.index] if cuda else None)
        self.optimizer = torch.optim.SGD(self.ddp.parameters(), lr=args.lr)
        self.dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(amp)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=amp == "fp16")
        if args.model == "mlp":
            dataset: Dataset = SyntheticVectors(4096, args.seed + rank)
        else:
            dataset = SyntheticImages(100_000, args.transform_cost, args.seed + rank)
        self.loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=args.num_workers,
                                 pin_memory=args.pin_memory and cuda, drop_last=True,
                                 persistent_workers=args.num_workers > 0)
        if cuda:
            torch.backends.cudnn.benchmark = args.cudnn_benchmark
            torch.cuda.reset_peak_memory_stats(self.device)
        self.loss_fn = nn.CrossEntropyLoss()
        self.iterator: Iterator[tuple[torch.Tensor, torch.Tensor]] | None = None

    def start(self) -> None:
        """The loader's iterator (its workers start): the run's clock is running."""
        self.iterator = iter(self.loader)

    def _batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        assert self.iterator is not None, "start() first"
        try:
            return next(self.iterator)
        except StopIteration:
            self.iterator = iter(self.loader)
            return next(self.iterator)

    def step(self) -> tuple[float, float, bool]:
        """One optimizer step over --grad-accum micro-batches: (its loss, seconds waiting for data, whether its
        gradients were finite and it was taken)."""
        accum, device = self.args.grad_accum, self.device
        wait = 0.0
        self.optimizer.zero_grad(set_to_none=True)
        loss = torch.zeros((), device=device)
        for micro in range(accum):
            fetch = time.perf_counter()
            x, y = self._batch()
            wait += time.perf_counter() - fetch
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            sync = self.ddp.no_sync() if micro < accum - 1 else _null()
            with sync, torch.autocast(device.type, dtype=self.dtype, enabled=self.dtype is not None):
                loss = self.loss_fn(self.ddp(x), y) / accum
            self.scaler.scale(loss).backward()
        loss_value = float(loss.detach()) * accum
        # DDP has averaged the gradients, so every rank reaches the same verdict and the ranks stay in step.
        finite = self.amp == "fp16" or _gradients_finite(self.ddp)  # fp16: GradScaler skips such steps itself
        if finite:
            self.scaler.step(self.optimizer)
        else:
            self.optimizer.zero_grad(set_to_none=True)  # a NaN/inf gradient is skipped, as GradScaler skips one
        self.scaler.update()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return loss_value, wait, finite

    def memory(self) -> dict[str, int]:
        """The CUDA allocator's figures (none on a CPU)."""
        if self.device.type != "cuda":
            return {}
        return {"cuda_allocated_bytes": torch.cuda.memory_allocated(self.device),
                "cuda_reserved_bytes": torch.cuda.memory_reserved(self.device),
                "cuda_peak_bytes": torch.cuda.max_memory_allocated(self.device)}

    def checksum(self) -> float | None:
        total = float(sum(p.detach().double().sum() for p in self.ddp.parameters()))
        return total if math.isfinite(total) else None


class Tally:
    """A run's figures, step by step: the first step pays for worker start-up and is not the steady state."""

    def __init__(self, steps: int | None) -> None:
        self.steps, self.step = steps, 0
        self.total_wait = self.total_time = 0.0
        self.losses: list[float] = []
        self.nonfinite_steps = self.peak_rss = 0

    def add(self, loss: float, wait: float, elapsed: float, finite: bool, rss: int) -> None:
        self.step += 1
        if self.step > 1 or self.steps == 1:
            self.total_wait += wait
            self.total_time += elapsed
        if math.isfinite(loss):
            self.losses.append(loss)
        self.nonfinite_steps += not finite
        self.peak_rss = max(self.peak_rss, rss)

    def summary(self, samples_per_step: int) -> dict[str, Any]:
        measured = self.step - 1 if self.step > 1 else self.step
        seconds = self.total_time
        return {"steps": self.step, "nonfinite_steps": self.nonfinite_steps,
                "data_wait_fraction": self.total_wait / seconds if seconds else None,
                "samples_per_s": measured * samples_per_step / seconds if seconds else None,
                "first_loss": self.losses[0] if self.losses else None,
                "last_loss": self.losses[-1] if self.losses else None, "peak_rss_bytes": self.peak_rss}


def train(rank: int, world: int, args: argparse.Namespace, amp: str, batch_size: int, steps: int | None,
          phase: str | None = None) -> dict[str, Any]:
    """One training run on this rank; returns its summary. Raises torch.OutOfMemoryError upward."""
    trainer = Trainer(rank, args, amp, batch_size)
    tally = Tally(steps)
    started = time.perf_counter()
    trainer.start()
    samples_per_step = batch_size * args.grad_accum
    while (steps is None or tally.step < steps) and \
            (args.seconds is None or time.perf_counter() - started < args.seconds):
        step_start = time.perf_counter()
        loss, wait, finite = trainer.step()
        elapsed = time.perf_counter() - step_start
        rss = rss_bytes() or 0
        tally.add(loss, wait, elapsed, finite, rss)
        emit({"event": "step", "rank": rank, "world_size": world, "step": tally.step, "step_time_s": elapsed,
              "data_wait_s": wait, "data_wait_fraction": wait / elapsed if elapsed else None,
              "samples_per_s": samples_per_step / elapsed if elapsed else None,
              "loss": loss if math.isfinite(loss) else None, "loss_finite": math.isfinite(loss),
              "step_skipped": not finite, "amp": amp,
              "scale": trainer.scaler.get_scale() if amp == "fp16" else None,
              "batch_size": batch_size, "rss_bytes": rss, "phase": phase, **trainer.memory()})
        if not finite and args.on_nonfinite == "stop":
            emit({"event": "diverged", "rank": rank, "step": tally.step, "loss": loss if math.isfinite(loss)
                  else None, "message": f"non-finite gradients at step {tally.step}: training stopped "
                  "(--on-nonfinite stop)"})
            break
    cuda_peak = torch.cuda.max_memory_allocated(trainer.device) if trainer.device.type == "cuda" else None
    return {**tally.summary(samples_per_step), "param_checksum": trainer.checksum(), "cuda_peak_bytes": cuda_peak}


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def free_port() -> int:
    """A loopback port nobody holds now (a fixed default collides with another job on the box)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _gradients_finite(model: nn.Module) -> bool:
    grads = [p.grad.detach().norm() for p in model.parameters() if p.grad is not None]
    return bool(torch.isfinite(torch.stack(grads)).all()) if grads else True


def cpu_threads(local_ranks: int, workers: int) -> int:
    """A CPU rank's intra-op threads, as hwtop's own cpu-oversubscribed fix counts them: ranks x threads + the
    DataLoader workers near the usable cores (torch's default, a thread a core in every rank, oversubscribed the
    balanced job on 2 cores: 3.1 CPUs wanted, 41% of it queued)."""
    return max(1, len(os.sched_getaffinity(0)) // max(1, local_ranks) - workers)


def run_rank(rank: int, world: int, args: argparse.Namespace) -> None:
    backend = "nccl" if args.device == "cuda" else "gloo"
    if args.device == "cpu" and "OMP_NUM_THREADS" not in os.environ:  # a user's own setting wins
        torch.set_num_threads(cpu_threads(int(os.environ.get("LOCAL_WORLD_SIZE", world)), args.num_workers))
    if "MASTER_ADDR" not in os.environ:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(args.port or free_port())
    dist.init_process_group(backend, rank=rank, world_size=world)
    emit({"event": "started", "rank": rank, "world_size": world, "pid": os.getpid(), "scenario": args.kind,
          "device": args.device, "backend": backend, "amp": args.amp, "batch_size": args.batch_size,
          "num_workers": args.num_workers, "transform_cost_ms": args.transform_cost, "model": args.model,
          "pin_memory": args.pin_memory, "cudnn_benchmark": args.cudnn_benchmark, "grad_accum": args.grad_accum,
          "on_nonfinite": args.on_nonfinite, "lr": args.lr})
    try:
        if args.kind == "amp-compare":
            low = "bf16" if args.device == "cpu" else "fp16"
            fp32 = train(rank, world, args, "off", args.batch_size, args.steps, phase="fp32")
            mixed = train(rank, world, args, low, args.batch_size, args.steps, phase=low)
            # On CUDA each phase has its own peak (reset per run); on CPU the process RSS only grows, so the
            # second phase's peak says nothing about its own need: no saving is claimed there.
            key = "cuda_peak_bytes" if args.device == "cuda" else None
            emit({"event": "summary", "rank": rank, "scenario": "amp-compare", "fp32": fp32, low: mixed,
                  "memory_metric": key or "none on CPU (process RSS is not per phase)",
                  "memory_saving_fraction": (1 - mixed[key] / fp32[key]) if key and fp32[key] else None,
                  "speedup": (mixed["samples_per_s"] / fp32["samples_per_s"]) if fp32["samples_per_s"] else None})
            summary = mixed
        elif args.kind == "oom-ramp":
            summary = oom_ramp(rank, world, args)
        else:
            summary = train(rank, world, args, args.amp, args.batch_size, args.steps)
        emit({"event": "finished", "rank": rank, **summary})
    except torch.OutOfMemoryError as error:
        emit({"event": "oom", "rank": rank, "batch_size": args.batch_size, "message": str(error)[:500]})
    except (dist.DistBackendError, RuntimeError) as error:
        emit({"event": "error", "rank": rank, "message": f"{type(error).__name__}: {str(error)[:500]}"})
        raise SystemExit(3) from None
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def oom_ramp(rank: int, world: int, args: argparse.Namespace) -> dict[str, Any]:
    """Double the batch until the device runs out of memory; report the largest that fit."""
    batch, largest = args.batch_size, None
    while batch <= 1 << 16:
        try:
            train(rank, world, args, args.amp, batch, 2, phase=f"batch {batch}")
            largest = batch
            batch *= 2
        except torch.OutOfMemoryError as error:
            emit({"event": "oom", "rank": rank, "batch_size": batch, "largest_fit": largest,
                  "message": str(error)[:300]})
            if args.device == "cuda":
                torch.cuda.empty_cache()
            break
    return {"largest_batch_that_fit": largest}


def main(argv: list[str] | None = None) -> int:
    args = resolve(build_parser().parse_args(argv))
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        run_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return 0
    if args.world_size == 1:
        run_rank(0, 1, args)
        return 0
    return spawn_ranks(args)


def spawn_ranks(args: argparse.Namespace) -> int:
    """One process per rank, each started with RANK / LOCAL_RANK / WORLD_SIZE in its environment as torchrun
    starts them (so a monitor can tell ranks from /proc/PID/environ). A rank that fails stops the others."""
    context = mp.get_context("spawn")
    world = args.world_size
    if "MASTER_ADDR" not in os.environ:  # one rendezvous port for every rank, chosen free now
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(args.port or free_port())
    processes = []
    for rank in range(world):
        os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world))
        process = context.Process(target=run_rank, args=(rank, world, args), name=f"rank{rank}")
        process.start()
        processes.append(process)
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        os.environ.pop(key, None)
    failed = None
    while failed is None and any(p.is_alive() for p in processes):
        for rank, process in enumerate(processes):
            process.join(0.2)
            if process.exitcode not in (None, 0):
                failed = (rank, process)
                break
    if failed is None:
        return 0
    rank, process = failed
    print(f"rank {rank} (pid {process.pid}) terminated with exit code {process.exitcode}", file=sys.stderr, flush=True)
    for other in processes:
        if other.is_alive():
            other.terminate()
    for other in processes:
        other.join(5)
        if other.is_alive():
            other.kill()
    return process.exitcode if process.exitcode and process.exitcode > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
