"""Data-parallel training on CPU (DDP over Gloo), launched with torchrun, where each rank sets its thread count
to every core of the machine: `torch.set_num_threads(os.cpu_count())`. With two ranks that is twice as many
compute threads as cores. --threads N is the fix. Ordinary user code.

    python -m torch.distributed.run --nproc-per-node 2 oversubscribed.py [--threads N]
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from training import Progress  # tests/jobs/training.py, beside this script


class Synthetic(Dataset):
    def __init__(self, size: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(size, 512, generator=generator)
        self.y = torch.randint(0, 10, (size,), generator=generator)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int):
        return self.x[index], self.y[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=None, help="compute threads per rank (default: all cores)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dataset = Synthetic(16384)
    loader = DataLoader(dataset, batch_size=256, sampler=DistributedSampler(dataset))
    model = DistributedDataParallel(nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                                  nn.Linear(1024, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    progress = Progress(args.time_limit, show=rank == 0)
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if progress.stepped(loss, epoch):
                dist.destroy_process_group()
                return


if __name__ == "__main__":
    main()
