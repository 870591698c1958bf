"""An ordinary DDP training job on CPU (gloo), launched as users launch it:

    torchrun --nproc-per-node 2 ddp_straggler.py [--slow-rank 1]

A small MLP on synthetic data, each rank on its own shard. `--slow-rank N` (or SLOW_RANK=N) makes rank N do
~60 ms of extra pure-Python work per step (a per-sample augmentation written in Python, say), so every other
rank waits for it inside `loss.backward()`, where DDP all-reduces the gradients. No hwtop imports, no hooks."""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from training import Progress  # tests/jobs/training.py, beside this script


def python_augmentation(seconds: float) -> float:
    """Busy pure-Python work, as a slow transform written in Python is."""
    deadline = time.perf_counter() + seconds
    total = 0.0
    while time.perf_counter() < deadline:
        for i in range(1000):
            total += (i * 0.5) ** 0.5
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow-rank", type=int, default=int(os.environ.get("SLOW_RANK", "-1")))
    parser.add_argument("--extra-ms", type=float, default=60.0)
    parser.add_argument("--time-limit", type=float, default=60.0, help="stop after this many seconds")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    generator = torch.Generator().manual_seed(rank)
    x = torch.randn(4096, 256, generator=generator)
    y = (x.sum(dim=1) > 0).long()
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                                  nn.Linear(512, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    progress = Progress(args.time_limit, show=rank == 0)
    while True:
        index = torch.randint(0, len(x), (args.batch_size,), generator=generator)
        batch, target = x[index], y[index]
        if rank == args.slow_rank:
            python_augmentation(args.extra_ms / 1000.0)
        optimizer.zero_grad()
        loss = loss_fn(model(batch), target)
        loss.backward()
        optimizer.step()
        past = progress.stepped(loss)
        if progress.step % 10 == 0:  # every rank stops at the same step, or the others would wait for it forever
            stop = torch.tensor([float(past)])
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
