"""Asking a focused job's ranks for their dumps (`F` in the job view, `doctor --fr-dump`): each rank of this host
through the FIFO at its own pipe, as its own user, one line each; the ranks that set no pipe in one line with how to
set one; another host's ranks are never written for. Real FIFOs in tmp_path, a fake /proc."""

from __future__ import annotations

import os
from pathlib import Path

from hwtop.model.flight import FlightRank
from hwtop.model.job import RankFigures
from hwtop.probes.flight_recorder.ask import DUMPED_WHERE, SET_A_PIPE, ask_dumps
from tests.probes.flight_recorder.conftest import fake_proc


def ranks_of(proc: Path, environs: dict[int, str | None]) -> None:
    """A process per pid in `proc`, of this user, with its environment (None: none to read, as another user's)."""
    for pid, environ in environs.items():
        fake_proc(proc, pid, 0.0)
        if environ is not None:
            (proc / str(pid) / "environ").write_bytes(environ.encode() + b"\0HOME=/home/u\0")


def test_each_rank_is_asked_through_its_own_pipe_and_each_line_says_what_became_of_it(tmp_path: Path) -> None:
    proc, stem = tmp_path / "proc", f"{tmp_path}/fr_pipe_"
    ranks_of(proc, {101: f"TORCH_NCCL_DEBUG_INFO_PIPE_FILE={stem}", 102: None, 103: "RANK=2"})
    os.mkfifo(tmp_path / "fr_pipe_0.pipe")
    os.mkfifo(tmp_path / "fr_pipe_1.pipe")  # a rank whose watchdog is not running: nobody reads it
    reader = os.open(tmp_path / "fr_pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK)  # as DumpPipe opens it
    before = sorted(p.name for p in tmp_path.iterdir())
    ranks = [RankFigures(0, "here", pid=101),  # its recorder not read: its environment says where its pipe is
             RankFigures(1, "here", pid=102, flight=FlightRank(pipe=stem)),
             RankFigures(2, "here", pid=103),  # its environment sets no pipe
             RankFigures(3, "node-1", pid=101, nccl_only=True)]  # another host's: its pid is not this host's
    try:
        said = ask_dumps(ranks, proc=str(proc))
        assert os.read(reader, 128) == b"1"
    finally:
        os.close(reader)
    assert said == (f"rank 0 (pid 101): asked through {stem}0.pipe",
                    f"rank 1 (pid 102): nothing reads {stem}1.pipe: rank 1's watchdog is not running",
                    "rank 2: TORCH_NCCL_DEBUG_INFO_PIPE_FILE is not set in its environment, so there is no dump pipe "
                    f"to ask through; {SET_A_PIPE}",
                    "1 rank(s) on other hosts (known from NCCL's RAS) are not asked from here: hwtop doctor --fr-dump "
                    "on their hosts asks them",
                    DUMPED_WHERE)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made: no file at a pipe's path


def test_a_job_without_pipes_is_told_how_to_set_one_and_nothing_is_written(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    ranks_of(proc, {201: "RANK=0", 202: "RANK=1"})
    ranks = [RankFigures(0, "here", pid=201), RankFigures(1, "here", pid=202, flight=FlightRank(buffer=2000))]
    assert ask_dumps(ranks, proc=str(proc)) == (
        "ranks 0 and 1: the job does not set TORCH_NCCL_DEBUG_INFO_PIPE_FILE, so there is no dump pipe to ask "
        f"through; {SET_A_PIPE}",)
    assert SET_A_PIPE.startswith("start the job with TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/fr_pipe_ and "
                                 "TORCH_FR_BUFFER_SIZE>0")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proc"]


def test_a_rank_whose_environment_or_user_cannot_be_read_is_not_asked(tmp_path: Path) -> None:
    proc, stem = tmp_path / "proc", f"{tmp_path}/fr_pipe_"
    ranks_of(proc, {301: None, 302: None})
    (proc / "302" / "status").unlink()  # its user unknown (hidepid, or gone)
    os.mkfifo(tmp_path / "fr_pipe_1.pipe")
    reader = os.open(tmp_path / "fr_pipe_1.pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        said = ask_dumps([RankFigures(0, "here", pid=301), RankFigures(1, "here", pid=302, flight=FlightRank(
            pipe=stem))], proc=str(proc))
        assert os.read(reader, 128) == b""  # never written
    finally:
        os.close(reader)
    assert said == ("rank 0 (pid 301): its environment cannot be read (another user's process, or gone), so its "
                    "dump pipe is unknown: not asked",
                    f"rank 1 (pid 302): its user cannot be read from {proc}/302/status (gone, or hidden): not asked")


def test_a_job_with_no_rank_on_this_host_asks_nothing() -> None:
    assert ask_dumps([RankFigures(0, "node-1", pid=7, nccl_only=True)], proc="/nonexistent") == (
        "no rank of the job is known on this host (a rank is a process with RANK in its environment): nothing was "
        "asked",
        "1 rank(s) on other hosts (known from NCCL's RAS) are not asked from here: hwtop doctor --fr-dump on their "
        "hosts asks them")
