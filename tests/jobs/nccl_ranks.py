"""A stand-in for a launcher of NCCL ranks, for the NCCL RAS tests: it starts LOCAL ranks (Python children with
RANK, LOCAL_RANK, WORLD_SIZE and NCCL_RAS_ADDR in their environment, as torchrun sets them), each of which maps a
file named libnccl.so.2 (so /proc/PID/maps shows NCCL loaded, as torch's CUDA build does) and then waits for its
stdin to close. Prints each rank's pid, one line each, then waits for them.

    python nccl_ranks.py LIBNCCL RAS_ADDR WORLD_SIZE LOCAL_RANKS"""

from __future__ import annotations

import os
import subprocess
import sys

RANK = """
import mmap, sys
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
sys.stdout.write("ready\\n")
sys.stdout.flush()
sys.stdin.read()
"""


def main() -> None:
    lib, address, world, local = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ranks = []
    for rank in range(local):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": world,
               "LOCAL_WORLD_SIZE": str(local), "NCCL_RAS_ADDR": address}
        child = subprocess.Popen([sys.executable, "-c", RANK, lib], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        child.stdout.readline()  # mapped
        ranks.append(child)
    print(" ".join(str(child.pid) for child in ranks), flush=True)
    sys.stdin.read()  # the test closes it when done
    for child in ranks:
        child.communicate("")


if __name__ == "__main__":
    main()
