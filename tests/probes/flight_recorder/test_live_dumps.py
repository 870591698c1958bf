"""Real Flight Recorder dumps of a real job: tests/jobs/ddp_hang.py under torchrun (gloo, 3 ranks), each rank asked
for its dump through its dump pipe (the stand-in of tests/jobs/fr_pipe/), read by the reader from the ranks' own
environment under the real /proc, and judged: the rank blocked before the all-reduce never launched it, the others
launched it and wait, blamed on nobody; a healthy job and one whose ranks wait most of each step stay quiet."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hwtop.advice.ranks import Look, judge
from hwtop.advice.thresholds import Thresholds
from hwtop.model.job import RankFigures
from hwtop.probes.flight_recorder.pipe import request_dump
from hwtop.probes.flight_recorder.reader import FlightRecorderReader, RankProcess
from hwtop.probes.job import JobProbe
from hwtop.probes.job.flight import READ_EVERY_S
from tests.live_processes import descendants, kill_tree

JOBS = Path(__file__).resolve().parents[2] / "jobs"
WORLD = 3
pytestmark = [pytest.mark.slow, pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                                   reason="the job needs torch")]


@contextmanager
def job(tmp_path: Path, *args: str) -> Iterator[dict[int, tuple[int, dict[str, str]]]]:
    """The job's ranks once training has begun: rank -> (pid, its environment as /proc shows it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"TORCH_FR_BUFFER_SIZE": "2000", "TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/fr_rank_",
                "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": f"{tmp_path}/pipe_", "PYTHONPATH": str(JOBS / "fr_pipe"),
                "OMP_NUM_THREADS": "1"})
    process = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                                str(WORLD), str(JOBS / "ddp_hang.py"), "--time-limit", "300", *args], cwd=JOBS,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("step "):
                break
        ranks = {}
        for pid in descendants(process.pid):
            try:
                items = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            environ = dict(i.decode().split("=", 1) for i in items if b"=" in i)
            if "RANK" in environ and b"ddp_hang" in Path(f"/proc/{pid}/cmdline").read_bytes():
                ranks[int(environ["RANK"])] = (pid, environ)
        assert len(ranks) == WORLD, ranks
        yield ranks
    finally:
        kill_tree(process.pid)
        process.wait(30)


def ask(tmp_path: Path, ranks: dict[int, tuple[int, dict[str, str]]]) -> None:
    """Each rank asked for its dump through its pipe."""
    for rank, (pid, _) in ranks.items():  # at its path in its own file system (/proc/PID/root), as the reader reads
        assert request_dump(f"{tmp_path}/pipe_", rank, os.getuid(), pid=pid) is None


def dumped(tmp_path: Path, ranks: dict[int, tuple[int, dict[str, str]]]) -> list[RankFigures]:
    """Each rank asked for its dump through its pipe, read once all are written; the ranks' figures with them."""
    ask(tmp_path, ranks)
    reader = FlightRecorderReader()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(1.0)
        read = reader.read([RankProcess(pid, rank, env) for rank, (pid, env) in ranks.items()])
        if all(f.dump is not None for f in read.values()):
            break
    time.sleep(1.0)  # written in place: read again once the last has surely finished
    read = FlightRecorderReader().read([RankProcess(pid, rank, env) for rank, (pid, env) in ranks.items()])
    assert all(f.dump is not None for f in read.values()), {p: f.refused for p, f in read.items()}
    return [RankFigures(rank, "here", pid=pid, flight=read[pid]) for rank, (pid, _) in sorted(ranks.items())]


def test_the_rank_blocked_before_the_all_reduce_never_launched_it_and_the_others_are_not_blamed(tmp_path):
    with job(tmp_path, "--hang-rank", "1", "--hang-step", "5") as ranks:
        time.sleep(Thresholds()["rank_hang_s"] + 5)
        figures = dumped(tmp_path, ranks)
    verdicts = judge(Look(figures), None, Thresholds())
    one = verdicts.of(1)
    assert one is not None and one.state == "before-collective" and one.blamed, verdicts
    assert one.words.startswith("never launched all_reduce #") and "which ranks 0 and 2 launched" in one.words
    assert "(at ddp_hang.py:65 main)" in one.agree[0]  # where the others launched it: loss.backward()
    for rank in (0, 2):
        other = verdicts.of(rank)
        assert other is not None and other.state == "inside-collective" and not other.blamed
        assert other.held_by == (1,) and other.site == "ddp_hang.py:65 main"


def test_the_job_probe_reads_the_ranks_recorders_and_the_blocked_rank_is_named_by_them(tmp_path):
    """No figures made by hand: the job probe, pointed at a rank, finds the job and reads each rank's recorder."""
    with job(tmp_path, "--hang-rank", "1", "--hang-step", "5") as ranks:
        probe = JobProbe(roots=(ranks[0][0],))
        try:
            probe.check()  # the rank named leads to its launcher: the whole job
            probe.read()
            time.sleep(Thresholds()["rank_hang_s"] + 5)
            ask(tmp_path, ranks)
            deadline, snapshot = time.monotonic() + 60, probe.read()
            while time.monotonic() < deadline and not (
                    len(snapshot.ranks) == WORLD and all(r.flight and r.flight.dump for r in snapshot.ranks)):
                time.sleep(1.0)
                snapshot = probe.read()
            time.sleep(READ_EVERY_S + 1)  # written in place: looked at again once the last has surely finished
            snapshot = probe.read()
        finally:
            probe.close()
    assert [(r.rank, r.pid) for r in snapshot.ranks] == [(rank, pid) for rank, (pid, _) in sorted(ranks.items())]
    assert all(r.flight is not None and r.flight.dump is not None for r in snapshot.ranks), snapshot.ranks
    one = judge(Look(list(snapshot.ranks)), None, Thresholds()).of(1)
    assert one is not None and one.state == "before-collective" and one.by == "flight-recorder", one


@pytest.mark.parametrize("args", [(), ("--wait-ms", "150")])
def test_a_healthy_job_and_one_whose_ranks_mostly_wait_are_quiet(tmp_path, args):
    with job(tmp_path, *args) as ranks:
        time.sleep(5)
        figures = dumped(tmp_path, ranks)
    verdicts = judge(Look(figures), None, Thresholds())
    assert not verdicts.blamed and {v.state for v in verdicts.ranks} <= {"running", "unknown"}, verdicts
