"""Samples fetched one by one from a slow store (an object store, a network file system: a few milliseconds of
waiting per read, next to no CPU), with one DataLoader worker: the worker spends its time waiting on reads, the
training step waits for the worker, and the cores idle. --num-workers N is the fix. Ordinary user code."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class RemoteSamples(Dataset):
    def __init__(self, size: int, features: int, read_ms: float) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(size, features, generator=generator)
        self.y = torch.randint(0, 10, (size,), generator=generator)
        self.read_s = read_ms / 1000.0

    def __len__(self) -> int:
        return len(self.x)

    def fetch(self, index: int) -> torch.Tensor:
        time.sleep(self.read_s)  # the request's round trip
        return self.x[index]

    def __getitem__(self, index: int):
        return self.fetch(index), self.y[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--read-ms", type=float, default=20.0)
    args = parser.parse_args()

    loader = DataLoader(RemoteSamples(4096, 1024, args.read_ms), batch_size=16, shuffle=True,
                        num_workers=args.num_workers, persistent_workers=True)
    model = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    start = last = time.time()
    step = last_step = 0
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            now = time.time()
            if now - last >= 2.0 or step == 1:
                print(f"epoch {epoch} step {step} loss {loss.item():.3f} {(step - last_step) / (now - last):.1f} "
                      "steps/s", flush=True)
                last, last_step = now, step
            if now - start > args.time_limit:
                return


if __name__ == "__main__":
    main()
