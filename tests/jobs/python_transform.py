"""Audio clips with a transform written as a plain Python loop in Dataset.__getitem__ (pre-emphasis, a gain, clipping
and a 3-tap smoothing, sample by sample, as one writes it first), loaded with DataLoader's default num_workers=0:
the main process runs the loop for every sample of every batch, then a small 1-D convolutional network's step. The
loop holds the GIL and one core whatever the workers; `--vectorised` does the same arithmetic with numpy array
operations (a compiled loop), `--num-workers N` moves the Python loop into workers. Ordinary user code.
"""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import arguments, fit  # tests/jobs/training.py, beside this script

CLIP = 16000  # samples per clip: a second at 16 kHz


class Clips(Dataset):
    def __init__(self, count: int, vectorised: bool) -> None:
        rng = np.random.default_rng(0)
        self.clips = rng.normal(0, 0.3, (count, CLIP)).astype(np.float32)
        self.labels = rng.integers(0, 10, count)
        self.vectorised = vectorised

    def __len__(self) -> int:
        return len(self.clips)

    def emphasised(self, clip: np.ndarray) -> np.ndarray:
        if self.vectorised:
            out = clip.copy()
            out[1:] = np.clip((clip[1:] - 0.97 * clip[:-1]) * 1.5, -1.0, 1.0)
            out[1:-1] = (out[:-2] + out[1:-1] + out[2:]) / 3.0
            return out
        samples = clip.tolist()
        out = [samples[0]]
        for i in range(1, len(samples)):
            value = (samples[i] - 0.97 * samples[i - 1]) * 1.5
            out.append(1.0 if value > 1.0 else -1.0 if value < -1.0 else value)
        smooth = list(out)
        for i in range(1, len(out) - 1):
            smooth[i] = (out[i - 1] + out[i] + out[i + 1]) / 3.0
        return np.array(smooth, dtype=np.float32)

    def __getitem__(self, index: int):
        return torch.from_numpy(self.emphasised(self.clips[index])).unsqueeze(0), int(self.labels[index])


def main() -> None:
    parser = arguments()
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--vectorised", action="store_true")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    loader = DataLoader(Clips(4096, args.vectorised), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.num_workers, persistent_workers=args.num_workers > 0)
    model = nn.Sequential(nn.Conv1d(1, 16, 16, stride=16), nn.ReLU(), nn.Conv1d(16, 32, 5, stride=4), nn.ReLU(),
                          nn.AdaptiveAvgPool1d(4), nn.Flatten(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    fit(loader, model, optimizer, nn.CrossEntropyLoss(), args.epochs, args.time_limit)


if __name__ == "__main__":
    main()
