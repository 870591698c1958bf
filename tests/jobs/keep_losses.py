"""A training loop that keeps every step's loss (a tensor, with its autograd graph) and a copy of half its batch in
lists "for logging", so the process grows on every step until the box swaps or the OOM killer ends it.
--log-floats keeps loss.item() instead (the healthy twin); --recent N keeps only the last N steps (a warm-up: it
grows for N steps, then stays flat). Ordinary user code."""

import collections

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from training import Progress, arguments, train_step  # tests/jobs/training.py, beside this script


def main() -> None:
    parser = arguments()
    parser.add_argument("--log-floats", action="store_true")
    parser.add_argument("--recent", type=int, default=None)
    args = parser.parse_args()

    generator = torch.Generator().manual_seed(0)
    images = torch.rand(1024, 3, 32, 32, generator=generator)
    labels = torch.randint(0, 10, (1024,), generator=generator)
    loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    losses: collections.deque | list = collections.deque(maxlen=args.recent) if args.recent else []
    batches: collections.deque | list = collections.deque(maxlen=args.recent) if args.recent else []

    progress = Progress(args.time_limit)
    for epoch in range(args.epochs):
        for inputs, targets in loader:
            loss = train_step(model, optimizer, loss_fn, inputs, targets)
            if args.log_floats:
                losses.append(loss.item())
            else:
                losses.append(loss)  # "for the plot at the end"
                batches.append(inputs[:32] * 1.0)  # half the batch, normalised, "to look at later"
            if progress.stepped(loss, epoch):
                return


if __name__ == "__main__":
    main()
