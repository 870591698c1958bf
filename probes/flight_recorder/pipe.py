"""Asking a rank for a Flight Recorder dump without stopping it, as torch offers: where the job sets
`TORCH_NCCL_DEBUG_INFO_PIPE_FILE`, each rank's watchdog makes a FIFO at `<that><rank>.pipe` and, about once a second,
reads it; any bytes written there make the rank write its dump to its prefix (ProcessGroupNCCL's DumpPipe). Only
ever on the user's request (a key in the job view, `doctor --fr-dump`): never by itself.

The FIFO is opened as every file of the job's is (files.open_checked): at the rank's path in its own file system
(under /proc/PID/root), for writing without creating anything (a plain `echo 1 > path` makes a regular file where no
rank made the pipe, and no rank ever reads it), without following a link, without blocking (no reader: ENXIO, said
in words), and only when it is a FIFO owned by the job's user (checked before it is opened: nothing else is ever
opened for writing) and that user is known."""

from __future__ import annotations

import errno
import os
import stat

from hwtop.probes.flight_recorder.files import HOST, WRITE, Refused, Want, open_checked, view_of

PIPE = Want(stat.S_ISFIFO, "a pipe", "a pipe", None)


def pipe_path(stem: str, rank: int) -> str:
    return f"{stem}{rank}.pipe"


def request_dump(stem: str, rank: int, uid: int | None, *, pid: int | None = None, proc: str = "/proc") -> str | None:
    """Asks rank `rank` (process `pid`, whose file system the path is in; hwtop's own where None) for a dump; None
    when asked, else why it could not be, in one line."""
    path = pipe_path(stem, rank)
    try:
        fd = open_checked(path, uid, HOST if pid is None else view_of(proc, pid), WRITE, PIPE)
    except Refused as why:
        return f"{why}: not written"
    except OSError as error:
        if error.errno == errno.ENOENT:
            return f"rank {rank} has no dump pipe at {path} (it makes one only with the recorder on, once its " \
                   "process group is up)"
        if error.errno == errno.ENXIO:
            return f"nothing reads {path}: rank {rank}'s watchdog is not running"
        return f"{path}: {error.strerror}"
    try:
        os.write(fd, b"1")
    except OSError as error:
        return f"{path}: {error.strerror}"
    finally:
        os.close(fd)
    return None
