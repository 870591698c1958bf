"""A text classifier whose DataLoader hands out raw strings, and whose training loop turns each batch into token
ids itself, in the main process: lower-casing, splitting, a vocabulary lookup per word, padding. Most of every
step is spent there, on one core, while the model waits. --pretokenize is the healthy twin: the same code runs
once, before training, in the Dataset, and the DataLoader hands out the token ids it kept (in the main process:
indexing a tensor needs no workers). Ordinary user code."""

import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from training import Progress, arguments, train_step  # tests/jobs/training.py, beside this script

WORDS = [f"w{i}" for i in range(5000)]
MAX_LEN = 64


def make_text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS).upper() if rng.random() < 0.1 else rng.choice(WORDS) for _ in range(200))


def build_vocab() -> dict[str, int]:
    return {word: index + 1 for index, word in enumerate(WORDS)}


def tokenize(text: str, vocab: dict[str, int]) -> list[int]:
    ids = []
    for word in text.lower().split():
        word = word.strip(".,;:!?\"'")
        for _ in range(600):  # a normalisation pass per word: unicode forms, accents, a few rules
            word = word.replace("--", "-")
        ids.append(vocab.get(word, 0))
    return (ids + [0] * MAX_LEN)[:MAX_LEN]


class Texts(Dataset):
    def __init__(self, size: int, pretokenize: bool) -> None:
        rng = random.Random(0)
        self.texts = [make_text(rng) for _ in range(size)]
        self.labels = torch.tensor([rng.randrange(2) for _ in range(size)])
        self.ids = None
        if pretokenize:
            vocab = build_vocab()
            self.ids = torch.tensor([tokenize(text, vocab) for text in self.texts])

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index: int):
        if self.ids is not None:
            return self.ids[index], self.labels[index]
        return self.texts[index], self.labels[index]


def main() -> None:
    parser = arguments()
    parser.add_argument("--pretokenize", action="store_true")
    args = parser.parse_args()

    dataset = Texts(512, pretokenize=args.pretokenize)
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    vocab = build_vocab()
    model = nn.Sequential(nn.EmbeddingBag(len(WORDS) + 1, 64, mode="mean"), nn.Linear(64, 256), nn.ReLU(),
                          nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    progress = Progress(args.time_limit)
    for epoch in range(args.epochs):
        for texts, labels in loader:
            if isinstance(texts, torch.Tensor):
                ids = texts
            else:
                ids = torch.tensor([tokenize(text, vocab) for text in texts])
            if progress.stepped(train_step(model, optimizer, loss_fn, ids, labels), epoch):
                return


if __name__ == "__main__":
    main()
