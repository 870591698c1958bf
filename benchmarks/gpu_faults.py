"""What the GPU probe's reads cost per tick over whole slow tiers (the fault counters of probes/nvml/faults.py are
read there, every SLOW_TIER_S), through the real nvidia-ml-py over the fake NVML on a hand-moved clock: the mean and
the slowest tick's CPU time, NVML calls per tick (those of the fault reads apart; their one
nvmlDeviceGetFieldValues call a GPU counts among all), the fake's modelled driver time per tick
(demo/nvml/latency.py: estimates, not a real driver's), and the CPU the fault reads themselves take. The CPU
figures move with the box's load: compare two checkouts in one sitting, several rounds each.

    python -m benchmarks.gpu_faults [--seconds 60] [--rounds 5]
    (cd OTHER_CHECKOUT && python -m benchmarks.gpu_faults)   # copy this file there first; `hwtop` from there
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections import Counter

import hwtop
from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.demo.profiles import get_profile
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.nvml.slow import BackgroundCalls

CASES = (("dgx-a100", 8, "8 x A100, 12 NVLinks each"), ("h200", 1, "1 x H200, 18 NVLinks"),
         ("h200", 8, "8 x H200, 18 NVLinks each"), ("h100-pcie", 1, "1 x H100 PCIe, no NVLink"))


def timed_faults(probe: NvmlProbe, spent: list[float]) -> None:
    """Adds the CPU ms of each GPU's fault read (probes/nvml/faults.py, where this tree has it) to `spent`."""
    for device in getattr(probe, "_devices", ()):
        reader = getattr(device, "faults", None)
        if reader is None:
            continue

        def read(links, _read=reader.read):  # noqa: ANN001, ANN202 - the reader's own signature
            start = time.process_time()
            try:
                return _read(links)
            finally:
                spent.append((time.process_time() - start) * 1000)
        reader.read = read


def run(profile_name: str, gpus: int, seconds: int) -> tuple[list[float], Counter[str], float, list[float]]:
    """CPU ms of each of `seconds` ticks (one simulated second apart), the fake's calls, its modelled seconds, and
    the CPU ms of each GPU's fault reads."""
    profile = dataclasses.replace(get_profile(profile_name), gpu_count=gpus)
    clock = [100.0]
    fake = FakeNvmlLibrary(profile, seed=1, clock=lambda: clock[0])
    probe = NvmlProbe(fake.pynvml, clock=lambda: clock[0], background=BackgroundCalls(inline=True))
    for _ in range(6):  # open, static facts, a first slow tier, rates primed
        probe.read()
        clock[0] += 1.0
    fake.reset_accounting()
    faults: list[float] = []
    timed_faults(probe, faults)
    ticks = []
    for _ in range(seconds):
        start = time.process_time()
        probe.read()
        ticks.append((time.process_time() - start) * 1000)
        clock[0] += 1.0
    calls = Counter(fake.calls)
    spent = fake.spent_s()
    probe.close()
    return ticks, calls, spent, faults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=60, help="ticks per round, one simulated second apart")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per case; the median round is shown")
    args = parser.parse_args()
    print(f"hwtop from {hwtop.__file__}")
    print("| case | CPU ms per tick (mean, median round) | slowest tick ms | NVML calls per tick | fault calls per "
          "tick | modelled driver ms per tick | fault reads: CPU ms per tick (per GPU read) |")
    print("|---|---|---|---|---|---|---|")
    for profile_name, gpus, words in CASES:
        rounds = [run(profile_name, gpus, args.seconds) for _ in range(args.rounds)]
        rounds.sort(key=lambda r: statistics.mean(r[0]))
        ticks, calls, spent, fault_ms = rounds[len(rounds) // 2]
        faults = sum(n for name, n in calls.items()
                     if name in ("nvmlDeviceGetRemappedRows", "nvmlDeviceGetNvLinkErrorCounter",
                                 "nvmlDeviceGetViolationStatus"))
        fault_cost = (f"{sum(fault_ms) / args.seconds:.3f} ({statistics.median(fault_ms):.3f})" if fault_ms
                      else "none in this tree")
        print(f"| {words} | {statistics.mean(ticks):.3f} | {max(ticks):.3f} | {sum(calls.values()) / args.seconds:.1f} "
              f"| {faults / args.seconds:.1f} | {spent * 1000 / args.seconds:.3f} | {fault_cost} |")
    print(f"\n    python -m benchmarks.gpu_faults --seconds {args.seconds} --rounds {args.rounds}")


if __name__ == "__main__":
    main()
