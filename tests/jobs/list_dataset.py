"""pytorch/pytorch#13246's shape: a Dataset that holds its records in a Python list of Python objects, read by
DataLoader workers. Each worker is a fork of the main process and shares its pages, until it reads a record: the
read writes the object's reference count, and the kernel copies the page to that worker. In record order (as the
issue's reproduction reads, shuffle=False) each worker copies the list page by page as it goes, so every worker
grows steadily until it holds a copy of the whole list. `--numpy` holds the same records in numpy arrays (no
per-object reference counts: nothing is copied), the fix the issue settled on; its memory only settles after
start-up (torch's allocator, the workers' first batches). Ordinary user code.
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import arguments, fit  # tests/jobs/training.py, beside this script


class Records(Dataset):
    def __init__(self, count: int, as_numpy: bool) -> None:
        if as_numpy:
            self.offsets = np.arange(count, dtype=np.int64) * 4096 + 12345
            self.lengths = np.arange(count, dtype=np.float64) % 97 / 97.0
        else:  # one Python int and one float object per record, as `[x for x in range(n)]` makes them
            self.offsets = [index * 4096 + 12345 for index in range(count)]
            self.lengths = [index % 97 / 97.0 for index in range(count)]

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, index: int):
        offset, length = self.offsets[index], self.lengths[index]
        return torch.tensor([float(offset % 1000) / 1000.0, float(length)]), int(offset) % 2


def main() -> None:
    parser = arguments()
    parser.add_argument("--numpy", action="store_true")
    parser.add_argument("--records", type=int, default=6_000_000)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    loader = DataLoader(Records(args.records, args.numpy), batch_size=args.batch_size, shuffle=False,
                        num_workers=args.num_workers, persistent_workers=True)
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    fit(loader, model, optimizer, nn.CrossEntropyLoss(), args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
