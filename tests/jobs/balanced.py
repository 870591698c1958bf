"""A healthy CPU training job: a small MLP on synthetic data, two DataLoader workers that stay alive across
epochs and keep ahead of the model. Written as ordinary user code; hwtop's tests watch it from outside."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import fit  # tests/jobs/training.py, beside this script


class Synthetic(Dataset):
    def __init__(self, size: int, features: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(size, features, generator=generator)
        self.y = (self.x.sum(dim=1) > 0).long()

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int):
        return self.x[index] * 0.5 + 0.1, self.y[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0, help="stop after this many seconds")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-workers", type=int, default=1)
    args = parser.parse_args()

    dataset = Synthetic(8192, 256)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
                        persistent_workers=args.num_workers > 0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    fit(loader, model, optimizer, loss_fn, args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
