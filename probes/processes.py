"""The process table, read straight from /proc.

psutil's generic path reads several files and makes several objects per process; a training node has
thousands. So a tick reads at most one file per process (`/proc/PID/stat`: state, ppid, CPU times,
threads, RSS), a process whose CPU ticks stood still only one tick in COLD_EVERY (a woken sleeper shows its CPU
at its next turn, measured over the whole gap). Every process is listed, so that a filter or a sort finds any of
them; the cap is on reading details: the busiest (the top N by CPU) have their command line, user, affinity and
owner (Slurm job, pod, container: probes/owners.py) read and kept fresh, every other process has them read once
in its life, at most NEW_DETAILS a read (until then it is listed by its name). A process that vanishes or is
forbidden mid-read is skipped or shown with what was readable.
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Callable

import msgspec

from hwtop.model.owner import Owner
from hwtop.model.snapshot import ProcessInfo
from hwtop.probes.owners import OwnerReader, user_name
from hwtop.probes.sysfs import parse_cpulist, read_bytes

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


PF_KTHREAD = 0x00200000  # proc(5) flags: a kernel thread (pid 2 is not one inside a container's namespace)
DETAILS_REFRESH_S = 10.0  # a busy row's command line is read again this often (setproctitle, renamed workers)
NEW_DETAILS = 64  # processes outside the busiest whose details are read for the first time, at most, in a read


class StatFields(msgspec.Struct, frozen=True):
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


__all__ = ["ProcessProbe", "parse_stat", "user_name"]


def _affinity(status: str) -> tuple[int, ...] | None:
    for line in status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            try:
                return parse_cpulist(line.split(":", 1)[1])
            except ValueError:
                return None
    return None


class _Details(msgspec.Struct, frozen=True):
    comm: str  # the name they were read under: a new name means the command line changed too
    read_at: float
    user: str | None
    cmdline: str | None
    affinity: tuple[int, ...] | None


class _Shown(msgspec.Struct, frozen=True):
    """A row as last made, and what it was made from: the same stat line, CPU %, details and owner make the same
    row (most of a table's rows, each read), so it is handed out again rather than parsed and built anew."""
    data: bytes
    percent: float
    details: _Details | None  # None: not read yet (a process listed by its name until its details' turn)
    owner: Owner | None
    row: ProcessInfo


class _Seen(msgspec.Struct):
    """A process's last stat read: what its next CPU % is measured against, and what a skipped read reuses.
    Updated in place when a read finds it unchanged (most of a big box's processes, each read)."""
    start_ticks: int
    ticks: int
    rss_pages: int
    data: bytes
    read_at: float
    still: int  # reads in a row whose CPU ticks did not move
    kernel: bool


STILL_READS = 2  # a process whose CPU ticks stood still this many reads in a row is cold...
COLD_EVERY = 4  # ...and its stat is read one read in COLD_EVERY (staggered by pid); rows on screen every read


class ProcessProbe:
    """Keeps each process's previous stat (keyed by pid, checked against its start time, so a reused pid starts
    fresh). Most of a big box's processes sleep: one whose CPU ticks stood still is read one tick in COLD_EVERY,
    which is what keeps a 5,000-process tick cheap; a row that makes the table is always read fresh."""

    def __init__(self, root: str = "/", limit: int = 60, clock: Callable[[], float] = time.monotonic,
                 kernel_threads: bool = False) -> None:
        self.proc = os.path.join(root, "proc")
        self.kernel_threads = kernel_threads
        self.limit = limit
        self._clock = clock
        self._seen: dict[int, _Seen] = {}
        self._reads = 0
        # user, command line and affinity rarely change: read per process (pid + start time), again on a rename
        self._details: dict[tuple[int, int], _Details] = {}
        self._shown: dict[int, _Shown] = {}  # last read's rows by pid
        self.owners = OwnerReader(self.proc)  # a row's Slurm job, pod or container: read once per process

    def pids(self) -> list[int]:
        return [int(n) for n in os.listdir(self.proc) if n.isdigit()]

    def read(self) -> tuple[ProcessInfo, ...]:
        """Every process (kernel threads aside), the busiest `limit` first, by CPU %: one pass over /proc, each
        process's stat read at most once (a cold one only on its turn) and only its CPU ticks, start time and RSS
        decoded; a row is parsed and made again only when its stat line or CPU % changed."""
        now = self._clock()
        current, rows = self._scan(now)
        if len(self._details) > len(current):  # some process ended (a reused pid is a new key: never a wrong hit)
            for key in [k for k in self._details if (s := current.get(k[0])) is None or s.start_ticks != k[1]]:
                del self._details[key]
        if self.owners.size > len(current):  # some process ended (a reused pid is a new key: never a wrong hit)
            self.owners.retain(lambda pid, start: (s := current.get(pid)) is not None and s.start_ticks == start)
        shown, self._shown = self._shown, {}
        busiest = heapq.nlargest(self.limit, rows)  # by CPU %, then RSS
        out = self._busiest_rows(busiest, current, shown, now)
        top = {pid for _, _, pid in busiest}
        budget, kept = [NEW_DETAILS], self._shown
        for percent, _, pid in rows:
            if pid in top:
                continue
            last, entry = shown.get(pid), current[pid]
            if last is not None and last.data is entry.data and last.percent == percent and last.details is not None:
                kept[pid] = last  # a still process (the very stat line its row was made from): most of a big box
                out.append(last.row)
                continue
            row = self._other_row(pid, entry, percent, last, now, budget)
            if row is not None:
                out.append(row)
        return tuple(out)

    def _scan(self, now: float) -> tuple[dict[int, _Seen], list[tuple[float, int, int]]]:
        """Each process's stat as read now (a cold one's last read, not its turn), and (CPU %, RSS pages, pid) of
        each that is not a kernel thread."""
        turn = self._reads
        self._reads += 1
        seen, current = self._seen, {}
        rows: list[tuple[float, int, int]] = []
        proc, hide_kernel = self.proc, not self.kernel_threads
        for name in os.listdir(proc):
            if not name.isdigit():
                continue
            pid = int(name)
            known = seen.get(pid)
            if known is not None and (known.kernel or known.still >= STILL_READS) and (pid + turn) % COLD_EVERY:
                current[pid] = known  # cold (or a hidden kernel thread): not its turn, it stood still
                if not known.kernel:
                    rows.append((0.0, known.rss_pages, pid))
                continue
            entry = self._measure(pid, known, now, hide_kernel)
            if entry is None:
                continue  # vanished, forbidden or garbled: not a row this tick
            current[pid] = entry[0]
            if not entry[0].kernel:
                rows.append((entry[1], entry[0].rss_pages, pid))
        self._seen = current
        return current, rows

    def _busiest_rows(self, busiest: list[tuple[float, int, int]], current: dict[int, _Seen],
                      shown: dict[int, _Shown], now: float) -> list[ProcessInfo]:
        """The busiest processes' rows, each read fresh (a cold one too) with its details kept fresh."""
        out = []
        for percent, _, pid in busiest:
            entry = current[pid]
            if entry.read_at != now:  # a cold row among the busiest: read it fresh
                fresh = self._measure(pid, entry, now, not self.kernel_threads)
                if fresh is None:
                    continue
                entry, percent = fresh
                current[pid] = entry
            row = self._unchanged(shown.get(pid), entry, percent, now)
            if row is None:
                try:
                    stat = parse_stat(entry.data.decode("utf-8", "replace"))
                except (ValueError, IndexError):
                    continue
                row = self._row(percent, stat, now, entry.data)
            out.append(row.row)
            self._shown[pid] = row
        return out

    def _other_row(self, pid: int, entry: _Seen, percent: float, last: _Shown | None, now: float,
                   budget: list[int]) -> ProcessInfo | None:
        """A process outside the busiest: its row as last made where its stat line (the very bytes: a still
        process keeps its record) and CPU % are the same; else made again from the few fields its row shows, its
        details read if it never had them and `budget` (first reads left this tick) allows, else listed by its
        name until its turn. Its details are not read again: a new name means a new stat line, read at its turn."""
        if last is not None and last.data is entry.data and last.percent == percent and \
                (last.details is not None or budget[0] <= 0):
            self._shown[pid] = last
            return last.row
        try:
            name, state, ppid, threads = _row_fields(entry.data)
        except (ValueError, IndexError):
            return None
        key = (pid, entry.start_ticks)
        details = self._details.get(key)
        if (details is None or details.comm != name) and budget[0] > 0:
            budget[0] -= 1
            details = self._details[key] = _Details(name, now, *self._read_details(pid))
        elif details is not None and details.comm != name:
            details = None  # renamed: its old command line no longer says what it runs
        owner = None if details is None else self.owners.owner(pid, entry.start_ticks)
        row = ProcessInfo(
            pid=pid, ppid=ppid, user=details and details.user, name=name, cmdline=details and details.cmdline,
            state=state, cpu_percent=None if percent < 0 else round(percent, 1), rss_bytes=entry.rss_pages * PAGE_SIZE,
            threads=threads, cpu_affinity=details and details.affinity, owner=owner)
        self._shown[pid] = _Shown(entry.data, percent, details, owner, row)
        return row

    def _unchanged(self, last: _Shown | None, entry: _Seen, percent: float, now: float,
                   refresh: bool = True) -> _Shown | None:
        """Last read's row of this process, if everything it was made from is the same (its stat line is the
        whole of its pid, start time, name and figures), its details not due again (`refresh`: a busy row's are
        read again every DETAILS_REFRESH_S)."""
        if last is None or last.percent != percent or last.data != entry.data:
            return None
        details = self._details.get((last.row.pid, entry.start_ticks))
        if details is None or details is not last.details or refresh and now - details.read_at >= DETAILS_REFRESH_S:
            return None
        if self.owners.owner(last.row.pid, entry.start_ticks) is not last.owner:
            return None
        return last

    def _measure(self, pid: int, known: _Seen | None, now: float, hide_kernel: bool) -> tuple[_Seen, float] | None:
        """Read one stat and decode the few fields every process pays for; the CPU % since its last read
        (-1 when unknown: new, reused pid, no time passed)."""
        try:
            fd = os.open(f"{self.proc}/{pid}/stat", os.O_RDONLY)
            try:
                data = os.read(fd, 4096)  # a stat line is well under 1 KiB
            finally:
                os.close(fd)
            if known is not None and data == known.data and not known.kernel:
                # the very line of its last read (a sleeper's, most of a big box's): it stood still
                known.still, known.read_at, percent = known.still + 1, now, 0.0 if now > known.read_at else -1.0
                return known, percent
            rest = data[data.rindex(b")") + 2:].split(None, 22)
            start = int(rest[19])
            if hide_kernel and int(rest[6]) & PF_KTHREAD:
                # kernel threads: no memory, no command line, hidden as htop hides them
                return _Seen(start, 0, 0, b"", now, 0, True), -1.0
            ticks = int(rest[11]) + int(rest[12])
            rss_pages = int(rest[21])
        except (OSError, ValueError, IndexError):
            return None
        percent, still = -1.0, 0
        if known is not None and known.start_ticks == start and not known.kernel and ticks >= known.ticks:
            if now > known.read_at:
                percent = 100.0 * (ticks - known.ticks) / CLOCK_TICKS / (now - known.read_at)
            if ticks == known.ticks:  # stood still: the same record, one more still read
                known.still, known.read_at, known.rss_pages, known.data = known.still + 1, now, rss_pages, data
                return known, percent
        return _Seen(start, ticks, rss_pages, data, now, still, False), percent

    def _row(self, percent: float, stat: StatFields, now: float, data: bytes, refresh: bool = True) -> _Shown:
        key = (stat.pid, stat.start_ticks)
        details = self._details.get(key)
        if details is None or details.comm != stat.name or refresh and now - details.read_at >= DETAILS_REFRESH_S:
            # new, renamed (its comm changed: setproctitle, a worker naming itself) or due for a slow re-read
            user, cmdline, affinity = self._read_details(stat.pid)
            details = self._details[key] = _Details(stat.name, now, user, cmdline, affinity)
        owner = self.owners.owner(stat.pid, stat.start_ticks)
        row = ProcessInfo(
            pid=stat.pid, ppid=stat.ppid, user=details.user, name=stat.name, cmdline=details.cmdline,
            state=stat.state, cpu_percent=None if percent < 0 else round(percent, 1),
            rss_bytes=stat.rss_pages * PAGE_SIZE, threads=stat.threads, cpu_affinity=details.affinity,
            owner=owner,
        )
        return _Shown(data, percent, details, owner, row)

    def _read_details(self, pid: int) -> tuple[str | None, str | None, tuple[int, ...] | None]:
        base = f"{self.proc}/{pid}"
        user: str | None
        try:
            user = user_name(os.stat(base).st_uid)
        except OSError:
            user = None
        try:
            cmdline = read_bytes(f"{base}/cmdline").replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            cmdline = None
        try:
            affinity = _affinity(read_bytes(f"{base}/status").decode("utf-8", "replace"))
        except OSError:
            affinity = None
        return user, cmdline or None, affinity


def _row_fields(data: bytes) -> tuple[str, str, int, int]:
    """(name, state, ppid, threads) from a stat line: what a row outside the busiest shows besides the figures its
    CPU % and RSS were measured from; split no further than the thread count (proc(5) field 20)."""
    close = data.rindex(b")")
    rest = data[close + 2:].split(None, 18)
    name = data[data.index(b"(") + 1:close].decode("utf-8", "replace")
    return name, rest[0].decode("ascii", "replace"), int(rest[1]), int(rest[17])
