"""`doctor --fr-dump`: only with a job to watch (--pid/--job; else exit 2 in one line); once the job's ranks on this
host have all been seen, each is asked for its Flight Recorder dump, once, and the report says what became of each,
in its text and in its JSON (`fr_dump`). Without the option nothing is asked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from msgspec.structs import replace

import hwtop.cli.doctor.watch as watch_module
from hwtop.cli.doctor import run_doctor
from hwtop.cli.doctor.render import as_json, text
from hwtop.cli.main import run_command
from hwtop.model.flight import FlightRank
from hwtop.model.job import JobProcess, RankFigures
from hwtop.model.snapshot import Snapshot
from hwtop.probes.flight_recorder.ask import DUMPED_WHERE, SET_A_PIPE
from hwtop.session.session import Session
from tests.cli.test_doctor_settle import WatchClock  # doctor's clock, moved by its own sleeps
from tests.factories import SequenceSource
from tests.small_screen import job_snapshot

HEAD = "Flight Recorder (--fr-dump: each rank asked for its dump through its dump pipe):"


@pytest.mark.parametrize("argv", [["doctor", "--fr-dump"], ["doctor", "--workload", "balanced", "--fr-dump"]],
                         ids=["no-job", "workload"])
def test_fr_dump_without_a_running_job_exits_2_with_one_line(capsys, argv) -> None:
    with pytest.raises(SystemExit) as stop:
        run_command(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "hwtop: error: --fr-dump asks a running job's ranks for their Flight Recorder dumps: it " \
                           "needs --pid or --job\n"




def two_rank_job(stem: str) -> list[Snapshot]:
    """A job of two local ranks (LOCAL_WORLD_SIZE 2) whose first tick has read one of them: rank 0 (this process,
    so its user and file system are this test's) with a dump pipe, rank 1 with none."""
    base = job_snapshot()
    assert base.job is not None
    processes = tuple(JobProcess(pid, 1, "python", "python train.py", f"rank {rank}", rank, 0, "R", 90.0, 1 << 30, 8,
                                 (0, 1), local_world_size=2) for rank, pid in ((0, os.getpid()), (1, 999_999_999)))
    ranks = (RankFigures(0, "here", pid=os.getpid(), flight=FlightRank(buffer=2000, pipe=stem)),
             RankFigures(1, "here", pid=999_999_999, flight=FlightRank(buffer=2000)))
    return [replace(base, job=replace(base.job, processes=processes, ranks=ranks[:n])) for n in (1, 2)]


def watched(snapshots: list[Snapshot], fr_dump: bool):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(watch_module, "time", WatchClock())
        done = run_doctor(Session(SequenceSource(snapshots)), 0.05, 0.01, None, fr_dump=fr_dump)
    assert done is not None and done.facts.ticks == 6
    return done


def test_fr_dump_asks_each_rank_once_its_ranks_are_all_seen_and_reports_what_became_of_each(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fr_pipe_0.pipe")
    reader = os.open(tmp_path / "fr_pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK)  # rank 0's watchdog
    try:
        done = watched(two_rank_job(f"{tmp_path}/fr_pipe_"), fr_dump=True)
        assert os.read(reader, 128) == b"1"  # once, over six ticks
    finally:
        os.close(reader)
    said = (f"rank 0 (pid {os.getpid()}): asked through {tmp_path}/fr_pipe_0.pipe",
            "rank 1: TORCH_NCCL_DEBUG_INFO_PIPE_FILE is not set in its environment, so there is no dump pipe to ask "
            f"through; {SET_A_PIPE}", DUMPED_WHERE)
    assert done.facts.fr_dump == said  # rank 1 was seen too: asked at the second tick, not the first
    lines = text(done).splitlines()
    at = lines.index(HEAD)
    assert lines[at + 1:at + 4] == [f"  {line}" for line in said]
    assert json.loads(json.dumps(as_json(done)))["fr_dump"] == list(said)  # as --json prints it


def test_without_fr_dump_nothing_is_asked_or_reported(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fr_pipe_0.pipe")
    reader = os.open(tmp_path / "fr_pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = watched(two_rank_job(f"{tmp_path}/fr_pipe_"), fr_dump=False)
        assert os.read(reader, 128) == b""  # no writer ever opened it
    finally:
        os.close(reader)
    assert done.facts.fr_dump is None and "fr_dump" not in as_json(done) and HEAD not in text(done)
