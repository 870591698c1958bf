"""Issue 54: does the fix doctor prints measure faster? Each case is a user's script in tests/jobs/ run as it is
and with each candidate fix (the script's own flags), back to back, in alternating order, `--rounds` times; each run
for `--seconds`, its rate the steps it counted after its first few seconds over the time they took. It prints
each variant's median over the rounds, every round's figure, and the load average before and after (the box is
shared: compare only within one run).

    python -m benchmarks.advice_fixes decode --rounds 3 --seconds 30
    python -m benchmarks.advice_fixes waiting --rounds 3 --seconds 30
    python -m benchmarks.advice_fixes checkpoint --rounds 3 --seconds 30
    python -m benchmarks.advice_fixes transform --rounds 3 --seconds 30
    python -m benchmarks.advice_fixes single --rounds 3 --seconds 30
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOBS = Path(__file__).resolve().parent.parent / "tests" / "jobs"
STEP = re.compile(r"step (\d+) loss")
WARM_S = 6.0  # start-up, the first epoch's first batches and the workers' fork: not the steady rate


def prepared(name: str, *args: str) -> str:
    """A data folder made once per run by the script's own --prepare."""
    root = os.path.join(tempfile.gettempdir(), f"hwtop-bench-{name}")
    if not os.path.isdir(root):
        subprocess.run([sys.executable, str(JOBS / args[0]), root, *args[1:]], check=True)
    return root


def cases(name: str) -> dict[str, list[str]]:
    """Variant name -> the script and its arguments."""
    if name == "decode":
        photos = prepared("photos", "decode_photos.py", "--prepare", "200")
        small = prepared("photos-160", "decode_photos.py", "--prepare", "200", "--stored-size", "160")
        return {"-j 0 (as found)": ["decode_photos.py", photos, "-j", "0"],
                "-j 1 (one worker)": ["decode_photos.py", photos, "-j", "1"],
                "-j 0 --draft (decode smaller)": ["decode_photos.py", photos, "-j", "0", "--draft"],
                "-j 0, stored at 160 px": ["decode_photos.py", small, "-j", "0"]}
    if name == "waiting":
        return {"num_workers=0 (as found)": ["slow_store.py", "--num-workers", "0", "--read-ms", "3"],
                "num_workers=1": ["slow_store.py", "--num-workers", "1", "--read-ms", "3"],
                "num_workers=8": ["slow_store.py", "--num-workers", "8", "--read-ms", "3"]}
    if name == "checkpoint":
        return {"save every 2 batches (as found)": ["checkpoint_every.py", "--save-every", "2"],
                "save every 50 batches": ["checkpoint_every.py", "--save-every", "50"],
                "save in a background thread": ["checkpoint_every.py", "--save-every", "2", "--background"]}
    if name == "transform":
        return {"Python loop, num_workers=0 (as found)": ["python_transform.py", "--num-workers", "0"],
                "Python loop, num_workers=1": ["python_transform.py", "--num-workers", "1"],
                "vectorised, num_workers=0": ["python_transform.py", "--num-workers", "0", "--vectorised"]}
    if name == "single":  # 19.6 workers' worth of loading on 2 cores: what the cores the loading can have buy
        return {"num_workers=0 (as found)": ["single_core.py", "--num-workers", "0"],
                "num_workers=1": ["single_core.py", "--num-workers", "1"],
                "num_workers=2": ["single_core.py", "--num-workers", "2"]}
    raise SystemExit(f"unknown case {name!r}")


def rate_of(command: list[str], seconds: float) -> float | None:
    """Steps per second over the run after its first WARM_S: the step counts the script printed (`step S`), against
    when each line arrived (its own `N steps/s` is rounded to a tenth)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    job = subprocess.Popen([sys.executable, str(JOBS / command[0]), *command[1:], "--time-limit", str(seconds)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert job.stdout is not None
    seen: list[tuple[float, int]] = []
    first: float | None = None
    for line in job.stdout:
        found = STEP.search(line)
        if found:
            now = time.monotonic()
            first = now if first is None else first
            if now - first >= WARM_S:
                seen.append((now, int(found.group(1))))
    job.wait(60)
    if len(seen) < 2:
        return None
    return (seen[-1][1] - seen[0][1]) / (seen[-1][0] - seen[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=("decode", "waiting", "checkpoint", "transform", "single"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    variants = cases(args.case)
    figures: dict[str, list[float]] = {name: [] for name in variants}
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    names = list(variants)
    for round_ in range(args.rounds):
        order = names if round_ % 2 == 0 else names[::-1]
        for name in order:
            rate = rate_of(variants[name], args.seconds)
            if rate is not None:
                figures[name].append(rate)
            shown = "no rate" if rate is None else f"{rate:.3f} steps/s"
            print(f"round {round_ + 1}: {name}: {shown} (load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    base = statistics.median(figures[names[0]]) if figures[names[0]] else None
    for name in names:
        values = figures[name]
        if not values:
            print(f"{name}: no rate")
            continue
        median = statistics.median(values)
        gain = f" ({median / base:.2f}x)" if base else ""
        print(f"{name}: median {median:.2f} steps/s{gain}; rounds {', '.join(f'{v:.2f}' for v in values)}")
    print(f"command: python -m benchmarks.advice_fixes {args.case} --rounds {args.rounds} --seconds {args.seconds:g}")


if __name__ == "__main__":
    main()
