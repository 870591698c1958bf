"""An ordinary DDP training job on CPU (gloo), launched as users launch it:

    TORCH_FR_BUFFER_SIZE=2000 torchrun --nproc-per-node 3 ddp_hang.py [--hang-rank 1] [--wait-ms 150]

A small MLP on synthetic data, each rank on its own shard, read by `next_batch`. `--hang-rank N` makes rank N's
read block forever at step `--hang-step` (a read from a dead network mount, a lock its reader never gets
back): it never reaches the gradient all-reduce of that step, which the other ranks launch and wait in forever.
`--wait-ms W` makes every rank wait W ms a step after its optimizer step, as a rank whose GPU does the work waits
in torch.cuda.synchronize(): a healthy job whose main threads spend most of each step waiting. No hwtop imports,
no hooks."""

import argparse
import threading
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from training import Progress  # tests/jobs/training.py, beside this script

DEAD_MOUNT = threading.Lock()  # taken at start-up by the "mount" that never answers again


class Shard:
    def __init__(self, rank: int, hang_at: int | None) -> None:
        generator = torch.Generator().manual_seed(rank)
        self.x = torch.randn(4096, 64, generator=generator)
        self.y = (self.x.sum(dim=1) > 0).long()
        self.generator = generator
        self.hang_at = hang_at
        self.reads = 0

    def next_batch(self, size: int):
        self.reads += 1
        if self.reads == self.hang_at:
            DEAD_MOUNT.acquire()  # the read that never returns
        index = torch.randint(0, len(self.x), (size,), generator=self.generator)
        return self.x[index], self.y[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-step", type=int, default=20, help="the step whose batch never comes")
    parser.add_argument("--wait-ms", type=float, default=0.0, help="a wait per step, as for a GPU's work")
    parser.add_argument("--time-limit", type=float, default=120.0, help="stop after this many seconds")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    DEAD_MOUNT.acquire()
    shard = Shard(rank, args.hang_step if rank == args.hang_rank else None)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    progress = Progress(args.time_limit, show=rank == 0)
    while True:
        batch, target = shard.next_batch(args.batch_size)
        optimizer.zero_grad()
        loss = loss_fn(model(batch), target)
        loss.backward()
        optimizer.step()
        if args.wait_ms:
            time.sleep(args.wait_ms / 1000.0)  # the GPU's share of the step, waited for
        past = progress.stepped(loss)
        if progress.step % 10 == 0:  # every rank stops at the same step, or the others would wait for it forever
            stop = torch.tensor([float(past)])
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
