"""Instructions of a small /proc read through open() against os.open/os.read (probes/processes.py's `_read`),
counted by callgrind in user space (the kernel's side of the system calls, the same both ways, is not in it):
each way N reads of /proc/self/stat, less a run that reads nothing, over N.

    python -m benchmarks.proc_reads [--reads 5000]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

PATH = "/proc/self/stat"


def read_with(way: str, reads: int) -> None:
    for _ in range(reads if way != "none" else 0):
        if way == "open":
            with open(PATH, "rb") as f:
                f.read()
        else:
            fd = os.open(PATH, os.O_RDONLY)
            try:
                os.read(fd, 65536)
            finally:
                os.close(fd)


def instructions(way: str, reads: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
                        "benchmarks.proc_reads", "--run", way, "--reads", str(reads)], check=True,
                       capture_output=True)
        with open(out, encoding="utf-8", errors="replace") as f:
            found = re.search(r"^summary: (\d+)", f.read(), re.M)
        assert found is not None
        return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--run", choices=["none", "open", "os"])
    args = parser.parse_args()
    if args.run:
        read_with(args.run, args.reads)
        return
    base = instructions("none", args.reads)
    for way in ("open", "os"):
        print(f"{way}: {(instructions(way, args.reads) - base) / args.reads:,.0f} instructions a read")
    print(f"# rerun: python -m benchmarks.proc_reads --reads {args.reads}")


if __name__ == "__main__":
    main()
