"""imagenet/main.py's shape (pytorch/examples) on a folder of photo-sized JPEGs, with `-j 0` (`--workers 0`): every
sample is a JPEG decoded with PIL, a random resized crop, a flip, normalised, in Dataset.__getitem__; the main
process decodes each batch itself, then runs a small convolutional network whose forward and backward use
torch's intra-op threads (every core). Decoding is CPU work and the step already keeps the cores busy, so a
DataLoader worker takes its core from the step; what makes it faster is a cheaper sample: `--draft` has PIL
decode the JPEG at a reduced scale (libjpeg's DCT scaling, as a decode library or Pillow-SIMD would), and
`--prepare DIR --stored-size 160` writes the photos pre-resized offline. Ordinary user code, no torchvision.
"""

import argparse
import os

import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import fit  # tests/jobs/training.py, beside this script

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def prepare(root: str, count: int, size: tuple[int, int]) -> None:
    """Photo-like JPEGs (smooth gradients and noise, as a camera's are), quality 90."""
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    width, height = size
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    for index in range(count):
        phase = rng.uniform(0, 6.28, 3)
        image = np.stack([127 + 100 * np.sin(x / (40 + 9 * c) + y / 70 + phase[c]) for c in range(3)], axis=-1)
        image += rng.normal(0, 12, image.shape)
        Image.fromarray(image.clip(0, 255).astype(np.uint8)).save(os.path.join(root, f"{index:05d}.jpg"), quality=90)


class Photos(Dataset):
    def __init__(self, root: str, crop: int, draft: bool) -> None:
        self.paths = sorted(os.path.join(root, name) for name in os.listdir(root) if name.endswith(".jpg"))
        self.crop, self.draft = crop, draft
        self.rng = np.random.default_rng(1)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int):
        with Image.open(self.paths[index]) as image:
            if self.draft:  # decode at 1/2, 1/4 or 1/8 scale, the largest that still covers twice the crop
                image.draft("RGB", (2 * self.crop, 2 * self.crop))
            image = image.convert("RGB")
            width, height = image.size
            side = int(min(width, height) * self.rng.uniform(0.35, 1.0))  # RandomResizedCrop, roughly
            left, top = self.rng.integers(0, width - side + 1), self.rng.integers(0, height - side + 1)
            image = image.resize((self.crop, self.crop), Image.BILINEAR, box=(left, top, left + side, top + side))
        array = np.asarray(image, dtype=np.float32) / 255.0
        if self.rng.random() < 0.5:
            array = array[:, ::-1]
        array = (array - MEAN) / STD
        return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1))), index % 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", help="a folder of .jpg files")
    parser.add_argument("--prepare", type=int, metavar="N", help="write N photos into the folder and exit")
    parser.add_argument("--stored-size", type=int, default=1600, help="with --prepare: the photos' width")
    parser.add_argument("-j", "--workers", type=int, default=0)
    parser.add_argument("-b", "--batch-size", type=int, default=16)
    parser.add_argument("--crop", type=int, default=64)
    parser.add_argument("--draft", action="store_true")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.data, args.prepare, (args.stored_size, args.stored_size * 3 // 4))
        return

    loader = DataLoader(Photos(args.data, args.crop, args.draft), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Conv2d(128, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    fit(loader, model, optimizer, nn.CrossEntropyLoss(), args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
