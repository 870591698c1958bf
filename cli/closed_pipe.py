"""`hwtop snapshot --json | head`: the reader took what it wanted and closed the pipe. That is no crash: hwtop
stops quietly with the status a shell shows for any tool ended by SIGPIPE (141), as `yes | head` does.

Only a closed stdout counts: a BrokenPipeError from anything else (a job's pipe, a socket) is still a crash. The
test is the kernel's own: poll() reports POLLERR on a pipe's write end once no reader is left."""

from __future__ import annotations

import os
import select
import sys

SIGPIPE_EXIT = 128 + 13  # what a shell reports for a process ended by SIGPIPE


def stdout_reader_gone() -> bool:
    """True when stdout is a pipe (or socket) whose reading end is closed."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def quiet_exit() -> int:
    """Points stdout at /dev/null, so the interpreter's last flush of what is still buffered cannot raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return SIGPIPE_EXIT
