"""Every file the Flight Recorder reader opens (a dump, the torch version file beside a rank's libtorch, a rank's
dump pipe) is opened here, by `open_checked`, and only where it is safe to. These paths are the job's, and its user
chooses them, so a planted FIFO must not stop the tick, a link must not lead elsewhere, and another user's file must
not be taken for the job's:

- the path is the rank's, resolved as the rank resolves it but never outside its own root (/proc/PID/root: a
  containerised rank's /tmp is not the host's; /proc/PID/cwd for a relative path). Each directory on the way is
  opened O_PATH without following a link; a link there is read and resolved inside that root (an absolute one from
  the root, `..` at the root stays there), as the kernel's RESOLVE_IN_ROOT does, never through the host's /;
- the file itself is never a link (O_NOFOLLOW), is of the kind wanted (a regular file; a FIFO for the pipe), owned by
  the job's user (or root, where root's install is wanted too), and within its bound. It is checked with lstat
  before it is opened, so a FIFO or a device is never opened, and again with fstat on the descriptor, in case it was
  swapped in between; it is opened O_NONBLOCK|O_NOCTTY|O_CLOEXEC, so even then an open cannot block.
- A file whose user is unknown (/proc/PID unreadable) is nobody's: refused.

A full recorder of 2,000 entries with their frames is a few MB: MAX_DUMP_BYTES bounds a dump."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from hwtop.probes.sysfs import read_bytes, read_fd

MAX_DUMP_BYTES = 32 << 20
MAX_LINKS = 40  # links followed in one path, as the kernel's own walk allows (then ELOOP)
READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
WRITE = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC  # never O_CREAT
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TOP = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC  # /proc/PID/root and cwd: the kernel's links, followed on purpose
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


class View(NamedTuple):
    """A process's view of the file system: the directories its absolute and relative paths start from."""

    root: str
    cwd: str


HOST = View("/", ".")  # hwtop's own


def process_uid(proc: str, pid: int) -> int | None:
    """The user whose files process `pid` makes, the one its files must be owned by: the file system uid of
    /proc/PID/status's Uid line (real, effective, saved, file system). None where it cannot be read (the process
    gone, or hidden: hidepid)."""
    try:
        status = read_bytes(f"{proc}/{pid}/status", 1 << 16)
    except OSError:
        return None
    line = next((line for line in status.splitlines() if line.startswith(b"Uid:")), b"")
    fields = line.split()
    return int(fields[4]) if len(fields) == 5 and fields[4].isdigit() else None


def view_of(proc: str, pid: int) -> View:
    """Process `pid`'s view, through the kernel's links to its root and working directory."""
    return View(f"{proc}/{pid}/root", f"{proc}/{pid}/cwd")


class Want(NamedTuple):
    """What a file must be to be opened: its kind (stat.S_ISREG), said as `kind`, at most `limit` bytes (None: any),
    and owned by the job's user or one of `trusted` (uid 0 for root's torch install)."""

    test: Callable[[int], bool]
    kind: str
    noun: str
    limit: int | None
    trusted: frozenset[int] = frozenset()


class Found(NamedTuple):
    """A file at a dump's path as stat saw it: what decides whether it changed since it was read."""

    path: str
    mtime: float
    key: tuple[int, int, int, int]  # (device, inode, size, mtime_ns)
    view: View = HOST


class Refused(ValueError):
    """The file at a path is not one to open; the message says why, in a few words."""


def dump_want() -> Want:
    return Want(stat.S_ISREG, "a regular file", "a dump", MAX_DUMP_BYTES)


def look(path: str, uid: int | None, view: View) -> Found | None:
    """The dump at `path` in `view` without opening it, or None where there is none; Refused for a link, another
    owner's file, a file that is not regular or is too large, or a path that cannot be walked."""
    info = _lstat(path, view)
    if info is None:
        return None
    _check(path, info, uid, dump_want())
    return Found(path, info.st_mtime, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns), view)


def read(found: Found, uid: int | None) -> bytes:
    """The dump's bytes, opened as `open_checked` opens a file (it may have been swapped since `look`); Refused as
    `look`, OSError where it cannot be read."""
    return read_checked(found.path, uid, found.view, dump_want())


