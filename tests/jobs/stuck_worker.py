"""A Dataset that reads each sample under a lock shared with a background "prefetcher" thread, as a decoder
library or a client of a network store does. One sample's read takes the lock and never gives it back (the
library's bug, a dead mount): the DataLoader worker that asked for it blocks forever, the training loop waits for
that batch, the other worker idles. --no-hang is the healthy twin. Ordinary user code."""

import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import Progress, arguments, train_step  # tests/jobs/training.py, beside this script

STORE_LOCK = threading.Lock()


class Store(Dataset):
    def __init__(self, size: int, features: int, bad_index: int | None) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(size, features, generator=generator)
        self.y = (self.x.sum(dim=1) > 0).long()
        self.bad_index = bad_index

    def __len__(self) -> int:
        return len(self.x)

    def read(self, index: int) -> torch.Tensor:
        STORE_LOCK.acquire()
        if index == self.bad_index:
            return self.x[index]  # an early return that forgets to release the lock
        STORE_LOCK.release()
        return self.x[index]

    def __getitem__(self, index: int):
        if index == self.bad_index:
            self.read(index)  # the read that keeps the lock...
        return self.read(index) * 0.5, self.y[index]  # ...and every read after it blocks here


def main() -> None:
    parser = arguments()
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--no-hang", action="store_true")
    args = parser.parse_args()

    dataset = Store(4096, 64, None if args.no_hang else 100)  # in the second batch
    loader = DataLoader(dataset, batch_size=64, num_workers=args.num_workers, persistent_workers=True)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    progress = Progress(args.time_limit)
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = train_step(model, optimizer, loss_fn, x, y)
            time.sleep(0.02)  # logging, a metrics push: the healthy twin's step is not all compute
            if progress.stepped(loss, epoch):
                return


if __name__ == "__main__":
    main()
