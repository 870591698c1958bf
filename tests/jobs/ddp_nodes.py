"""An ordinary DDP training script on CPU (gloo), launched with torchrun on one node or several. Each launcher
passes its own options, so one node can be made slower (extra Python work per step, as a costly augmentation
would be) or made to stop before an all-reduce (a rank that never arrives). Written as user code: hwtop's tests
watch it from outside."""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def augment(batch: torch.Tensor, milliseconds: float) -> torch.Tensor:
    """Per-sample Python work, the kind a hand-written transform does."""
    until = time.perf_counter() + milliseconds / 1000
    total = 0.0
    while time.perf_counter() < until:
        total += sum(i * 0.5 for i in range(200))
    return batch + total * 0.0


def wait_for_next_shard() -> None:
    """A rank stuck outside the training loop (a lost file lock, a dead data service)."""
    print(f"rank {os.environ.get('RANK')}: waiting for the next shard", flush=True)
    while True:
        time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0, help="stop after this many seconds")
    parser.add_argument("--slow-ms", type=float, default=0.0, help="extra Python work per step on this node")
    parser.add_argument("--stall-after", type=int, default=0, help="on this node, stop before step N (0: never)")
    parser.add_argument("--stall-rank", type=int, default=-1, help="with --stall-after: only this rank stops")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                                  nn.Linear(512, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    start = last = time.time()
    step = 0
    while True:
        if step % 10 == 0:  # every rank stops at the same step: rank 0's clock decides
            stop = torch.tensor([float(time.time() - start >= args.seconds)])
            dist.broadcast(stop, src=0)
            if stop.item():
                break
        x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
        if args.slow_ms:
            x = augment(x, args.slow_ms)
        if args.stall_after and step + 1 >= args.stall_after and args.stall_rank in (-1, rank):
            wait_for_next_shard()
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        step += 1
        if time.time() - last >= 5.0:
            print(f"rank {rank} (local {os.environ.get('LOCAL_RANK')}) step {step} loss {loss.item():.3f}",
                  flush=True)
            last = time.time()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
