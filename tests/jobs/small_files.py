"""Samples stored as many small files (one per frame of a clip, a common layout for video and audio data), read
with open()/read() in Dataset.__getitem__ by two DataLoader workers. --packed reads the same bytes from one
file of contiguous samples instead (the fix: large sequential reads). Ordinary user code.

--cold-cache stands in for a dataset larger than RAM on a box whose RAM holds this small one: each file's
pages are dropped from the page cache after it is read (posix_fadvise DONTNEED), so every epoch reads from
the disk again, as it would once the dataset no longer fits. --prepare DIR writes the dataset and exits.
"""

import argparse
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import fit  # tests/jobs/training.py, beside this script

FRAMES = 16  # files per sample
FRAME_BYTES = 8192
FEATURES = 1024
HIDDEN = 4096


def prepare(root: str, samples: int) -> None:
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "packed.bin"), "wb") as packed:
        for index in range(samples):
            folder = os.path.join(root, f"{index:05d}")
            os.makedirs(folder, exist_ok=True)
            for frame in range(FRAMES):
                data = os.urandom(FRAME_BYTES)
                with open(os.path.join(folder, f"{frame:03d}.bin"), "wb") as handle:
                    handle.write(data)
                packed.write(data)


def drop_from_cache(fd: int, offset: int = 0, length: int = 0) -> None:
    os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)


class Frames(Dataset):
    def __init__(self, root: str, packed: bool, cold: bool) -> None:
        self.root, self.packed, self.cold = root, packed, cold
        self.samples = len([name for name in os.listdir(root) if name.isdigit()])

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int):
        if self.packed:
            size = FRAMES * FRAME_BYTES
            with open(os.path.join(self.root, "packed.bin"), "rb") as handle:
                handle.seek(index * size)
                data = handle.read(size)
                if self.cold:
                    drop_from_cache(handle.fileno(), index * size, size)
        else:
            parts = []
            for frame in range(FRAMES):
                with open(os.path.join(self.root, f"{index:05d}", f"{frame:03d}.bin"), "rb") as handle:
                    parts.append(handle.read())
                    if self.cold:
                        drop_from_cache(handle.fileno())
            data = b"".join(parts)
        frames = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(FRAMES, -1).float() / 255.0
        return frames.mean(dim=0).view(FEATURES, -1).mean(dim=1), index % 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--prepare", type=int, metavar="SAMPLES", help="write SAMPLES samples to --data and exit")
    parser.add_argument("--packed", action="store_true")
    parser.add_argument("--cold-cache", action="store_true")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--num-workers", type=int, default=2)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.data, args.prepare)
        return

    loader = DataLoader(Frames(args.data, args.packed, args.cold_cache), batch_size=16, shuffle=True,
                        num_workers=args.num_workers, persistent_workers=args.num_workers > 0)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    fit(loader, model, optimizer, loss_fn, args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
