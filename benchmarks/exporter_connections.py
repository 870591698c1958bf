"""The exporter under a flood of idle and half-open connections (issue 17, item 5): its thread count, how many
connections it holds, and how long a normal scrape of /metrics takes meanwhile.

    python -m benchmarks.exporter_connections [--connections 2000] [--demo dgx-a100] [--tree DIR]

`hwtop export` runs as its own process on a free loopback port; this process opens the connections (half send
nothing, half send half a request head and stop), then times `--scrapes` ordinary GETs of /metrics, each on a
new connection, and reads the exporter's threads and open sockets from /proc. `--tree DIR` runs the exporter
from another checkout (e.g. the main branch) for a before/after comparison.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def threads_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("Threads:")))


def sockets_of(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return count


def scrape_seconds(url: str, timeout: float) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body = response.read()
    if b"DCGM_FI_DEV_GPU_UTIL" not in body:
        raise RuntimeError("the scrape did not return the GPU series")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--scrapes", type=int, default=10)
    parser.add_argument("--demo", default="dgx-a100")
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the checkout whose exporter runs (default: this one)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.connections + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.connections + 256), hard))
    port = free_port()
    env = dict(os.environ, PYTHONPATH=args.tree)
    exporter = subprocess.Popen([sys.executable, "-m", "hwtop", "--demo", args.demo, "export", "--listen",
                                 f"127.0.0.1:{port}"], env=env, stderr=subprocess.DEVNULL, cwd=args.tree)
    url = f"http://127.0.0.1:{port}/metrics"
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                scrape_seconds(url, 5)
                break
            except (OSError, RuntimeError):  # not listening yet, or no tick yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        quiet = [scrape_seconds(url, 5) for _ in range(args.scrapes)]
        threads_before = threads_of(exporter.pid)
        peak_threads = threads_before
        opened_at = time.perf_counter()
        refused = 0
        for i in range(args.connections):
            if time.perf_counter() - opened_at > 60:
                print(f"gave up opening connections after 60 s, at {i}", file=sys.stderr)
                break
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=2)
            except OSError:
                refused += 1
                continue
            if i % 2:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: bench\r\n")  # half a head, then silence
            held.append(sock)
            if i % 100 == 0:
                peak_threads = max(peak_threads, threads_of(exporter.pid))
        open_s = time.perf_counter() - opened_at
        time.sleep(1.0)  # let the exporter accept them all
        busy = []
        for _ in range(args.scrapes):
            try:
                busy.append(scrape_seconds(url, 5))
            except OSError as error:  # counted as an infinite latency
                busy.append(float("inf"))
                print(f"scrape failed within 5 s: {error}", file=sys.stderr)
        threads_after, sockets_after = threads_of(exporter.pid), sockets_of(exporter.pid)
        peak_threads = max(peak_threads, threads_after)
        print(f"# exporter under {args.connections} idle/half-open connections — {args.demo}, "
              f"{os.cpu_count()} CPUs, tree {args.tree}")
        print(f"# rerun: python -m benchmarks.exporter_connections --connections {args.connections} "
              f"--demo {args.demo}" + (f" --tree {args.tree}" if "--tree" in sys.argv else ""))
        print(f"connections opened by the client: {len(held)} in {open_s:.2f} s ({refused} refused)")
        print(f"exporter sockets open after 1 s: {sockets_after}")
        print(f"exporter threads: {threads_before} before, {threads_after} with the connections open "
              f"(peak seen {peak_threads})")
        print(f"scrape of /metrics, quiet: median {statistics.median(quiet) * 1000:.1f} ms, "
              f"max {max(quiet) * 1000:.1f} ms")
        print(f"scrape of /metrics, connections open: median {statistics.median(busy) * 1000:.1f} ms, "
              f"max {max(busy) * 1000:.1f} ms ({args.scrapes} scrapes)")
        return 0 if max(busy) < 1.0 else 1
    finally:
        for sock in held:
            sock.close()
        exporter.send_signal(signal.SIGTERM)
        try:
            exporter.wait(20)
        except subprocess.TimeoutExpired:
            exporter.kill()


if __name__ == "__main__":
    sys.exit(main())
