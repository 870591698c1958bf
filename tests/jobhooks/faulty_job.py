"""The embedded job with faults injected, for tests only: `python -P -m faulty_job` with this folder on
PYTHONPATH. The patches run at import, so the spawned ranks (which re-import this main module) carry them.

HWTOP_TEST_CRASH_RANK=R   rank R dies with exit code 7 before reporting its second step (as a segfaulting
                          extension would)
HWTOP_TEST_OOM_AT=B       a training run at batch B or more raises torch.OutOfMemoryError (a CPU never runs
                          out of memory on cue)
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

from hwtop.workload import job

_emit, _train = job.emit, job.train
CRASH_RANK = os.environ.get("HWTOP_TEST_CRASH_RANK")
OOM_AT = int(os.environ.get("HWTOP_TEST_OOM_AT", "0") or 0)


def emit(record: dict[str, Any]) -> None:
    if record.get("event") == "step" and str(record.get("rank")) == CRASH_RANK and record.get("step") == 2:
        os._exit(7)
    _emit(record)


def train(rank: int, world: int, args: Any, amp: str, batch_size: int, steps: int | None,
          phase: str | None = None) -> dict[str, Any]:
    if OOM_AT and batch_size >= OOM_AT:
        raise torch.OutOfMemoryError(f"injected: CUDA out of memory at batch {batch_size}")
    return _train(rank, world, args, amp, batch_size, steps, phase)


job.emit, job.train = emit, train

if __name__ == "__main__":
    sys.exit(job.main())
