"""One rank of NCCL all-reduces on CUDA, for scripts/nccl-ras-check.sh: a torch job as users write it, so that
NCCL's RAS thread runs and answers. World size 1 (one GPU suffices); runs until killed.

    MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 NCCL_RAS_ADDR=127.0.0.1:28123 python3 nccl_allreduce.py"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

os.environ.setdefault("RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")
dist.init_process_group("nccl")
tensor = torch.ones(1 << 20, device="cuda")
print(f"ready: NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}", flush=True)
while True:
    dist.all_reduce(tensor)
    tensor.div_(2.0)
    torch.cuda.synchronize()
