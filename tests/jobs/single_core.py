"""Image-like samples with a per-sample numpy augmentation done in Dataset.__getitem__, and the DataLoader left at its
default num_workers=0: the main process decodes and augments every sample itself, on one core, while the
model waits. --num-workers N is the fix. Ordinary user code."""

import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import fit  # tests/jobs/training.py, beside this script


class Augmented(Dataset):
    def __init__(self, size: int) -> None:
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 255, (size, 40, 40, 3), dtype=np.uint8)  # HWC, as decoded images are
        self.labels = rng.integers(0, 10, size)
        self.rng = np.random.default_rng(1)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        image = self.images[index].astype(np.float32) / 255.0
        for _ in range(50):  # crop, flip, blur, jitter: a typical numpy augmentation chain, one sample at a time
            top, left = self.rng.integers(0, 8, 2)
            crop = image[top:top + 32, left:left + 32]
            if self.rng.random() < 0.5:
                crop = crop[:, ::-1]
            crop = (crop[:-2, :-2] + crop[1:-1, 1:-1] + crop[2:, 2:]) / 3.0
            crop = (crop - crop.mean()) / (crop.std() + 1e-5)
        tensor = torch.from_numpy(np.ascontiguousarray(np.pad(crop, ((1, 1), (1, 1), (0, 0))).transpose(2, 0, 1)))
        return tensor, int(self.labels[index])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--num-workers", type=int, default=0)
    args = parser.parse_args()

    loader = DataLoader(Augmented(2048), batch_size=32, shuffle=True, num_workers=args.num_workers,
                        persistent_workers=args.num_workers > 0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(8), nn.Flatten(),
                          nn.Linear(16 * 64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    fit(loader, model, optimizer, loss_fn, args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
