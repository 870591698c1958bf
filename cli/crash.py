"""What an unexpected exception ends with, in any command: one short line on stderr naming the error and a file
holding its traceback, and exit status 1 (never 0, so a script or a service manager sees the failure). The
traceback goes to a file, not the terminal: it can be long, and it may quote what a process or a recording said.

The file is created exclusively (O_EXCL, never through a symlink) with mode 0600 in a directory only this user
can use: $XDG_STATE_HOME/hwtop (~/.local/state/hwtop), or else the system's temporary directory."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import time
import traceback

from hwtop import __version__
from hwtop.model.safe_text import printable, printable_lines

CRASH_EXIT = 1
SUMMARY_CHARS = 300  # of the exception's message on the terminal; the file has all of it


def state_dir() -> str | None:
    """$XDG_STATE_HOME/hwtop, created 0700; None where it cannot be made or is not this user's alone."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    path = os.path.join(base, "hwtop")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077
    return path if private else None


def save_traceback(error: BaseException) -> str:
    """Writes the traceback to a new private file; its path. OSError when no file could be made anywhere."""
    directory = state_dir()
    prefix = f"{'crash' if directory else 'hwtop-crash'}-{time.strftime('%Y%m%d-%H%M%S')}-"
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".txt", dir=directory)  # O_EXCL|O_NOFOLLOW, mode 0600
    lines = [f"hwtop {__version__} · python {sys.version.split()[0]} · argv {sys.argv!r}", ""]
    lines += "".join(traceback.format_exception(error)).rstrip("\n").split("\n")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(printable_lines(lines) + "\n")  # read in a terminal, too: no control sequence in it
    return path


def summary(error: BaseException) -> str:
    message = str(error)
    if len(message) > SUMMARY_CHARS:
        message = message[: SUMMARY_CHARS - 1] + "…"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def report_crash(error: BaseException) -> int:
    """The line on stderr and the saved traceback; the exit status to end with."""
    try:
        where = f"the traceback is in {save_traceback(error)}"
    except OSError as why:
        where = f"its traceback could not be saved ({why.strerror or why})"
    print(printable(f"hwtop: crashed: {summary(error)}; {where}"), file=sys.stderr)
    return CRASH_EXIT
