"""Measured, not assumed: matmul throughput per device and dtype, and host↔device copy bandwidth per GPU with
pageable and pinned memory. Run by `hwtop report --compute/--pcie` in its own process (torch lives here only).

    python -m hwtop.workload.bench --compute --pcie

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch

SECONDS = 0.5  # per measurement, after a warm-up


def _timed(run: Any, sync: Any) -> tuple[int, float]:
    run()
    sync()
    count, start = 0, time.perf_counter()
    while True:
        run()
        count += 1
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= SECONDS:
            return count, elapsed


def compute(device: torch.device) -> list[dict[str, Any]]:
    cuda = device.type == "cuda"
    n = 4096 if cuda else 1024
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    kinds: list[tuple[str, torch.dtype, bool]] = [("fp32", torch.float32, False)]
    if cuda:
        kinds.append(("tf32", torch.float32, True))
        kinds.append(("fp16", torch.float16, False))
        if torch.cuda.is_bf16_supported():
            kinds.append(("bf16", torch.bfloat16, False))
    else:
        kinds.append(("bf16", torch.bfloat16, False))
    out = []
    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        for label, dtype, tf32 in kinds:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device=device, dtype=dtype)
            b = torch.randn(n, n, device=device, dtype=dtype)
            count, elapsed = _timed(lambda a=a, b=b: torch.mm(a, b), sync)
            out.append({"device": str(device), "dtype": label, "n": n,
                        "tflops": 2 * n**3 * count / elapsed / 1e12})
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return out


def pcie(index: int, size: int = 256 << 20) -> list[dict[str, Any]]:
    device = torch.device("cuda", index)
    out = []
    gpu = torch.empty(size, dtype=torch.uint8, device=device)
    for memory in ("pageable", "pinned"):
        host = torch.empty(size, dtype=torch.uint8, pin_memory=memory == "pinned")
        sync = lambda: torch.cuda.synchronize(device)  # noqa: E731
        for direction, run in (("host-to-device", lambda h=host: gpu.copy_(h, non_blocking=True)),
                               ("device-to-host", lambda h=host: h.copy_(gpu, non_blocking=True))):
            count, elapsed = _timed(run, sync)
            out.append({"gpu": index, "memory": memory, "direction": direction,
                        "gb_per_s": size * count / elapsed / 1e9})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hwtop.workload.bench")
    parser.add_argument("--compute", action="store_true")
    parser.add_argument("--pcie", action="store_true")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if args.compute:
        devices = [torch.device("cuda", i) for i in range(gpus)] or [torch.device("cpu")]
        result["compute"] = [row for d in devices for row in compute(d)]
        if not gpus:
            result["compute_note"] = "no CUDA GPU: this is the CPU's matmul throughput"
    if args.pcie:
        if gpus:
            result["pcie"] = [row for i in range(gpus) for row in pcie(i)]
        else:
            result["pcie_error"] = "--pcie needs a CUDA GPU (torch.cuda.is_available() is False here)"
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
