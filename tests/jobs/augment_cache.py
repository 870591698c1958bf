"""An image classifier whose Dataset keeps each augmented image in a dict, "so the next epoch is faster". Each
DataLoader worker fills its own copy of the cache, and under the job's memory limit the kernel's OOM killer ends
a worker within seconds; the DataLoader then fails the job. --no-cache is the fix. Ordinary user code."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import arguments, fit  # tests/jobs/training.py, beside this script


class AugmentedImages(Dataset):
    def __init__(self, count: int, cache: bool) -> None:
        self.count = count
        self.cache: dict[int, tuple[torch.Tensor, int]] | None = {} if cache else None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        if self.cache is not None and index in self.cache:
            return self.cache[index]
        image = torch.rand(3, 64, 64, generator=torch.Generator().manual_seed(index))
        image = (image.flip(2) - 0.5) / 0.25  # a flip, then normalised
        item = (image, index % 10)
        if self.cache is not None:
            self.cache[index] = item
        return item


def main() -> None:
    parser = arguments()
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                          nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(AugmentedImages(50_000, cache=not args.no_cache), batch_size=32, shuffle=True,
                        num_workers=2, persistent_workers=True)
    fit(loader, model, optimizer, nn.functional.cross_entropy, args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
