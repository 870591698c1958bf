"""hwtop's own cost on its host against btop, htop, glances and top, measured the same way in the same run: CPU %
of one core and peak RSS over a window at the same refresh in a 200x50 tmux pane. Also hwtop with --demo
dgx-a100, with the embedded workload running (hwtop's process only), and at a 0.2 s refresh.

    python -m benchmarks.overhead [--seconds 30]

Install the peers first where missing (Debian: apt-get install btop htop glances).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from benchmarks.terminal_runs import HWTOP, measure, peers, ratio


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    seconds = parser.parse_args().seconds
    tools = peers(1.0)
    hwtop = tools["hwtop"][0]
    runs = [(name, argv, env) for name, (argv, env) in tools.items()]
    runs += [("hwtop --demo dgx-a100", [*hwtop, "--demo", "dgx-a100"], {}),
             ("hwtop --interval 0.2", [*HWTOP, "--interval", "0.2"], {}),
             ("hwtop --workload balanced", [*hwtop, "--workload", "balanced"], {})]
    results = [measure(name, argv, env, seconds) for name, argv, env in runs]
    by_name = {r.name: r for r in results}
    print(f"# hwtop overhead — {time.strftime('%Y-%m-%d')} — {platform.node()}, {os.cpu_count()} CPUs, "
          f"{platform.platform()}; {seconds:g} s window after 6 s warm-up, 1 s refresh, 200x50 tmux pane")
    print(f"# rerun: python -m benchmarks.overhead --seconds {seconds:g}\n")
    print("| monitor | CPU % of one core | peak RSS MiB | CPU vs btop | vs htop | vs glances |")
    print("|---|---|---|---|---|---|")
    peers_cpu = {name: by_name[name].cpu_percent if name in by_name else None for name in ("btop", "htop", "glances")}
    for r in results:
        print(f"| {r.name} | {r.cpu_percent:.2f} | {r.peak_rss_mib:.1f} | {ratio(r.cpu_percent, peers_cpu['btop'])} "
              f"| {ratio(r.cpu_percent, peers_cpu['htop'])} | {ratio(r.cpu_percent, peers_cpu['glances'])} |")
    missing = [name for name in ("btop", "htop", "glances") if name not in by_name]
    if missing:
        print(f"\n(not installed here: {', '.join(missing)})")


if __name__ == "__main__":
    main()
