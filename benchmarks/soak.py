"""Soak: hwtop at a 0.1 s refresh for 10 minutes (by default with --demo dgx-a100 and the embedded workload),
in a real terminal; RSS, live threads and open file descriptors of hwtop's process sampled every 30 s — they
must stay flat, not grow. `--demo none` watches this machine instead (issue 21's setup: an idle box, 1 s).

    python -m benchmarks.soak [--minutes 10] [--interval 0.1] [--no-workload] [--demo PROFILE|none]
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
import uuid

from benchmarks.terminal_runs import HWTOP, tmux


def status(pid: int) -> tuple[float, int, int]:
    rss = threads = 0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss / 1024, threads, len(os.listdir(f"/proc/{pid}/fd"))


def soak(minutes: float, interval: float, workload: bool, demo: str, every_s: float = 30.0,
         scenario: str | None = None) -> tuple[str, list[tuple[float, float, int, int]]]:
    """(the command run, rows of (t s, RSS MiB, threads, open fds) every `every_s`)."""
    command = "exec " + shlex.join([*HWTOP, "--interval", f"{interval:g}"])  # exec: the pane's pid is hwtop
    if demo != "none":
        command += f" --demo {shlex.quote(demo)}"
        if scenario:
            command += f" --scenario {shlex.quote(scenario)}"
    if workload:
        command += " --workload balanced"  # the TUI's job runs 600 s; it is restarted if it ends first
    session = f"soak-{uuid.uuid4().hex[:8]}"
    tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", command)
    rows = []
    try:
        pid = int(tmux("display", "-p", "-t", session, "#{pane_pid}").strip())
        start = time.monotonic()
        end = start + minutes * 60
        next_sample = start + every_s
        while time.monotonic() < end:
            time.sleep(max(0.0, min(next_sample, end) - time.monotonic()))
            rows.append((time.monotonic() - start, *status(pid)))
            next_sample += every_s
    finally:
        tmux("send-keys", "-t", session, "q")
        time.sleep(3)
        tmux("kill-session", "-t", session)
    return command, rows


def growth_after(rows: list[tuple[float, float, int, int]], settle_s: float) -> tuple[float, float] | None:
    """(RSS at the first sample at or after `settle_s`, growth from there to the last sample) in MiB; None when
    the soak ended before `settle_s` (then from the first sample)."""
    settled = [row for row in rows if row[0] >= settle_s] or rows
    if len(settled) < 2:
        return None
    return settled[0][1], max(row[1] for row in settled) - settled[0][1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--no-workload", action="store_true")
    parser.add_argument("--demo", default="dgx-a100", help="a demo profile, or 'none' for this machine")
    args = parser.parse_args()
    command, rows = soak(args.minutes, args.interval, not args.no_workload, args.demo)
    print(f"# hwtop soak — {time.strftime('%Y-%m-%d %H:%M')} — {os.cpu_count()} CPUs; {command}; "
          f"{args.minutes:g} min")
    print(f"# rerun: python -m benchmarks.soak --minutes {args.minutes:g} --interval {args.interval:g}"
          + (" --no-workload" if args.no_workload else "") + f" --demo {args.demo}")
    print("| t (s) | RSS MiB | threads | open fds |")
    print("|---|---|---|---|")
    for t, rss, threads, fds in rows:
        print(f"| {t:.0f} | {rss:.1f} | {threads} | {fds} |")
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        print(f"\nRSS {first[1]:.1f} → {last[1]:.1f} MiB ({last[1] - first[1]:+.1f}); threads {first[2]} → {last[2]}; "
              f"fds {first[3]} → {last[3]}")


if __name__ == "__main__":
    main()
