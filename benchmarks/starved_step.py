"""How much faster a training step runs fed than starved (advice/thresholds.py starved_step_speedup): the loop of
tests/jobs/slow_store.py, timed from inside, once per worker count given. Per step: the main thread's CPU time
and wall time of the step itself, and of `next(loader)` (the wait and the batch's hand-over). A step that waits
a few hundred ms for each batch runs cold (torch's intra-op threads asleep, its weights out of cache); fed back to
back it runs warm. Run it on a quiet box; OMP_NUM_THREADS changes the answer (set it to compare).

    python -m benchmarks.starved_step 1 64 --seconds 12
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

JOBS = Path(__file__).resolve().parent.parent / "tests" / "jobs"


def measure(workers: int, seconds: float, warm_s: float = 4.0) -> str:
    sys.path.insert(0, str(JOBS))
    import torch  # noqa: F401 - the job's own imports, here only
    from slow_store import RemoteSamples  # type: ignore[import-not-found]
    from torch import nn
    from torch.utils.data import DataLoader
    from training import train_step  # type: ignore[import-not-found]

    loader = DataLoader(RemoteSamples(1 << 20, 1024, 20.0), batch_size=16, shuffle=True, num_workers=workers,
                        persistent_workers=True)
    model = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    batches = iter(loader)
    step_wall: list[float] = []
    step_cpu: list[float] = []
    next_wall: list[float] = []
    next_cpu: list[float] = []
    start = time.time()
    while time.time() - start < seconds:
        a, a_cpu = time.perf_counter(), time.thread_time()
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            continue
        b, b_cpu = time.perf_counter(), time.thread_time()
        train_step(model, optimizer, loss_fn, x, y)
        c, c_cpu = time.perf_counter(), time.thread_time()
        if time.time() - start > warm_s:
            next_wall.append(b - a)
            next_cpu.append(b_cpu - a_cpu)
            step_wall.append(c - b)
            step_cpu.append(c_cpu - b_cpu)
    total = sum(next_wall) + sum(step_wall)
    own_cpu = statistics.mean(step_cpu) + statistics.mean(next_cpu)
    return (f"workers {workers}: {len(step_wall) / total:.1f} steps/s; main thread CPU per step {1000 * own_cpu:.2f} "
            f"ms (step {1000 * statistics.mean(step_cpu):.2f}, next() {1000 * statistics.mean(next_cpu):.2f}); step "
            f"wall mean {1000 * statistics.mean(step_wall):.2f} ms, median {1000 * statistics.median(step_wall):.2f}; "
            f"waiting in next() {100 * sum(next_wall) / total:.0f}% of the time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workers", type=int, nargs="+")
    parser.add_argument("--seconds", type=float, default=12.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # torch warns of more workers than cores: that is the point here
    for workers in args.workers:
        print(measure(workers, args.seconds), flush=True)


if __name__ == "__main__":
    main()
