"""NCCL RAS at scale (issue 42): the JSON answer of a job of 4,096 ranks on 512 nodes (8 GPUs a node, one
communicator of every rank plus one per node), parsed, folded into the tracker, joined with the job's ranks and
judged (hung rank, straggler, lost ranks, errors), then the rank table's worst rows drawn, as the watch thread
and a tick do once per answer. The target: within 0.2 s, off the UI thread. Then the tick's side between answers:
RasWatch.attach joining the latest answer with the job's ranks, a new tuple each tick as the job probe gives them
(every tick, every second: what it costs is paid all the time). Best of N on a loaded box; for an A/B of code
changes, count instructions instead:

    python -m benchmarks.ras_scale [--ranks 4096] [--nodes 512] [--repeat 7]
    valgrind --tool=callgrind --callgrind-out-file=/tmp/ras.cg python -m benchmarks.ras_scale --repeat 1
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import time

from hwtop.advice.nccl_ranks import errors, hang, missing, straggler
from hwtop.advice.thresholds import Thresholds
from hwtop.model.job import JobProcess, JobSnapshot, RankFigures
from hwtop.model.ras import NcclView
from hwtop.probes.nccl_ras.client import Address, RasError, RawReply
from hwtop.probes.nccl_ras.join import Here, join_ranks
from hwtop.probes.nccl_ras.parse_json import parse_json
from hwtop.probes.nccl_ras.track import Tracker
from hwtop.probes.nccl_ras.watch import RasWatch
from hwtop.widgets.job_ranks import rank_table

OPS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")


def rank_json(rank: int, host: str, pid: int, gpu: int, at: int) -> str:
    counts = ",\n".join(f'            "{op}": {at if op == "AllReduce" else 3}' for op in OPS)
    return (f'        {{\n          "rank": {rank},\n          "host": "{host}",\n          "pid": {pid},\n'
            f'          "cuda_dev": {gpu},\n          "nvml_dev": {gpu},\n          "status": {{\n'
            '            "init_state": 0,\n            "async_error": 0,\n            "finalize_called": false,\n'
            '            "destroy_flag": false,\n            "abort_flag": false\n          },\n'
            f'          "collective_counts": {{\n{counts}\n          }}\n        }}')


def comm_json(comm_hash: int, members: list[tuple[int, str, int, int, int]]) -> str:
    ranks = ",\n".join(rank_json(*m) for m in members)
    return (f'    {{\n      "hash": "0x{comm_hash:x}",\n      "secondary_hash": "0x1:0x2",\n'
            f'      "size": {len(members)},\n      "ranks_count": {len(members)},\n'
            f'      "missing_ranks_count": 0,\n      "ranks": [\n{ranks}\n'
            '      ],\n      "missing_ranks": [\n\n      ]\n    }')


def reply(ranks: int, nodes: int, step: int, late: int) -> str:
    per = ranks // nodes
    world = [(r, f"10.{r // per // 256}.{r // per % 256}.1", 100_000 + r, r % per, 6650 + step - (r == late))
             for r in range(ranks)]
    comms = [comm_json(0xABCDEF, world)]
    comms += [comm_json(0x1000 + n, [(i, m[1], m[2], m[3], 40 + step) for i, m in enumerate(world[n * per:(n + 1)
                                                                                                   * per])])
              for n in range(nodes)]
    return ('{\n  "nccl_version": "2.30.3",\n  "cuda_runtime_version": 13000,\n  "cuda_driver_version": 13000,\n'
            f'  "timestamp": "2026-12-06 01:00:00",\n  "communicators_count": {len(comms)},\n  "communicators": [\n'
            + ",\n".join(comms) + '\n  ],\n  "ras": {\n    "collection_time_sec": 0.120,\n    "timeouts_count": 0\n'
            '  }\n}\n')


def one_answer(text: str, tracker: Tracker, at: float, local: tuple[RankFigures, ...], t: Thresholds) -> int:
    parsed = parse_json(text)
    comms = tracker.update(parsed, at)
    view = NcclView("localhost:28028", "bench", comms, 1, at, "json", reply_bytes=len(text), main_key=tracker.main)
    ranks = join_ranks(local, view, Here(frozenset({"10.0.0.1"}), {r.pid: r.pid for r in local if r.pid is not None}))
    hang(view, t), straggler(view, t), missing(view), errors(view)
    job = JobSnapshot("bench", (1,), "running", (), None, 0, ranks=ranks, nccl=view)
    return len(rank_table(job, 160))


def no_monitor(address: Address) -> tuple[socket.socket, bytes]:
    raise RasError("not in this benchmark")


def tick_times(text: str, local: tuple[RankFigures, ...], ticks: int) -> tuple[list[float], list[float]]:
    """RasWatch.attach once the answer is in (asked once, at an hour's interval: no other answer comes): wall and
    the thread's CPU seconds (the steadier of the two on a loaded box) of each tick."""
    processes = tuple(JobProcess(r.pid or 0, 1, "python", "python train.py", f"rank {r.rank}", r.rank, 0, "S", 1.0, 1,
                                 1, None) for r in local)

    def job() -> JobSnapshot:
        return JobSnapshot("bench", (1,), "running", processes, None, 0, ranks=tuple([*local]))  # a new tuple a tick

    with tempfile.TemporaryDirectory() as proc:
        watch = RasWatch(Address("127.0.0.1", 9), interval_s=3600.0, proc=proc, polls=True,
                         ask=lambda *_: RawReply("json", text, 2), addresses=lambda: frozenset({"10.0.0.1"}),
                         answers_json=lambda _: True, monitor=no_monitor)
        try:
            end = time.monotonic() + 60.0
            while not ((view := watch.attach(job(), 0.0).nccl) and view.queries) and time.monotonic() < end:
                time.sleep(0.05)
            times, cpu = [], []
            for _ in range(ticks):
                snapshot = job()
                start, start_cpu = time.perf_counter(), time.thread_time()
                watch.attach(snapshot, 0.0)
                times.append(time.perf_counter() - start)
                cpu.append(time.thread_time() - start_cpu)
            return times, cpu
        finally:
            watch.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--ticks", type=int, default=50)
    args = parser.parse_args()
    t = Thresholds()
    texts = [reply(args.ranks, args.nodes, step, late=1234 if step % 3 else 99) for step in range(args.repeat + 1)]
    local = tuple(RankFigures(r, "node-0", 100_000 + r, samples=40, shares=(("collective", 0.9),))
                  for r in range(args.ranks // args.nodes))
    tracker = Tracker()
    one_answer(texts[0], tracker, 0.0, local, t)  # the first answer: tracker state from nothing
    times = []
    for step, text in enumerate(texts[1:], 1):
        start = time.perf_counter()
        rows = one_answer(text, tracker, 10.0 * step, local, t)
        times.append(time.perf_counter() - start)
    print(f"# NCCL RAS at scale — {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.2f}")
    print(f"# rerun: python -m benchmarks.ras_scale --ranks {args.ranks} --nodes {args.nodes} --repeat {args.repeat} "
          f"--ticks {args.ticks}")
    print(f"ranks {args.ranks} on {args.nodes} nodes, {1 + args.nodes} communicators; JSON answer "
          f"{len(texts[1]) / 1e6:.2f} MB; table rows drawn {rows}")
    print(f"parse + track + join + judge + table: best {1000 * min(times):.0f} ms, median "
          f"{1000 * sorted(times)[len(times) // 2]:.0f} ms of {len(times)} (target 200 ms)")
    ticks, cpu = tick_times(texts[1], local, args.ticks)
    print(f"a tick between answers (RasWatch.attach, the job's ranks a new tuple): best {1000 * min(ticks):.1f} ms, "
          f"median {1000 * sorted(ticks)[len(ticks) // 2]:.1f} ms of {len(ticks)}; its thread's CPU: best "
          f"{1000 * min(cpu):.1f} ms, median {1000 * sorted(cpu)[len(cpu) // 2]:.1f} ms")


if __name__ == "__main__":
    main()
