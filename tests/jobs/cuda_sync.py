"""A training loop as users write it, that waits for the device each step the usual ways: `.item()` for the
loss, `.tolist()` and `.cpu()` for metrics, a copy without non_blocking. On a CPU build the same Python lines
run (the device is the CPU), so py-spy's stacks of it are those of a GPU rank in the same calls.

    python cuda_sync.py KIND   (item | tolist | cpu | to)"""

from __future__ import annotations

import sys

import torch

kind = sys.argv[1]
device = "cuda" if torch.cuda.is_available() else "cpu"
weights = torch.randn(256, 256, device=device)
big = torch.randn(4_000_000, device=device)
print("ready", flush=True)
while True:
    loss = (weights @ weights).sum()
    if kind == "item":
        value = big.sum().item() + loss.item() + sum(big[i].item() for i in range(20_000))
    elif kind == "tolist":
        values = big.tolist()
    elif kind == "cpu":
        host = big.cpu().clone()
    else:
        host = big.to("cpu", non_blocking=False).clone()
