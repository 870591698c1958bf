"""Host-to-device copies from pinned memory for SECONDS (default 30), printing the rate they reach each second: a
PCIe load of known size for scripts/gpu-check.sh's capture (needs torch with CUDA).

    python3 scripts/h2d_load.py [SECONDS]
"""

import sys
import time

import torch

GIB = 1 << 30


def main(seconds: float) -> None:
    source = torch.empty(GIB, dtype=torch.uint8).pin_memory()
    target = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    target.copy_(source, non_blocking=True)
    torch.cuda.synchronize()
    start = second = time.monotonic()
    copies = 0
    while second - start < seconds:  # one line a second: the log holds the rate even if the run is killed
        target.copy_(source, non_blocking=True)
        torch.cuda.synchronize()
        copies += 1
        now = time.monotonic()
        if now - second >= 1.0:
            print(f"h2d: {time.time():.3f} {copies * GIB / (now - second) / 1e9:.2f} GB/s", flush=True)
            copies, second = 0, now


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0)
