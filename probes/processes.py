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
        start_ticks=int(rest[19]), rss_pages=int(rest[21]), processor=processor,
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
        # user, command line and affinity rarely change: read once per process (pid + start time)
        self._details: dict[tuple[int, int], tuple[str | None, str | None, tuple[int, ...] | None]] = {}

    def pids(self) -> list[int]:
        return [int(n) for n in os.listdir(self.proc) if n.isdigit()]

    def read(self) -> tuple[ProcessInfo, ...]:
        now = self._clock()
        elapsed = None if self._previous_time is None else now - self._previous_time
        self._previous_time = now
        current: dict[tuple[int, int], int] = {}
        rows: list[tuple[float, StatFields]] = []
        for pid in self.pids():
            try:
                stat = parse_stat(_read(f"{self.proc}/{pid}/stat").decode("utf-8", "replace"))
            except (OSError, ValueError, IndexError):
                continue  # vanished, forbidden or garbled: not a row this tick
            if not self.kernel_threads and (stat.pid == 2 or stat.ppid == 2):
                continue  # kernel threads: no memory, no command line, hidden as htop hides them
            key = (stat.pid, stat.start_ticks)
            current[key] = stat.cpu_ticks
            before = self._previous.get(key)
            if elapsed and elapsed > 0 and before is not None and stat.cpu_ticks >= before:
                percent = 100.0 * (stat.cpu_ticks - before) / CLOCK_TICKS / elapsed
            else:
                percent = -1.0  # unknown this tick; sorts after every measured process
            rows.append((percent, stat))
        self._previous = current
        for key in [k for k in self._details if k not in current]:
            del self._details[key]
        rows.sort(key=lambda r: (r[0], r[1].rss_pages), reverse=True)
        return tuple(self._row(percent, stat) for percent, stat in rows[: self.limit])

    def _row(self, percent: float, stat: StatFields) -> ProcessInfo:
        key = (stat.pid, stat.start_ticks)
        details = self._details.get(key)
        if details is None:
            details = self._details[key] = self._read_details(stat.pid)
        user, cmdline, affinity = details
        return ProcessInfo(
            pid=stat.pid, ppid=stat.ppid, user=user, name=stat.name, cmdline=cmdline,
            state=stat.state, cpu_percent=None if percent < 0 else round(percent, 1),
            rss_bytes=stat.rss_pages * PAGE_SIZE, threads=stat.threads, cpu_affinity=affinity,
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
