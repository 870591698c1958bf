"""The processes the job probe knows, under its root's /proc: each one's stat read, its static facts (command line,
environment, whether it runs Python or is a launcher) read once, and what its figures keep between ticks. The
readers of the job (focus, tree, figures) share one table, as a GPU's readers share its handle."""

from __future__ import annotations

import os

from hwtop.probes import proctree
from hwtop.probes.job.records import _Stat, _Static, _Tracked, parse_job_stat
from hwtop.probes.procfiles import read_bytes
from hwtop.probes.sysfs import parse_uptime


class ProcessTable:
    """What hwtop keeps of each live process, keyed by pid and start time: forgotten when the process ends."""

    __slots__ = ("_tracked", "proc")

    def __init__(self, proc: str) -> None:
        self.proc = proc
        self._tracked: dict[tuple[int, int], _Tracked] = {}

    def stat(self, pid: int) -> _Stat | None:
        try:
            return parse_job_stat(read_bytes(f"{self.proc}/{pid}/stat").decode("utf-8", "replace"))
        except (OSError, ValueError, IndexError):
            return None

    def stats(self) -> dict[int, _Stat]:
        """Every process's stat: one scan of /proc."""
        out = {}
        try:
            names = os.listdir(self.proc)
        except OSError:
            return out
        for name in names:
            if name.isdigit():
                stat = self.stat(int(name))
                if stat is not None:
                    out[stat.pid] = stat
        return out

    def uptime(self) -> float | None:
        try:
            return parse_uptime(read_bytes(f"{self.proc}/uptime"))
        except OSError:
            return None

    def static_of(self, stat: _Stat) -> _Static:
        """Its command line, environment, Python or not, launcher or not: read once while it lives (a zombie's files
        are empty: read again if it is ever seen alive)."""
        key = (stat.pid, stat.start)
        tracked = self._tracked.get(key)
        if tracked is not None:
            return tracked.static
        base = f"{self.proc}/{stat.pid}"
        try:
            argv = proctree.argv_of(read_bytes(f"{base}/cmdline", limit=1 << 16))
        except OSError:
            argv = ()
        try:
            environ: dict[str, str] | None = proctree.parse_environ(read_bytes(f"{base}/environ", limit=1 << 20))
        except OSError:
            environ = None  # another user's process: environ needs ptrace rights
        try:
            exe: str | None = os.readlink(f"{base}/exe")
        except OSError:
            exe = None
        static = _Static(argv, environ, proctree.is_python(argv, exe, stat.name),
                         proctree.launcher_kind(argv, stat.name))
        if stat.state != "Z" and argv:
            self._tracked[key] = _Tracked(static)
        return static

    def tracked(self, stat: _Stat, static: _Static) -> _Tracked:
        """What the figures keep of this process between ticks; kept while it is not a zombie."""
        key = (stat.pid, stat.start)
        tracked = self._tracked.get(key) or _Tracked(static)
        if stat.state != "Z":
            self._tracked[key] = tracked
        return tracked

    def forget(self, stats: dict[int, _Stat]) -> None:
        """Drop every process that is not among `stats` alive (ended, or a zombie now)."""
        alive = {(s.pid, s.start) for s in stats.values() if s.state != "Z"}
        for key in [k for k in self._tracked if k not in alive]:
            del self._tracked[key]
