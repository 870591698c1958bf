"""word_language_model's shape (pytorch/examples): an LSTM language model trained on batches of a token stream,
with the checkpoint saved inside the batch loop, "so a crash loses nothing": `torch.save(model, f)` every
`--save-every` batches, the training waiting while the whole model is pickled and written. `--save-every 50` saves
less often; `--background` hands each save to a thread, which writes a copy of the state_dict while training
goes on (what torch.distributed.checkpoint.async_save does for a distributed job). Ordinary user code.
"""

import argparse
import os
import tempfile
import threading

import torch
from torch import nn
from training import Progress  # tests/jobs/training.py, beside this script


class RNNModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int) -> None:
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp, sparse=True)  # a wide table, only the batch's rows updated
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, data, hidden):
        output, hidden = self.rnn(self.encoder(data), hidden)
        return self.decoder(output).view(-1, self.decoder.out_features), hidden


def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


def save_in_background(model: nn.Module, path: str, pending: list[threading.Thread]) -> None:
    """A copy of the weights now (the step changes them next), written by a thread; one save at a time."""
    for thread in pending:
        thread.join()
    pending.clear()
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    thread = threading.Thread(target=torch.save, args=(state, path), daemon=True)
    thread.start()
    pending.append(thread)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--save", default=os.path.join(tempfile.gettempdir(), f"model-{os.getpid()}.pt"))
    parser.add_argument("--save-every", type=int, default=2)
    parser.add_argument("--background", action="store_true")
    parser.add_argument("--tokens", type=int, default=8000, help="the vocabulary")
    parser.add_argument("--emsize", type=int, default=4096)
    parser.add_argument("--nhid", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--bptt", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()

    stream = torch.randint(0, args.tokens, (200_000,), generator=torch.Generator().manual_seed(0))
    train_data = stream.narrow(0, 0, stream.size(0) // args.batch_size * args.batch_size)
    train_data = train_data.view(args.batch_size, -1).t().contiguous()
    model = RNNModel(args.tokens, args.emsize, args.nhid, 2)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    progress = Progress(args.time_limit)
    pending: list[threading.Thread] = []
    try:
        for epoch in range(args.epochs):
            hidden = None
            for batch, i in enumerate(range(0, train_data.size(0) - 1 - args.bptt, args.bptt)):
                data, targets = train_data[i:i + args.bptt], train_data[i + 1:i + 1 + args.bptt].reshape(-1)
                hidden = repackage_hidden(hidden) if hidden is not None else None
                optimizer.zero_grad()
                output, hidden = model(data, hidden)
                loss = criterion(output, targets)
                loss.backward()
                optimizer.step()
                if batch % args.save_every == 0:
                    if args.background:
                        save_in_background(model, args.save, pending)
                    else:
                        with open(args.save, "wb") as f:
                            torch.save(model, f)
                if progress.stepped(loss, epoch):
                    return
    finally:
        for thread in pending:
            thread.join()
        if os.path.exists(args.save):
            os.unlink(args.save)


if __name__ == "__main__":
    main()
