"""A training loop that keeps every step's loss (a tensor, with its autograd graph) and a copy of half its batch in
lists "for logging", so the process grows on every step until the box swaps or the OOM killer ends it.
--log-floats keeps loss.item() instead (the healthy twin); --recent N keeps only the last N steps (a warm-up: it
grows for N steps, then stays flat). Ordinary user code."""

import argparse
import collections
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
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

    start = last = time.time()
    step = last_step = 0
    for epoch in range(args.epochs):
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            if args.log_floats:
                losses.append(loss.item())
            else:
                losses.append(loss)  # "for the plot at the end"
                batches.append(inputs[:32] * 1.0)  # half the batch, normalised, "to look at later"
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
