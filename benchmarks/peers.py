"""hwtop against the monitors a user would otherwise open, measured the same way in the same run, with the
issue's goals beside each figure: CPU and bytes written to the terminal (idle box, 1 s refresh, 200x50 tmux
pane), first full frame against a bare Textual app, one process-probe read over 5,000 processes, and RSS.
Every figure is the median of --runs runs; a peer that is not installed is skipped and named.

    python -m benchmarks.peers [--seconds 60] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

from benchmarks.startup import paired_first_frames
from benchmarks.terminal_runs import Measurement, compile_checkout, cpu_method, measure, peers

PEERS = ("btop", "htop", "glances")


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def terminal_figures(seconds: float, runs: int) -> dict[str, tuple[float, float, float]]:
    """name → (CPU % of one core, bytes/s to the terminal, peak RSS MiB), medians over the runs. The monitors
    take turns within each round, so a slow drift of the box touches them alike."""
    tools = {name: spec for name, spec in peers(1.0).items() if name in ("hwtop", *PEERS)}
    samples: dict[str, list[Measurement]] = {name: [] for name in tools}
    for _ in range(runs):
        for name, (argv, env) in tools.items():
            samples[name].append(measure(name, argv, env, seconds))
    return {name: (_median([m.cpu_percent for m in got]), _median([m.bytes_per_s for m in got]),
                   _median([m.peak_rss_mib for m in got])) for name, got in samples.items()}


def first_frames(runs: int) -> tuple[float, float]:
    """Medians of max(9, 3 x runs) starts of each, hwtop and the bare app taking turns (startup.py): three of
    each gave a ratio that moved by ±0.1 between runs of this benchmark."""
    ours, bare = paired_first_frames(max(9, 3 * runs))
    return _median(ours), _median(bare)


def process_tick_ms(count: int, runs: int) -> tuple[float, float]:
    """(steady state, worst case) ms of one read over `count` synthetic processes: all sleeping, after enough
    reads for the still ones to turn cold; and every one of them busy since the last read."""
    from benchmarks.process_scale import busy_everyone, median_read_ms
    from benchmarks.tick import synthetic_proc
    from hwtop.probes.processes import STILL_READS, ProcessProbe

    with tempfile.TemporaryDirectory() as root:
        synthetic_proc(root, count)
        probe = ProcessProbe(root)
        for _ in range(STILL_READS):
            probe.read()
        steady = median_read_ms(probe, max(9, 3 * runs))
        busy = median_read_ms(ProcessProbe(root), max(3, runs), lambda step: busy_everyone(root, count, step + 2))
    return steady, busy


def verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "missed"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed")
    compile_checkout()
    figures = terminal_figures(args.seconds, args.runs)
    ours_frame, bare_frame = first_frames(args.runs)
    tick, busy_tick = process_tick_ms(5000, args.runs)
    print(f"# hwtop against its peers — {time.strftime('%Y-%m-%d %H:%M')} — {platform.node()}, {os.cpu_count()} "
          f"CPUs; medians of {args.runs} runs of {args.seconds:g} s, 1 s refresh, 200x50 tmux pane, idle box")
    print(f"# rerun: python -m benchmarks.peers --seconds {args.seconds:g} --runs {args.runs}")
    print(f"# CPU: {cpu_method()}")
    print(f"# first frame: medians of {max(9, 3 * args.runs)} starts each, hwtop and a bare Textual app taking turns\n")
    print("| monitor | CPU % of one core | bytes/s to the terminal | peak RSS MiB |")
    print("|---|---|---|---|")
    for name, (cpu, rate, rss) in figures.items():
        print(f"| {name} | {cpu:.2f} | {rate:,.0f} | {rss:.1f} |")
    missing = [name for name in PEERS if name not in figures]
    if missing:
        print(f"\n(not installed, skipped: {', '.join(missing)})")
    hw = figures["hwtop"]
    print("\n| figure | hwtop | against | ratio | goal | |")
    print("|---|---|---|---|---|---|")
    if "btop" in figures:
        cpu_ratio, bytes_ratio = hw[0] / figures["btop"][0], hw[1] / figures["btop"][1]
        print(f"| CPU | {hw[0]:.2f} % | btop {figures['btop'][0]:.2f} % | {cpu_ratio:.2f}x | ≤ 1.0x | "
              f"{verdict(cpu_ratio, 1.0)} |")
        print(f"| bytes to the terminal | {hw[1]:,.0f}/s | btop {figures['btop'][1]:,.0f}/s | {bytes_ratio:.2f}x "
              f"| ≤ 0.5x | {verdict(bytes_ratio, 0.5)} |")
    if "htop" in figures:
        htop_ratio = hw[0] / figures["htop"][0]
        print(f"| CPU (stretch) | {hw[0]:.2f} % | htop {figures['htop'][0]:.2f} % | {htop_ratio:.2f}x | ≤ 2x | "
              f"{verdict(htop_ratio, 2.0)} |")
    frame_ratio = ours_frame / bare_frame
    print(f"| first full frame | {ours_frame:.3f} s | bare Textual {bare_frame:.3f} s | {frame_ratio:.2f}x | ≤ 1.3x | "
          f"{verdict(frame_ratio, 1.3)} |")
    print(f"| process probe, 5,000 processes | {tick:.1f} ms | | | ≤ 25 ms | {verdict(tick, 25.0)} |")
    print(f"| process probe, 5,000 all busy (worst case) | {busy_tick:.1f} ms | | | | |")
    print(f"| peak RSS | {hw[2]:.1f} MiB | | | ≤ 50 MiB | {verdict(hw[2], 50.0)} |")


if __name__ == "__main__":
    main()
