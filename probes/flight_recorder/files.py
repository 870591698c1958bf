"""A dump is read only where it is safe to: a regular file (never through a symbolic link: O_NOFOLLOW), owned by
the job's user (a file another user planted at a world-writable prefix such as /tmp is not the job's), and no larger
than MAX_DUMP_BYTES (a full recorder of 2,000 entries with their frames is a few MB)."""

from __future__ import annotations

import errno
import os
import stat
from typing import NamedTuple

MAX_DUMP_BYTES = 32 << 20


class Found(NamedTuple):
    """A file at a dump's path as stat saw it: what decides whether it changed since it was read."""

    path: str
    mtime: float
    key: tuple[int, int, int, int]  # (device, inode, size, mtime_ns)


class Refused(ValueError):
    """The file at a dump's path is not one to read; the message says why, in a few words."""


def look(path: str, uid: int | None) -> Found | None:
    """The dump at `path` without opening it, or None where there is none; Refused for a link, another owner's
    file, a file that is not regular or is too large."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    _check(path, info, uid)
    return Found(path, info.st_mtime, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))


def _check(path: str, info: os.stat_result, uid: int | None) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise Refused(f"{path} is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{path} is not a regular file")
    if uid is not None and info.st_uid != uid:
        raise Refused(f"{path} is owned by uid {info.st_uid}, not the job's ({uid})")
    if info.st_size > MAX_DUMP_BYTES:
        raise Refused(f"{path} is {info.st_size} bytes, over the {MAX_DUMP_BYTES} bytes a dump may be")


def read(found: Found, uid: int | None) -> bytes:
    """The dump's bytes, opened without following a link and checked again on the open file (it may have been
    swapped since `look`); Refused as `look`, OSError where it cannot be read."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(found.path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Refused(f"{found.path} is a symbolic link") from None
        raise
    try:
        _check(found.path, os.fstat(fd), uid)
        chunks, size = [], 0
        while size <= MAX_DUMP_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_DUMP_BYTES:
            raise Refused(f"{found.path} grew past the {MAX_DUMP_BYTES} bytes a dump may be")
        return b"".join(chunks)
    finally:
        os.close(fd)
