"""Issue 46 in one run, under ten minutes: each goal's figure beside its goal, run by run.

- first paint by the terminal's clock (launch in a 200x50 tmux pane → the first full frame visible), hwtop against
  a bare Textual app, starts taking turns; the in-process figure (the program's first line → its first frame
  written) beside it;
- idle CPU at a 1 s refresh, hwtop against the floor (a bare Textual app redrawing one line a second) and btop, in
  each of `--runs` rounds (each round measures all of them once, taking turns);
- the big machine (`--demo dgx-a100 --scenario straggler-256`: 256 CPUs, 8 GPUs, 8 IB ports, 2,000 other
  processes, a 256-rank job, the job view open) against the idle box, in the same rounds;
- the soak's summary, read from the log `benchmarks/soak_log.py` writes (it runs two hours, so apart from this).

    python -m benchmarks.cost [--seconds 30] [--runs 3] [--starts 9] [--soak-log PATH] [--starts-only | --rounds-only]

Every tmux session it opens is closed on the end, on Ctrl-C and on SIGTERM/SIGHUP.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import statistics
import sys
import time
from types import FrameType

from benchmarks.startup import Start, paired_timed_starts
from benchmarks.terminal_runs import HWTOP, Measurement, compile_checkout, cpu_method, floor_app, measure, peers

GOALS = {"first paint": 1.15, "floor": 1.3, "btop": 0.8, "big": 1.5, "soak MiB": 5.0}
BIG_ARGS = ("--interval", "1", "--demo", "dgx-a100", "--scenario", "straggler-256")
SOAK_SETTLE_S = 600.0  # RSS flat within 5 MiB after the first 10 minutes


def verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "**missed**"


def rounds(seconds: float, runs: int) -> list[dict[str, Measurement]]:
    """hwtop idle, the floor, btop and the big machine, once each per round; who goes first turns round."""
    tools: list[tuple[str, list[str], dict[str, str], str | None]] = [
        ("hwtop", [*HWTOP, "--interval", "1"], {}, None),
        ("floor", floor_app(), {}, None),
        ("big", [*HWTOP, *BIG_ARGS], {}, "j"),
    ]
    btop = peers(1.0).get("btop")
    if btop is not None:
        tools.insert(2, ("btop", btop[0], btop[1], None))
    done: list[dict[str, Measurement]] = []
    for number in range(runs):
        turn = tools[number % len(tools):] + tools[:number % len(tools)]
        done.append({name: measure(name, argv, env, seconds, keys=keys) for name, argv, env, keys in turn})
    return done


def print_rounds(done: list[dict[str, Measurement]]) -> None:
    print("| run | hwtop CPU % | floor CPU % | hwtop / floor (≤ 1.3) | btop CPU % | hwtop / btop (≤ 0.8) | "
          "big CPU % | big / idle (≤ 1.5) | hwtop, big bytes/s | hwtop, big peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for number, r in enumerate(done, 1):
        hw, floor, big = r["hwtop"].cpu_percent, r["floor"].cpu_percent, r["big"].cpu_percent
        cells = [f"{number}", f"{hw:.2f}", f"{floor:.2f}", f"{hw / floor:.2f} {verdict(hw / floor, GOALS['floor'])}"]
        if "btop" in r:
            btop = r["btop"].cpu_percent
            cells += [f"{btop:.2f}", f"{hw / btop:.2f} {verdict(hw / btop, GOALS['btop'])}"]
        else:
            cells += ["not installed", "N/A"]
        cells += [f"{big:.2f}", f"{big / hw:.2f} {verdict(big / hw, GOALS['big'])}",
                  f"{r['hwtop'].bytes_per_s:,.0f}, {r['big'].bytes_per_s:,.0f}",
                  f"{r['hwtop'].peak_rss_mib:.1f}, {r['big'].peak_rss_mib:.1f}"]
        print("| " + " | ".join(cells) + " |")


def print_threads(done: list[dict[str, Measurement]]) -> None:
    """Each run's CPU split into the first thread (a Textual app's event loop: its render and write) and the others
    (hwtop's sampler; the floor's input thread, which polls ten times a second; btop's own): what a goal against
    the floor or btop leaves hwtop to spend, and where."""
    names = [name for name in ("hwtop", "floor", "btop", "big") if name in done[0]]
    print("\nWhere each run's CPU goes, % of one core: first thread + the others (the scheduler's own account, "
          "/proc/PID/task/TID/schedstat):\n")
    print("| run | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for number, r in enumerate(done, 1):
        cells = []
        for name in names:
            m = r[name]
            main = m.main_thread_percent
            cells.append(f"{m.cpu_percent:.2f}" if main is None else
                         f"{m.cpu_percent:.2f} = {main:.2f} + {max(0.0, m.cpu_percent - main):.2f}")
        print(f"| {number} | " + " | ".join(cells) + " |")


def print_first_paint(ours: list[Start], bare: list[Start]) -> None:
    def median(starts: list[Start], name: str) -> float:
        return statistics.median(getattr(s, name) for s in starts)

    o = {name: median(ours, name) for name in ("visible", "python_up", "written", "in_process")}
    b = {name: median(bare, name) for name in ("visible", "python_up", "written", "in_process")}
    ratio = o["visible"] / b["visible"]
    print(f"\nFirst paint, medians of {len(ours)} starts each, taking turns (s from the launch):\n")
    print("| figure | hwtop | bare Textual | hwtop / bare |")
    print("|---|---|---|---|")
    print(f"| **terminal: launch → the full frame visible** | {o['visible']:.3f} | {b['visible']:.3f} | "
          f"**{ratio:.2f}** (≤ {GOALS['first paint']}: {verdict(ratio, GOALS['first paint'])}) |")
    print(f"| in-process: the program's first line → its first frame written | {o['in_process']:.3f} | "
          f"{b['in_process']:.3f} | {o['in_process'] / b['in_process']:.2f} |")
    print(f"| launch → the program's first line (tmux, interpreter, site) | {o['python_up']:.3f} | "
          f"{b['python_up']:.3f} | |")
    print(f"| frame written → seen in the pane (pty, tmux, 10 ms polling) | {o['visible'] - o['written']:.3f} | "
          f"{b['visible'] - b['written']:.3f} | |")
    print("\nThe terminal's ratio is the user's: the launch (the same for both) is in it, so it is nearer 1 than "
          "the in-process one.")


def read_soak(path: str) -> tuple[list[str], list[tuple[float, float, int, int, float]]]:
    notes, rows = [], []
    with open(path) as handle:
        for line in handle:
            if line.startswith("#"):
                notes.append(line[1:].strip())
            elif line.strip():
                t, rss, threads, fds, cpu = line.split()
                rows.append((float(t), float(rss), int(threads), int(fds), float(cpu)))
    return notes, rows


def print_soak(path: str | None) -> None:
    if path is None:
        print("\nSoak: no --soak-log given (python -m benchmarks.soak_log --minutes 120 --log PATH, run apart)")
        return
    try:
        notes, rows = read_soak(path)
    except OSError as error:
        print(f"\nSoak: cannot read {path}: {error.strerror}")
        return
    state = "finished" if "done" in notes else "stopped by a signal" if any("signal" in n for n in notes) else \
        "still running, or killed"
    print(f"\nSoak ({path}): {notes[0] if notes else ''}; {state}; {len(rows)} samples, "
          f"last at {rows[-1][0] / 60 if rows else 0:.1f} min")
    settled = [r for r in rows if r[0] >= SOAK_SETTLE_S]
    if len(settled) < 2:
        print("Not yet 10 minutes of samples: no growth figure.")
        return
    growth = max(r[1] for r in settled) - settled[0][1]
    quarter = max(1, len(settled) // 4)
    early, late = statistics.mean(r[4] for r in settled[:quarter]), statistics.mean(r[4] for r in settled[-quarter:])
    print(f"RSS {rows[0][1]:.1f} MiB at {rows[0][0]:.0f} s, {settled[0][1]:.1f} at {settled[0][0]:.0f} s, "
          f"{rows[-1][1]:.1f} at {rows[-1][0]:.0f} s; largest growth after the 10th minute **{growth:+.1f} MiB** "
          f"(≤ 5: {verdict(growth, GOALS['soak MiB'])}); threads {rows[0][2]} → {rows[-1][2]}, fds {rows[0][3]} → "
          f"{rows[-1][3]}; CPU % (each sample's window) after the 10th minute: first quarter {early:.2f}, last "
          f"quarter {late:.2f}, min {min(r[4] for r in settled):.2f}, max {max(r[4] for r in settled):.2f}")


def _interrupted(_signal: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0, help="each measurement's window (after 6 s)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--starts", type=int, default=9, help="first paints of each, taking turns")
    parser.add_argument("--soak-log", default=None)
    parser.add_argument("--starts-only", action="store_true", help="first paint alone")
    parser.add_argument("--rounds-only", action="store_true", help="the CPU rounds alone (no first paint, no soak)")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupted)
    compile_checkout()
    print(f"# issue 46 — {time.strftime('%Y-%m-%d %H:%M')} — {platform.node()}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; 200x50 tmux panes, 1 s refresh")
    print(f"# rerun: python -m benchmarks.cost --seconds {args.seconds:g} --runs {args.runs} --starts {args.starts}"
          + (f" --soak-log {args.soak_log}" if args.soak_log else "")
          + (" --starts-only" if args.starts_only else "") + (" --rounds-only" if args.rounds_only else ""))
    print(f"# CPU: {cpu_method()}; {args.seconds:g} s windows after 6 s of warm-up\n", flush=True)
    try:
        if not args.rounds_only:
            ours, bare = paired_timed_starts(args.starts)
            print_first_paint(ours, bare)
            print(flush=True)
        if not args.starts_only:
            done = rounds(args.seconds, args.runs)
            print_rounds(done)
            print_threads(done)
    except KeyboardInterrupt:
        print("\ninterrupted: every tmux session it opened is closed")
        sys.exit(130)
    if not (args.starts_only or args.rounds_only):
        print_soak(args.soak_log)


if __name__ == "__main__":
    main()
