"""Short epochs over a small dataset with two DataLoader workers and no persistent_workers: every epoch forks a
new pair of workers (the common default). --persistent-workers is the fix. Ordinary user code."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import Progress  # tests/jobs/training.py, beside this script


class Features(Dataset):
    def __init__(self, size: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(size, 64, generator=generator)
        self.y = torch.randint(0, 4, (size,), generator=generator)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int):
        return self.x[index], self.y[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--persistent-workers", action="store_true")
    args = parser.parse_args()

    loader = DataLoader(Features(512), batch_size=64, shuffle=True, num_workers=args.num_workers,
                        persistent_workers=args.persistent_workers)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    progress = Progress(args.time_limit)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            progress.stepped(loss, epoch)
        if progress.past():  # at an epoch's end: the next epoch forks its workers again
            return


if __name__ == "__main__":
    main()
