"""Every file the reader opens is the job's, as the job sees it, and opening it cannot stop the tick: a FIFO or a
link at any path the reader opens (the torch version file beside the libtorch a rank maps, a dump) is refused at
once, a file of another user is refused, and paths are resolved in the rank's own file system view (/proc/PID/root:
a containerised job's /tmp is not the host's)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from hwtop.model.flight import FlightRank
from hwtop.probes.flight_recorder.reader import FlightRecorderReader, RankProcess
from tests.probes.flight_recorder.conftest import fake_proc, lay_out

PID = 4343
as_root = pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")


def _torch(folder: Path, version: str = "2.7.0") -> Path:
    """A torch install: its lib/ and its version.py, as pip lays it out; the torch folder."""
    (folder / "lib").mkdir(parents=True)
    (folder / "version.py").write_text(f"__version__ = '{version}'\ngit_version = 'abc'\n")
    return folder


def _maps(proc: Path, torch: Path) -> None:
    (proc / str(PID) / "maps").write_text(
        f"7f2a00000000-7f2a00100000 r-xp 00000000 08:01 4242 {torch}/lib/libtorch_cpu.so\n")


def _read(proc: Path, environ: dict[str, str] | None = None) -> FlightRank:
    return FlightRecorderReader(proc=str(proc)).read([RankProcess(PID, 0, environ or {})])[PID]


def _returns_at_once(read: Callable[[], FlightRank], fifo: Path) -> FlightRank:
    """`read()` in a thread, waited on; a reader blocked opening the FIFO is released (a writer opened) and fails."""
    done = threading.Event()
    got: list[FlightRank] = []
    worker = threading.Thread(target=lambda: (got.append(read()), done.set()), daemon=True)
    worker.start()
    if not done.wait(10):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # lets the blocked open() return, so nothing is left
        worker.join(10)
        pytest.fail(f"the reader blocked opening the FIFO at {fifo}")
    return got[0]


def test_a_fifo_at_the_torch_version_file_returns_at_once(tmp_path: Path) -> None:
    torch = _torch(tmp_path / "site" / "torch")
    (torch / "version.py").unlink()
    os.mkfifo(torch / "version.py")
    fake_proc(tmp_path / "proc", PID, 0.0)
    _maps(tmp_path / "proc", torch)
    assert _returns_at_once(lambda: _read(tmp_path / "proc"), torch / "version.py").torch_version is None


def test_a_fifo_at_a_dump_returns_at_once_and_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fr_rank_0")
    fake_proc(tmp_path / "proc", PID, 0.0)
    got = _returns_at_once(lambda: _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/fr_rank_"}),
                           tmp_path / "fr_rank_0")
    assert got.dump is None and got.refused == f"{tmp_path}/fr_rank_0 is not a regular file"


def test_the_torch_version_is_read_beside_the_libtorch_the_rank_maps(tmp_path: Path) -> None:
    torch = _torch(tmp_path / "site" / "torch", "2.7.0")
    fake_proc(tmp_path / "proc", PID, 0.0)
    _maps(tmp_path / "proc", torch)
    assert _read(tmp_path / "proc").torch_version == "2.7.0"


def test_a_link_at_the_torch_version_file_is_not_followed(tmp_path: Path) -> None:
    torch = _torch(tmp_path / "site" / "torch")
    os.replace(torch / "version.py", tmp_path / "elsewhere.py")
    os.symlink(tmp_path / "elsewhere.py", torch / "version.py")
    fake_proc(tmp_path / "proc", PID, 0.0)
    _maps(tmp_path / "proc", torch)
    assert _read(tmp_path / "proc").torch_version is None


@as_root
def test_a_torch_version_file_of_another_user_is_not_read_but_roots_install_is(tmp_path: Path) -> None:
    torch = _torch(tmp_path / "site" / "torch")
    fake_proc(tmp_path / "proc", PID, 0.0, uid=12345)  # the job's user; the install is root's (this test's)
    _maps(tmp_path / "proc", torch)
    assert _read(tmp_path / "proc").torch_version == "2.7.0"
    os.chown(torch / "version.py", 23456, 23456)  # neither the job's user nor root
    assert _read(tmp_path / "proc").torch_version is None


def test_the_torch_version_is_read_in_the_ranks_own_file_system(tmp_path: Path) -> None:
    """A containerised rank maps its container's libtorch at a path the host may hold too: its version is the
    container's, found under /proc/PID/root."""
    torch = _torch(tmp_path / "site" / "torch", "1.0.0")  # the host's, at the path the rank's maps names
    _torch(tmp_path / "container" / str(torch).lstrip("/"), "2.7.0")
    fake_proc(tmp_path / "proc", PID, 0.0, fs_root=str(tmp_path / "container"))
    _maps(tmp_path / "proc", torch)
    assert _read(tmp_path / "proc").torch_version == "2.7.0"


