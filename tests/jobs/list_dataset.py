"""pytorch/pytorch#13246's shape: a Dataset that holds its records in a Python list of Python objects (an image index
loaded from JSON: a dict per record, its path, label, box and caption), read by DataLoader workers. Each worker is a
fork of the main process and shares its pages, until it reads a record: the read writes the object's reference
count, and the kernel copies the page to that worker. In record order (as the issue's reproduction reads,
shuffle=False) each worker copies the list page by page as it goes, so every worker grows steadily until it holds a
copy of the whole list. `--numpy` holds the same records in numpy arrays (no per-object reference counts: nothing is
copied), the fix the issue settled on; its memory only settles after start-up (torch's allocator, the workers' first
batches). Ordinary user code.
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import arguments, fit  # tests/jobs/training.py, beside this script


class Records(Dataset):
    """An index of an image dataset: each record a path, a label and a bounding box."""

    def __init__(self, count: int, as_numpy: bool, passes: int) -> None:
        self.count = count
        self.passes = passes
        if as_numpy:  # the same fields as arrays: a path made from its number when read
            self.labels = np.arange(count, dtype=np.int64) % 1000
            self.boxes = np.stack([np.arange(count) % 640, np.arange(count) % 480, np.arange(count) % 640 + 300,
                                   np.arange(count) % 480 + 200], axis=1).astype(np.int64)
            self.records = None
        else:  # a Python object per field, as json.load or a list comprehension makes them
            self.records = [{"path": f"/data/train/{index:08d}.jpg", "label": index % 1000,
                             "box": [index % 640, index % 480, index % 640 + 300, index % 480 + 200],
                             "caption": f"photo {index}: " + "a dog on a beach at sunset, " * 7}
                            for index in range(count)]

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        if self.records is None:
            path, label, box = f"/data/train/{index:08d}.jpg", int(self.labels[index]), self.boxes[index].tolist()
            caption = f"photo {index}: " + "a dog on a beach at sunset, " * 7
        else:
            record = self.records[index]
            path, label, box, caption = record["path"], record["label"], record["box"], record["caption"]
        x0, y0, x1, y1 = box
        image = crop = np.full((40, 40, 3), label % 256, dtype=np.float32)  # what decoding its file would give
        for _ in range(self.passes):  # crop, flip, blur, normalise: the sample's own work, a millisecond or so
            crop = image[y0 % 8:y0 % 8 + 32, x0 % 8:x0 % 8 + 32][:, ::-1]
            crop = (crop[:-2, :-2] + crop[1:-1, 1:-1] + crop[2:, 2:]) / 3.0
            crop = (crop - crop.mean()) / (crop.std() + 1e-5)
        features = np.array([len(path) / 32.0, (x1 - x0) / 640.0, len(caption) / 256.0 + float(crop[0, 0, 0])],
                            dtype=np.float32)
        return features, label % 2


def main() -> None:
    parser = arguments()
    parser.add_argument("--numpy", action="store_true")
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--passes", type=int, default=4, help="augmentation passes a sample: its cost (a pass over "
                        "the records takes minutes, as a real one does; with none it takes seconds, and the workers "
                        "have copied the list before anyone looks)")
    args = parser.parse_args()

    loader = DataLoader(Records(args.records, args.numpy, args.passes), batch_size=args.batch_size, shuffle=False,
                        num_workers=args.num_workers, persistent_workers=True)
    model = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    fit(loader, model, optimizer, nn.CrossEntropyLoss(), args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
