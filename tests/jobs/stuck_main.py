"""A training loop that hands its metrics to a background uploader thread through a queue and, at the end of each
epoch, waits for the uploads to finish (queue.join()). The uploader fails on one record (a value it cannot
serialise) and its thread dies without marking the record done: the training loop waits at the end of its first
epoch forever, with no error. --no-hang is the healthy twin. Ordinary user code."""

import json
import queue
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from training import Progress, arguments, train_step  # tests/jobs/training.py, beside this script


def uploader(records: queue.Queue, sent: list[str]) -> None:
    while True:
        record = records.get()
        sent.append(json.dumps(record))  # a tensor in the record raises TypeError: the thread dies here
        records.task_done()


def main() -> None:
    parser = arguments()
    parser.add_argument("--no-hang", action="store_true")
    args = parser.parse_args()

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 64, generator=generator)
    y = (x.sum(dim=1) > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=1, persistent_workers=True)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    records: queue.Queue = queue.Queue()
    sent: list[str] = []
    threading.Thread(target=uploader, args=(records, sent), daemon=True).start()

    progress = Progress(args.time_limit)
    for epoch in range(args.epochs):
        for inputs, targets in loader:
            loss = train_step(model, optimizer, loss_fn, inputs, targets)
            time.sleep(0.01)
            if progress.stepped(loss, epoch):
                return
        accuracy = loss.detach() if not args.no_hang else loss.item()  # the tensor the uploader cannot serialise
        records.put({"epoch": epoch, "step": progress.step, "loss": accuracy})
        print(f"epoch {epoch} done at step {progress.step}: waiting for its metrics to upload", flush=True)
        records.join()  # wait until the epoch's metrics are uploaded


if __name__ == "__main__":
    main()
