"""Asking a rank for a Flight Recorder dump without stopping it, as torch offers: where the job sets
`TORCH_NCCL_DEBUG_INFO_PIPE_FILE`, each rank's watchdog makes a FIFO at `<that><rank>.pipe` and, about once a second,
reads it; any bytes written there make the rank write its dump to its prefix (ProcessGroupNCCL's DumpPipe). Only
ever on the user's request (a key in the job view, `doctor --fr-dump`): never by itself.

The FIFO is opened for writing without creating anything (a plain `echo 1 > path` makes a regular file where no
rank made the pipe, and no rank ever reads it), without following a link, without blocking (no reader: ENXIO, said
in words), and only when it is a FIFO owned by the job's user."""

from __future__ import annotations

import errno
import os
import stat


def pipe_path(stem: str, rank: int) -> str:
    return f"{stem}{rank}.pipe"


def request_dump(stem: str, rank: int, uid: int | None) -> str | None:
    """Asks rank `rank` for a dump; None when asked, else why it could not be, in one line."""
    path = pipe_path(stem, rank)
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ENOENT:
            return f"rank {rank} has no dump pipe at {path} (it makes one only with the recorder on, once its " \
                   "process group is up)"
        if error.errno == errno.ENXIO:
            return f"nothing reads {path}: rank {rank}'s watchdog is not running"
        if error.errno == errno.ELOOP:
            return f"{path} is a symbolic link: not written"
        return f"{path}: {error.strerror}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISFIFO(info.st_mode):
            return f"{path} is not a pipe: not written"
        if uid is not None and info.st_uid != uid:
            return f"{path} is owned by uid {info.st_uid}, not the job's ({uid}): not written"
        os.write(fd, b"1")
    except OSError as error:
        return f"{path}: {error.strerror}"
    finally:
        os.close(fd)
    return None