def test_dumps_are_found_in_the_ranks_own_file_system(tmp_path: Path) -> None:
    """The prefix is the rank's path: read under its root, never the host's file at the same path."""
    container = tmp_path / "container"
    inside = container / str(tmp_path).lstrip("/")
    inside.mkdir(parents=True)
    lay_out("healthy", tmp_path)  # the host's /tmp holds another job's dumps at the same path
    lay_out("hang", inside)
    fake_proc(tmp_path / "proc", PID, 0.0, fs_root=str(container))
    got = _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/fr_rank_"})
    assert got.dump is not None and got.dump.path == f"{tmp_path}/fr_rank_0"  # the rank's own name for it
    assert got.dump.groups[0].launched == 26  # the hang's, not the healthy job's 812


def test_the_default_prefix_is_under_the_ranks_home_in_its_own_file_system(tmp_path: Path) -> None:
    container = tmp_path / "container"
    (container / "home" / "u" / ".cache" / "torch").mkdir(parents=True)
    lay_out("hang", container / "home" / "u" / ".cache" / "torch", prefix="comm_lib_trace_rank_")
    fake_proc(tmp_path / "proc", PID, 0.0, fs_root=str(container))
    got = _read(tmp_path / "proc", {"HOME": "/home/u"})
    assert got.dump is not None and got.dump.path == "/home/u/.cache/torch/comm_lib_trace_rank_0"


def test_links_on_the_way_resolve_inside_the_ranks_root_and_dot_dot_stays_in_it(tmp_path: Path) -> None:
    """An absolute link in the container (/scratch -> /data/fr) means the container's /data; `..` at its root is
    its root, as for the rank itself: neither reaches the host's files."""
    container = tmp_path / "container"
    (container / "data" / "fr").mkdir(parents=True)
    lay_out("hang", container / "data" / "fr")
    os.symlink("/data/fr", container / "scratch")
    (tmp_path / "data" / "fr").mkdir(parents=True)
    lay_out("healthy", tmp_path / "data" / "fr")  # the host's, where a link followed outside the root would land
    fake_proc(tmp_path / "proc", PID, 0.0, fs_root=str(container))
    got = _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": "/scratch/fr_rank_"})
    assert got.dump is not None and got.dump.groups[0].launched == 26
    climbed = _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": f"/../../{tmp_path}/data/fr/fr_rank_"})
    assert climbed.dump is None and climbed.refused is None  # the container has no such path: nothing there


def test_a_relative_prefix_is_the_ranks_working_directory(tmp_path: Path) -> None:
    lay_out("hang", tmp_path)
    fake_proc(tmp_path / "proc", PID, 0.0)
    os.unlink(tmp_path / "proc" / str(PID) / "cwd")
    os.symlink(tmp_path, tmp_path / "proc" / str(PID) / "cwd")
    got = _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": "fr_rank_"})
    assert got.dump is not None and got.dump.groups[0].launched == 26


@as_root
def test_a_dump_of_another_user_is_refused(tmp_path: Path) -> None:
    lay_out("hang", tmp_path)
    os.chown(tmp_path / "fr_rank_0", 23456, 23456)
    fake_proc(tmp_path / "proc", PID, 0.0, uid=12345)
    got = _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/fr_rank_"})
    assert got.dump is None and got.refused == f"{tmp_path}/fr_rank_0 is owned by uid 23456, not the job's (12345)"


def test_a_rank_whose_user_is_unknown_has_nothing_read(tmp_path: Path) -> None:
    """/proc/PID hidden (hidepid=2, another user's process) or gone: its user is unknown, so no file is its."""
    lay_out("hang", tmp_path)
    (tmp_path / "proc").mkdir()
    got = _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/fr_rank_"})
    assert got.dump is None and got.refused is not None and "user is unknown" in got.refused


def test_a_loop_of_links_on_the_way_ends_in_a_refusal(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    fake_proc(tmp_path / "proc", PID, 0.0)
    got = _read(tmp_path / "proc", {"TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/a/fr_rank_"})
    assert got.dump is None and got.refused == f"{tmp_path}/a/fr_rank_0: Too many levels of symbolic links"