def read_checked(path: str, uid: int | None, view: View, want: Want) -> bytes:
    """The bytes of the file `open_checked` opens; Refused also where it grew past its bound while read."""
    fd = open_checked(path, uid, view, READ, want)
    try:
        data = read_fd(fd, None if want.limit is None else want.limit + 1)
    finally:
        os.close(fd)
    if want.limit is not None and len(data) > want.limit:
        raise Refused(f"{path} grew past the {want.limit} bytes {want.noun} may be")
    return data


def open_checked(path: str, uid: int | None, view: View, flags: int, want: Want) -> int:
    """A descriptor of the file at `path` in `view`, opened with `flags` (READ or WRITE) only where it is what
    `want` says, checked before the open and after it. Refused where it is not; OSError as open raises it
    (ENOENT: none there; ENXIO: a FIFO nobody reads, opened WRITE)."""
    with _parent(path, view) as (folder, name):
        _check(path, os.stat(name, dir_fd=folder, follow_symlinks=False), uid, want)
        try:
            fd = os.open(name, flags, dir_fd=folder)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise Refused(f"{path} is a symbolic link") from None
            raise
    try:
        _check(path, os.fstat(fd), uid, want)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check(path: str, info: os.stat_result, uid: int | None, want: Want) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise Refused(f"{path} is a symbolic link")
    if not want.test(info.st_mode):
        raise Refused(f"{path} is not {want.kind}")
    if uid is None:
        raise Refused(f"{path}: the job's user is unknown, so no file is known to be the job's")
    if info.st_uid != uid and info.st_uid not in want.trusted:
        raise Refused(f"{path} is owned by uid {info.st_uid}, not the job's ({uid})")
    if want.limit is not None and info.st_size > want.limit:
        raise Refused(f"{path} is {info.st_size} bytes, over the {want.limit} bytes {want.noun} may be")


def _lstat(path: str, view: View) -> os.stat_result | None:
    """The file's own stat in `view` (a link's, not its target's); None where nothing is there."""
    try:
        with _parent(path, view) as (folder, name):
            return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError as error:
        if error.errno in _ABSENT:
            return None
        raise Refused(f"{path}: {error.strerror}") from None


@contextmanager
def _parent(path: str, view: View) -> Iterator[tuple[int, str]]:
    """An O_PATH descriptor of the folder `path` names its file in, walked inside `view`, and the file's name."""
    head, _, name = path.rpartition("/")
    if name in ("", ".", ".."):
        raise Refused(f"{path} names no file")
    root = os.open(view.root, _TOP)
    try:
        top = os.fstat(root)
        start = os.dup(root) if path.startswith("/") else os.open(view.cwd, _TOP)
        folder = _walk(root, (top.st_dev, top.st_ino), start, head.split("/")[::-1])
    finally:
        os.close(root)
    try:
        yield folder, name
    finally:
        os.close(folder)


def _walk(root: int, top: tuple[int, int], here: int, todo: list[str]) -> int:
    """`here` (a descriptor this owns: returned or closed) walked down `todo` (names, the next last): each folder
    opened without following a link; a link read and its target walked instead, an absolute one from `root`; `..`
    at `root` (its device and inode: `top`) stays there."""
    links = 0
    try:
        while todo:
            part = todo.pop()
            if part in ("", ".") or (part == ".." and _identity(here) == top):
                continue
            try:
                step = os.open(part, _DIR, dir_fd=here)
            except OSError as error:
                target = _link_at(here, part, error)
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
                todo.extend(target.split("/")[::-1])
                if not target.startswith("/"):
                    continue
                step = os.dup(root)
            os.close(here)
            here = step
    except BaseException:
        os.close(here)
        raise
    return here


def _link_at(folder: int, name: str, error: OSError) -> str:
    """The target of the link `name` in `folder`, whose open as a folder failed with `error`; `error` itself where
    it is no link (a file, nothing)."""
    if error.errno != errno.ENOTDIR:
        raise error
    try:
        return os.readlink(name, dir_fd=folder)
    except OSError:
        raise error from None


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino
