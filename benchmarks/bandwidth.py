"""Bytes written to the terminal per second in steady state at a 1 s refresh — what an SSH link carries — for
hwtop, htop, btop (and glances, top) measured the same way: `tmux pipe-pane` copies what each writes to its pane.

    python -m benchmarks.bandwidth [--seconds 30]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from benchmarks.terminal_runs import measure, peers, ratio


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    seconds = parser.parse_args().seconds
    tools = peers(1.0)
    runs = [(name, argv, env) for name, (argv, env) in tools.items()]
    runs.append(("hwtop --demo dgx-a100", [*tools["hwtop"][0], "--demo", "dgx-a100"], {}))
    results = [measure(name, argv, env, seconds) for name, argv, env in runs]
    by_name = {r.name: r.bytes_per_s for r in results}
    print(f"# hwtop terminal bandwidth — {time.strftime('%Y-%m-%d')} — {platform.node()}, {os.cpu_count()} CPUs; "
          f"{seconds:g} s steady state, 1 s refresh, 200x50 tmux pane")
    print(f"# rerun: python -m benchmarks.bandwidth --seconds {seconds:g}\n")
    print("| monitor | bytes/s to the terminal | vs htop | vs btop |")
    print("|---|---|---|---|")
    for r in results:
        print(f"| {r.name} | {r.bytes_per_s:,.0f} | {ratio(r.bytes_per_s, by_name.get('htop'))} "
              f"| {ratio(r.bytes_per_s, by_name.get('btop'))} |")


if __name__ == "__main__":
    main()
