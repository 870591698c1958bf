"""Samples fetched one by one from a slow store (an object store, a network file system: a few milliseconds of
waiting per read, next to no CPU), with one DataLoader worker: the worker spends its time waiting on reads, the
training step waits for the worker, and the cores idle. --num-workers N is the fix. Ordinary user code. The store
holds as many records as such stores do, more than a test watches in one epoch: an epoch's first batch waits for
a whole read whatever the workers, which a few-second epoch would make a share of every step. The model is wide
enough that its step is mostly arithmetic (tens of milliseconds on 2 cores), as a real model's is: with a tiny one
(--hidden 512) the step is a millisecond or two of Python and thread wake-ups, which a starved loop spends 2-5x
over, and feeding it takes more workers than hwtop names for a rank."""

import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import arguments, fit  # tests/jobs/training.py, beside this script


class RemoteSamples(Dataset):
    def __init__(self, size: int, features: int, read_ms: float) -> None:
        self.size, self.features = size, features
        self.read_s = read_ms / 1000.0

    def __len__(self) -> int:
        return self.size

    def fetch(self, index: int) -> torch.Tensor:
        time.sleep(self.read_s)  # the request's round trip
        return torch.randn(self.features, generator=torch.Generator().manual_seed(index))  # the record it returns

    def __getitem__(self, index: int):
        return self.fetch(index), index % 10


def main() -> None:
    parser = arguments()
    parser.add_argument("--num-workers", type=int, default=1)
    parser.add_argument("--read-ms", type=float, default=20.0)
    parser.add_argument("--records", type=int, default=1 << 20)
    parser.add_argument("--hidden", type=int, default=8192)
    args = parser.parse_args()

    loader = DataLoader(RemoteSamples(args.records, 1024, args.read_ms), batch_size=16, shuffle=True,
                        num_workers=args.num_workers, persistent_workers=True)
    model = nn.Sequential(nn.Linear(1024, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    fit(loader, model, optimizer, nn.CrossEntropyLoss(), args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
