"""Runs the torch-side measurements (workload/bench.py) in a subprocess: the monitor never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

TIMEOUT_S = 300.0


def run_bench(compute: bool, pcie: bool) -> dict[str, Any]:
    """The bench's JSON, or {"error": why} when torch is missing or the bench fails."""
    from hwtop.workload.launcher import torch_missing

    missing = torch_missing()
    if missing:
        return {"error": missing}
    argv = [sys.executable, "-P", "-m", "hwtop.workload.bench"]
    argv += (["--compute"] if compute else []) + (["--pcie"] if pcie else [])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"the measurement took more than {TIMEOUT_S:.0f} s and was stopped"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no error output"])[-1]
        return {"error": f"the measurement failed (exit {done.returncode}): {tail}"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "the measurement printed no result"}
