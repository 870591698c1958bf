"""The scripts' shared helper, as a user's own repository keeps one beside its training scripts: the progress line
(`epoch E step S loss L N steps/s`, at the first step and every two seconds after), the time limit, and the plain
supervised loop the single-process scripts train with, its one step, and the options every script takes."""

import argparse
import time


class Progress:
    def __init__(self, time_limit: float, show: bool = True) -> None:
        self.start = self.last = time.time()
        self.step = self.last_step = 0
        self.time_limit, self.show = time_limit, show

    def stepped(self, loss, epoch=None) -> bool:
        """Counts a step and prints the line when it is due (the loss read only then); True once past the limit."""
        self.step += 1
        now = time.time()
        if self.show and (now - self.last >= 2.0 or self.step == 1):
            words = "" if epoch is None else f"epoch {epoch} "
            print(f"{words}step {self.step} loss {loss.item():.3f} "
                  f"{(self.step - self.last_step) / (now - self.last):.1f} steps/s", flush=True)
            self.last, self.last_step = now, self.step
        return now - self.start > self.time_limit

    def past(self) -> bool:
        return time.time() - self.start > self.time_limit


def arguments(epochs: int = 1000) -> argparse.ArgumentParser:
    """--epochs and --time-limit (seconds, then the script stops); each script adds its own."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--time-limit", type=float, default=60.0)
    return parser


def train_step(model, optimizer, loss_fn, x, y):
    """One plain step (zero_grad, forward, loss, backward, step); its loss, graph and all."""
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def fit(loader, model, optimizer, loss_fn, epochs: int, time_limit: float) -> None:
    """Epochs of the plain loop until `epochs` or the time limit."""
    progress = Progress(time_limit)
    for epoch in range(epochs):
        for x, y in loader:
            if progress.stepped(train_step(model, optimizer, loss_fn, x, y), epoch):
                return
