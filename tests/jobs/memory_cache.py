"""A memory-mapped uint8 dataset whose Dataset keeps every decoded (float32) sample in a dict, the "cache it so
the next epoch is fast" pattern. Each DataLoader worker fills its own copy of that cache, four times the size
of the bytes it read, until the job's memory limit squeezes the mapped dataset out of the page cache and every
read faults it back in from disk. --no-cache is the fix. --prepare writes the data file and exits. Ordinary
user code.
"""

import argparse
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import Progress  # tests/jobs/training.py, beside this script

SAMPLE_BYTES = 16384


def prepare(path: str, megabytes: int) -> None:
    block = bytearray(os.urandom(1 << 20))
    with open(path, "wb") as handle:
        for index in range(megabytes):
            block[:8] = index.to_bytes(8, "little")
            handle.write(block)


class MappedSamples(Dataset):
    def __init__(self, path: str, cache: bool) -> None:
        size = os.path.getsize(path)
        self.data = torch.from_file(path, shared=False, size=size, dtype=torch.uint8).view(-1, SAMPLE_BYTES)
        self.cache: dict[int, torch.Tensor] | None = {} if cache else None

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        if self.cache is not None and index in self.cache:
            return self.cache[index]
        sample = self.data[index].float() / 255.0
        if self.cache is not None:
            self.cache[index] = sample
        return sample


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--prepare", type=int, metavar="MB", help="write an MB-megabyte data file and exit")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--num-workers", type=int, default=2)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.data, args.prepare)
        return

    loader = DataLoader(MappedSamples(args.data, cache=not args.no_cache), batch_size=64, shuffle=True,
                        num_workers=args.num_workers, persistent_workers=args.num_workers > 0)
    model = nn.Sequential(nn.Linear(SAMPLE_BYTES, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    progress = Progress(args.time_limit)
    for epoch in range(args.epochs):
        for x in loader:
            optimizer.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            optimizer.step()
            if progress.stepped(loss, epoch):
                return


if __name__ == "__main__":
    main()
