"""Issue 46's soak, run in the background and read while it runs: hwtop at a 0.5 s refresh on the dgx-a100
straggler-256 story (256-rank job, 2,000 other processes), job view open, in a 200x50 tmux pane; every
`--every` seconds one line appended (and flushed) to `--log`: t, RSS, threads, open fds and the CPU % of one core
since the last line. The tmux session is closed on the end, SIGTERM, SIGHUP or Ctrl-C. `peers.py --soak-log`
summarises a log (RSS growth after the 10th minute, CPU first and last quarter).

    nohup setsid python -m benchmarks.soak_log --minutes 120 --log soak.log &
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import time
import uuid
from types import FrameType

from benchmarks.soak import status
from benchmarks.terminal_runs import HWTOP, process_cpu_clock, tmux

HEADER = "# t_s rss_mib threads fds cpu_percent"


class Stop(Exception):
    pass


def _stop(_signal: int, _frame: FrameType | None) -> None:
    raise Stop


def run(minutes: float, interval: float, every_s: float, log: str, demo: str, scenario: str, keys: str) -> None:
    command = "exec " + shlex.join([*HWTOP, "--interval", f"{interval:g}", "--demo", demo, "--scenario", scenario])
    session = f"soak-{uuid.uuid4().hex[:8]}"
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _stop)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with os.fdopen(os.open(log, flags, 0o644), "w", buffering=1) as out:
        out.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {minutes:g} min, sample every {every_s:g} s; "
                  f"{command}; keys {keys!r}\n{HEADER}\n")
        tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", command)
        try:
            pid = int(tmux("display", "-p", "-t", session, "#{pane_pid}").strip())
            if keys:
                time.sleep(3.0)
                tmux("send-keys", "-t", session, keys)
            start = time.monotonic()
            last_t, last_cpu = start, process_cpu_clock(pid) or 0.0
            end, next_sample = start + minutes * 60, start + every_s
            while time.monotonic() < end:
                time.sleep(max(0.0, min(next_sample, end) - time.monotonic()))
                now, cpu = time.monotonic(), process_cpu_clock(pid)
                if cpu is None:
                    out.write(f"# hwtop (pid {pid}) is gone at {now - start:.0f} s\n")
                    break
                rss, threads, fds = status(pid)
                percent = 100 * (cpu - last_cpu) / (now - last_t)
                out.write(f"{now - start:.0f} {rss:.1f} {threads} {fds} {percent:.2f}\n")
                last_t, last_cpu, next_sample = now, cpu, next_sample + every_s
            out.write("# done\n")
        except Stop:
            out.write("# stopped by a signal\n")
        finally:
            tmux("send-keys", "-t", session, "q")
            time.sleep(2)
            tmux("kill-session", "-t", session)


def read_log(path: str) -> list[tuple[float, float, int, int, float]]:
    rows = []
    with open(path) as handle:
        for line in handle:
            if line.strip() and not line.startswith("#"):
                t, rss, threads, fds, cpu = line.split()
                rows.append((float(t), float(rss), int(threads), int(fds), float(cpu)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--every", type=float, default=30.0)
    parser.add_argument("--demo", default="dgx-a100")
    parser.add_argument("--scenario", default="straggler-256")
    parser.add_argument("--keys", default="j", help="typed once after 3 s ('j': the job view)")
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    run(args.minutes, args.interval, args.every, args.log, args.demo, args.scenario, args.keys)


if __name__ == "__main__":
    main()
