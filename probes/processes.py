"""The process table, read straight from /proc.

psutil's generic path costs 7-9 ms for ~70 processes (several files and objects per process); a training
node has thousands. So every tick reads one file per process (`/proc/PID/stat`: state, ppid, CPU times,
threads, RSS) and only the rows that make the table (the top N by CPU) pay for their command line, user
and affinity. A process that vanishes or is forbidden mid-read is skipped or shown with what was readable.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable
from dataclasses import dataclass

from hwtop.model.snapshot import ProcessInfo
from hwtop.probes.sysfs import parse_cpulist

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


PF_KTHREAD = 0x00200000  # proc(5) flags: a kernel thread (pid 2 is not one inside a container's namespace)
DETAILS_REFRESH_S = 10.0  # a visible row's command line is read again this often (setproctitle, renamed workers)


@dataclass(frozen=True, slots=True)
class StatFields:
    pid: int
    name: str
    state: str
    ppid: int
    cpu_ticks: int
    threads: int
    start_ticks: int
    rss_pages: int
    processor: int | None
    flags: int = 0

    @property
    def kernel_thread(self) -> bool:
        return bool(self.flags & PF_KTHREAD)


def parse_stat(text: str) -> StatFields:
    """Parse /proc/PID/stat; the name sits in parentheses and may itself contain spaces and ')'."""
    open_paren = text.index("(")
    close_paren = text.rindex(")")
    pid = int(text[:open_paren].strip())
    name = text[open_paren + 1:close_paren]
    rest = text[close_paren + 2:].split()
    # rest[0] is field 3 (state) of proc(5).
    processor = int(rest[36]) if len(rest) > 36 else None
    return StatFields(
        pid=pid, name=name, state=rest[0], ppid=int(rest[1]),
        cpu_ticks=int(rest[11]) + int(rest[12]), threads=int(rest[17]),
        start_ticks=int(rest[19]), rss_pages=int(rest[21]), processor=processor, flags=int(rest[6]),
    )


def _read(path: str) -> bytes:
    """os.open/os.read: half the cost of open() for these tiny files, which matters per process per tick."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            if len(chunk) < 65536:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


_users: dict[int, str] = {}


def user_name(uid: int) -> str:
    name = _users.get(uid)
    if name is None:
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        _users[uid] = name
    return name


def _affinity(status: str) -> tuple[int, ...] | None:
    for line in status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            try:
                return parse_cpulist(line.split(":", 1)[1])
            except ValueError:
                return None
    return None


@dataclass(frozen=True, slots=True)
class _Details:
    comm: str  # the name they were read under: a new name means the command line changed too
    read_at: float
    user: str | None
    cmdline: str | None
    affinity: tuple[int, ...] | None


class ProcessProbe:
    """Keeps each process's previous CPU ticks (keyed by pid and start time, so a reused pid starts fresh)."""

    def __init__(self, root: str = "/", limit: int = 60, clock: Callable[[], float] = time.monotonic,
                 kernel_threads: bool = False) -> None:
        self.proc = os.path.join(root, "proc")
        self.kernel_threads = kernel_threads
        self.limit = limit
        self._clock = clock
        self._previous: dict[tuple[int, int], int] = {}
        self._previous_time: float | None = None
        # user, command line and affinity rarely change: read per process (pid + start time), again on a rename
        self._details: dict[tuple[int, int], _Details] = {}

    def pids(self) -> list[int]:
        return [int(n) for n in os.listdir(self.proc) if n.isdigit()]

    def read(self) -> tuple[ProcessInfo, ...]:
        """One pass over /proc: each process's stat is read once and only its CPU ticks, start time and RSS are
        decoded; the full parse, the user, the command line and the affinity are paid for the top N alone."""
        now = self._clock()
        elapsed = None if self._previous_time is None else now - self._previous_time
        self._previous_time = now
        previous, current = self._previous, {}
        rows: list[tuple[float, int, bytes]] = []
        proc, hide_kernel = self.proc, not self.kernel_threads
        for name in os.listdir(proc):
            if not name.isdigit():
                continue
            try:
                fd = os.open(f"{proc}/{name}/stat", os.O_RDONLY)
                try:
                    data = os.read(fd, 4096)  # a stat line is well under 1 KiB
                finally:
                    os.close(fd)
                rest = data[data.rindex(b")") + 2:].split()
                if hide_kernel and int(rest[6]) & PF_KTHREAD:
                    continue  # kernel threads: no memory, no command line, hidden as htop hides them
                key = (int(name), int(rest[19]))
                ticks = int(rest[11]) + int(rest[12])
                rss_pages = int(rest[21])
            except (OSError, ValueError, IndexError):
                continue  # vanished, forbidden or garbled: not a row this tick
            current[key] = ticks
            before = previous.get(key)
            if elapsed and elapsed > 0 and before is not None and ticks >= before:
                percent = 100.0 * (ticks - before) / CLOCK_TICKS / elapsed
            else:
                percent = -1.0  # unknown this tick; sorts after every measured process
            rows.append((percent, rss_pages, data))
        self._previous = current
        for key in [k for k in self._details if k not in current]:
            del self._details[key]
        rows.sort(key=lambda r: (r[0], r[1]), reverse=True)
        out = []
        for percent, _, data in rows[: self.limit]:
            try:
                stat = parse_stat(data.decode("utf-8", "replace"))
            except (ValueError, IndexError):
                continue
            out.append(self._row(percent, stat, now))
        return tuple(out)

    def _row(self, percent: float, stat: StatFields, now: float) -> ProcessInfo:
        key = (stat.pid, stat.start_ticks)
        details = self._details.get(key)
        if details is None or details.comm != stat.name or now - details.read_at >= DETAILS_REFRESH_S:
            # new, renamed (its comm changed: setproctitle, a worker naming itself) or due for a slow re-read
            user, cmdline, affinity = self._read_details(stat.pid)
            details = self._details[key] = _Details(stat.name, now, user, cmdline, affinity)
        return ProcessInfo(
            pid=stat.pid, ppid=stat.ppid, user=details.user, name=stat.name, cmdline=details.cmdline,
            state=stat.state, cpu_percent=None if percent < 0 else round(percent, 1),
            rss_bytes=stat.rss_pages * PAGE_SIZE, threads=stat.threads, cpu_affinity=details.affinity,
        )

    def _read_details(self, pid: int) -> tuple[str | None, str | None, tuple[int, ...] | None]:
        base = f"{self.proc}/{pid}"
        user: str | None
        try:
            user = user_name(os.stat(base).st_uid)
        except OSError:
            user = None
        try:
            cmdline = _read(f"{base}/cmdline").replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            cmdline = None
        try:
            affinity = _affinity(_read(f"{base}/status").decode("utf-8", "replace"))
        except OSError:
            affinity = None
        return user, cmdline or None, affinity
