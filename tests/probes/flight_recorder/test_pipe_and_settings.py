"""Asking a rank for a dump writes to the FIFO its watchdog reads, and to nothing else; where a rank dumps is read
from its environment as torch reads it."""

from __future__ import annotations

import os
from pathlib import Path

from hwtop.probes.flight_recorder.pipe import request_dump
from hwtop.probes.flight_recorder.settings import LEGACY_PREFIX, settings_of
from tests.probes.flight_recorder.conftest import fake_proc


def test_a_dump_is_asked_through_the_ranks_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe_2.pipe")
    reader = os.open(tmp_path / "pipe_2.pipe", os.O_RDONLY | os.O_NONBLOCK)  # as DumpPipe opens it
    try:
        assert request_dump(f"{tmp_path}/pipe_", 2, os.getuid()) is None
        assert os.read(reader, 128) == b"1"
    finally:
        os.close(reader)


def test_no_pipe_is_said_and_nothing_is_made(tmp_path: Path) -> None:
    said = request_dump(f"{tmp_path}/pipe_", 0, os.getuid())
    assert said is not None and said.startswith("rank 0 has no dump pipe at")
    assert list(tmp_path.iterdir()) == []  # `echo 1 > path` would have made a regular file


def test_a_pipe_nobody_reads_is_said(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe_0.pipe")
    assert request_dump(f"{tmp_path}/pipe_", 0, os.getuid()) == f"nothing reads {tmp_path}/pipe_0.pipe: rank 0's " \
                                                                 "watchdog is not running"


def test_a_regular_file_or_a_link_at_the_pipe_is_not_written(tmp_path: Path) -> None:
    (tmp_path / "pipe_0.pipe").write_text("")
    assert request_dump(f"{tmp_path}/pipe_", 0, os.getuid()) == f"{tmp_path}/pipe_0.pipe is not a pipe: not written"
    assert (tmp_path / "pipe_0.pipe").read_text() == ""
    os.symlink(tmp_path / "elsewhere", tmp_path / "pipe_1.pipe")
    assert request_dump(f"{tmp_path}/pipe_", 1, os.getuid()) == \
        f"{tmp_path}/pipe_1.pipe is a symbolic link: not written"
    assert not (tmp_path / "elsewhere").exists()


def test_another_users_pipe_is_not_written_nor_any_where_the_user_is_unknown(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe_0.pipe")
    reader = os.open(tmp_path / "pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        said = request_dump(f"{tmp_path}/pipe_", 0, os.getuid() + 1)
        assert said is not None and "not the job's" in said
        said = request_dump(f"{tmp_path}/pipe_", 0, None)
        assert said == f"{tmp_path}/pipe_0.pipe: the job's user is unknown, so no file is known to be the job's: " \
                       "not written"
        assert os.read(reader, 128) == b""
    finally:
        os.close(reader)


def test_the_pipe_is_the_ranks_own_in_its_file_system(tmp_path: Path) -> None:
    """A containerised rank's pipe is at its path under its root; the host's FIFO at the same path is not asked."""
    inside = tmp_path / "container" / str(tmp_path).lstrip("/")
    inside.mkdir(parents=True)
    fake_proc(tmp_path / "proc", 77, 0.0, fs_root=str(tmp_path / "container"))
    readers = []
    for folder in (tmp_path, inside):
        os.mkfifo(folder / "pipe_0.pipe")
        readers.append(os.open(folder / "pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK))
    try:
        assert request_dump(f"{tmp_path}/pipe_", 0, os.getuid(), pid=77, proc=str(tmp_path / "proc")) is None
        assert [os.read(fd, 128) for fd in readers] == [b"", b"1"]
    finally:
        for fd in readers:
            os.close(fd)


def test_settings_as_torch_reads_them() -> None:
    got = settings_of({"TORCH_NCCL_TRACE_BUFFER_SIZE": "0", "TORCH_FR_BUFFER_SIZE": "2000",
                       "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/old_", "TORCH_FR_DUMP_TEMP_FILE": "/new_",
                       "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": "/p_"})
    assert (got.buffer, got.prefixes, got.pipe, got.dynamic) == (2000, ("/new_",), "/p_", False)
    assert settings_of({"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}).buffer == 0
    assert settings_of({"TORCH_FR_BUFFER_SIZE": "lots"}).buffer == 0  # torch's getCvarInt would not read it either
    unset = settings_of({"HOME": "/home/u"})
    assert unset.buffer is None and unset.prefixes[0] == "/home/u/.cache/torch/comm_lib_trace_rank_"
    assert unset.prefixes[-1] == LEGACY_PREFIX
    assert settings_of({"XDG_CACHE_HOME": "/c"}).prefixes[0] == "/c/torch/comm_lib_trace_rank_"
    assert settings_of({"TORCH_FR_DUMP_DYNAMIC_FILE_NAME": "1"}).dynamic
