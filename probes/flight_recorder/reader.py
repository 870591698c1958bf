"""FlightRecorderReader: each rank's Flight Recorder as its environment sets it and its latest dump, read again only
when the file changes (a dump is written on a watchdog timeout or when asked: rarely). It owns what it has read;
the job probe hands it the ranks (pid, rank, environment) each tick and gets a `FlightRank` per pid back.

A dump is the rank's only where it is safe to read (files.py: at the rank's own path under its own root, its
user's, no link, bounded) and written since the rank started (an older file at the same prefix is an earlier
run's), and its content is plain containers (unpickle.py). A file that fails any of these is named in `refused`,
never read. Every file of the job's is opened through files.open_checked; /proc's own files through sysfs.read_bytes.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from hwtop.model.flight import FlightDump, FlightRank
from hwtop.probes.flight_recorder.files import (
    Found,
    Refused,
    View,
    Want,
    look,
    process_uid,
    read,
    read_checked,
    view_of,
)
from hwtop.probes.flight_recorder.parse import parse_dump
from hwtop.probes.flight_recorder.settings import Settings, settings_of
from hwtop.probes.flight_recorder.unpickle import load_plain
from hwtop.probes.sysfs import read_bytes

MAX_MAPS_BYTES = 8 << 20  # a torch process maps a few thousand files
# torch/version.py: a few hundred bytes; the job's user's own install, or root's (a system or image install)
VERSION_FILE = Want(stat.S_ISREG, "a regular file", "a version file", 1 << 16, frozenset({0}))
_VERSION = re.compile(rb"""__version__\s*=\s*['"]([0-9A-Za-z.+_-]{1,40})['"]""")
_LIBTORCH = re.compile(rb"\s(/\S*/torch)/lib/libtorch(?:_cpu|_python)?\.so\b")


class RankProcess(NamedTuple):
    pid: int
    rank: int
    environ: Mapping[str, str]


class _Known(NamedTuple):
    """What is read once per process: its recorder settings, its user, when it started, its torch, its view of the
    file system."""

    settings: Settings
    uid: int | None
    started: float | None
    torch_version: str | None
    view: View


class FlightRecorderReader:
    """`read(ranks)` each tick: a FlightRank per pid. Forgets processes no longer handed to it."""

    __slots__ = ("_dumps", "_known", "clock", "proc")

    def __init__(self, proc: str = "/proc", clock: Callable[[], float] = time.time) -> None:
        self.proc, self.clock = proc, clock
        self._known: dict[int, _Known] = {}
        self._dumps: dict[str, tuple[tuple[int, int, int, int], FlightDump | str]] = {}

    def read(self, ranks: Iterable[RankProcess]) -> dict[int, FlightRank]:
        out: dict[int, FlightRank] = {}
        paths: set[str] = set()
        for rank in ranks:
            known = self._known.get(rank.pid)
            if known is None:
                known = self._known[rank.pid] = self._learn(rank)
            out[rank.pid] = self._rank(rank, known, paths)
        for pid in [p for p in self._known if p not in out]:
            del self._known[pid]
        for path in [p for p in self._dumps if p not in paths]:
            del self._dumps[path]
        return out

    def _learn(self, rank: RankProcess) -> _Known:
        base = f"{self.proc}/{rank.pid}"
        uid, view = process_uid(self.proc, rank.pid), view_of(self.proc, rank.pid)
        version = self._torch_version(base, uid, view) if uid is not None else None
        return _Known(settings_of(rank.environ), uid, self._start_time(base), version, view)

    def _rank(self, rank: RankProcess, known: _Known, paths: set[str]) -> FlightRank:
        settings = known.settings
        found: Found | None = None
        refused = None
        if settings.dynamic:
            refused = "TORCH_FR_DUMP_DYNAMIC_FILE_NAME is set: each dump is named anew, not at <prefix><rank>"
        elif known.uid is None:
            refused = f"pid {rank.pid}'s user is unknown (its /proc/{rank.pid}/status unreadable): no file is read " \
                      "as its"
        for prefix in settings.prefixes if not settings.dynamic and known.uid is not None else ():
            path = f"{prefix}{rank.rank}"
            try:
                seen = look(path, known.uid, known.view)
            except Refused as why:
                refused = str(why)
                continue
            if seen is not None and (found is None or seen.mtime > found.mtime):
                found = seen
        dump = None
        if found is not None:
            paths.add(found.path)
            got = self._dump(found, known)
            dump, refused = (got, refused) if isinstance(got, FlightDump) else (None, got)
        return FlightRank(settings.buffer, known.torch_version, settings.prefixes[0] if settings.prefixes else None,
                          settings.pipe, dump, refused)

    def _dump(self, found: Found, known: _Known) -> FlightDump | str:
        kept = self._dumps.get(found.path)
        if kept is not None and kept[0] == found.key:
            return kept[1]
        got: FlightDump | str
        if known.started is not None and found.mtime < known.started:
            got = f"{found.path} was written before the rank started (an earlier run's)"
        else:
            try:
                got = parse_dump(load_plain(read(found, known.uid)), found.path, found.mtime)
            except (OSError, ValueError) as error:  # Refused and NotPlain are ValueErrors
                got = f"{found.path}: {error}"[:300]
        self._dumps[found.path] = (found.key, got)
        return got

    def _start_time(self, base: str) -> float | None:
        """Wall-clock start of the process: /proc/PID/stat's starttime (ticks after boot) and /proc/stat's btime."""
        try:
            fields = read_bytes(f"{base}/stat", 4096).rpartition(b")")[2].split()
            lines = read_bytes(f"{self.proc}/stat").splitlines()
            btime = next(int(line.split()[1]) for line in lines if line.startswith(b"btime "))
            return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError, StopIteration):
            return None

    def _torch_version(self, base: str, uid: int, view: View) -> str | None:
        """The version of the torch whose libtorch the process maps (torch/version.py beside it, at the path the
        process's maps names, in its own file system)."""
        try:
            maps = read_bytes(f"{base}/maps", MAX_MAPS_BYTES)
        except OSError:
            return None
        found = _LIBTORCH.search(maps)
        if found is None:
            return None
        try:
            version = _VERSION.search(read_checked(os.fsdecode(found.group(1)) + "/version.py", uid, view,
                                                   VERSION_FILE))
        except (OSError, Refused):
            return None
        return version.group(1).decode() if version else None

