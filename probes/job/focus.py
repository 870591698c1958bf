"""Choosing the job: the named pids (climbing from a rank to its launcher), a pattern or an owner's processes."""

from __future__ import annotations

import os

from hwtop.probes import owners, proctree
from hwtop.probes.job.records import _Stat, _Static, _Tracked, parse_job_stat
from hwtop.probes.job.state import MAX_PROCESSES, JobError, JobState
from hwtop.probes.procfiles import read_bytes

PATTERN_RESCAN_S = 5.0


class JobFocus(JobState):
    """Which processes are the job: checked once at start, the pattern re-matched every PATTERN_RESCAN_S."""

    __slots__ = ()

    def check(self, strict: bool = False) -> None:
        """At start: every named pid exists and can be read, and is not hwtop or its shell; a pattern matches
        something. `strict` (doctor): the job runs Python and its /proc files can be read. Raises JobError."""
        stats = self._stats()
        for pid in self.roots:
            base = f"{self.proc}/{pid}"
            if pid in (self.exclude or ()):
                raise JobError(f"pid {pid} is hwtop itself or one of its parents (its shell): name the job's pid")
            if not os.path.isdir(base):
                raise JobError(f"no process with pid {pid}")
            try:
                read_bytes(f"{base}/stat")
            except PermissionError:
                raise JobError(f"cannot read {base}/stat: permission denied") from None
            except (FileNotFoundError, ProcessLookupError):
                raise JobError(f"no process with pid {pid}") from None
        if self._searching and not self._find_matches(stats):
            if self._owners is not None and self._owners.target is not None:
                raise JobError(f"no process of {owners.describe_target(self._owners.target)} on this host (hwtop "
                               "itself and its shell never count)")
            raise JobError(f"no process matches --job {self.pattern!r} (hwtop itself and its shell never do)")
        self._climb(stats)
        if strict:
            for pid in self.roots:
                self._check_readable(pid)
            if not any(self._runs_python(pid, stats) for pid in self._current_roots(stats)):
                pid = self.roots[0] if self.roots else self._matched[0]
                name = stats[pid].name if pid in stats else "?"
                raise JobError(f"pid {pid} ({name}) is not a Python process and starts none: nothing to diagnose")

    def _check_readable(self, pid: int) -> None:
        base = f"{self.proc}/{pid}"
        try:
            read_bytes(f"{base}/io")
        except PermissionError:
            try:
                owner = os.stat(base).st_uid
            except OSError:
                owner = -1
            raise JobError(f"no permission to inspect pid {pid} (its /proc files belong to uid {owner}): run hwtop "
                           "as the job's user or as root") from None
        except FileNotFoundError:
            if not os.path.isdir(base):
                raise JobError(f"no process with pid {pid}") from None

    def _runs_python(self, pid: int, stats: dict[int, _Stat]) -> bool:
        children: dict[int, list[int]] = {}
        for s in stats.values():
            children.setdefault(s.ppid, []).append(s.pid)
        todo, seen = [pid], 0
        while todo and seen < MAX_PROCESSES:
            current = todo.pop()
            seen += 1
            if current in stats and self._static_of(stats[current]).python:
                return True
            todo += children.get(current, [])
        return False

    def _stats(self) -> dict[int, _Stat]:
        out = {}
        try:
            names = os.listdir(self.proc)
        except OSError:
            return out
        for name in names:
            if name.isdigit():
                stat = self._stat(int(name))
                if stat is not None:
                    out[stat.pid] = stat
        return out

    def _stat(self, pid: int) -> _Stat | None:
        try:
            return parse_job_stat(read_bytes(f"{self.proc}/{pid}/stat").decode("utf-8", "replace"))
        except (OSError, ValueError, IndexError):
            return None

    def _static_of(self, stat: _Stat) -> _Static:
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
        if stat.state != "Z" and argv:  # a zombie's files are empty: read again if it is ever seen alive
            self._tracked[key] = _Tracked(static)
        return static

    def _find_matches(self, stats: dict[int, _Stat]) -> list[int]:
        """The topmost processes whose command line matches: never hwtop, its ancestors or its children. Only
        command lines are read (kept per process between scans), not every process's environment."""
        exclude = self.exclude or frozenset()
        own = os.getpid()
        found = []
        cmdlines: dict[tuple[int, int], str] = {}
        for pid, stat in stats.items():
            if pid in exclude or stat.ppid == own or stat.state == "Z":
                continue
            key = (pid, stat.start)
            if self._owners is not None and self._owners.target is not None:
                if self._owners.matches(pid, stat.start):
                    found.append(pid)
                continue
            assert self._regex is not None
            text = self._cmdlines.get(key)
            if text is None:
                try:
                    text = " ".join(proctree.argv_of(read_bytes(f"{self.proc}/{pid}/cmdline", limit=1 << 16)))
                except OSError:
                    text = ""
            cmdlines[key] = text
            if self._regex.search(text or stat.name):
                found.append(pid)
        self._cmdlines = cmdlines
        if self._owners is not None:
            self._owners.forget({pid: stat.start for pid, stat in stats.items()})
        matched = set(found)
        tops = []
        for pid in found:
            ancestor, hops = stats[pid].ppid, 0
            while ancestor in stats and ancestor not in matched and ancestor > 1 and hops < 64:
                ancestor, hops = stats[ancestor].ppid, hops + 1
            if ancestor not in matched:
                tops.append(pid)
        self._matched = tuple(sorted(tops))
        return tops

    def _climb(self, stats: dict[int, _Stat]) -> None:
        """A named rank stands for its whole job: while its parent is a launcher, focus on the parent."""
        climbed = []
        for pid in self.roots:
            top = pid
            while top in stats and stats[top].ppid in stats and stats[top].ppid not in (self.exclude or ()):
                parent = stats[stats[top].ppid]
                if self._static_of(parent).launcher is None:
                    break
                top = parent.pid
            climbed.append(top)
            if top != pid:
                launcher = self._static_of(stats[top]).launcher
                self.note = f"pid {pid} was started by {launcher} (pid {top}): showing the whole job"
        if climbed and tuple(climbed) != self.roots:
            self.roots = tuple(dict.fromkeys(climbed))
            self.label = f"pid {', '.join(map(str, self.roots))}"

    def _current_roots(self, stats: dict[int, _Stat]) -> list[int]:
        roots = [pid for pid in self.roots if pid in stats]
        if self._searching:
            roots += [pid for pid in self._matched if pid in stats and pid not in roots]
        return roots

    @property
    def _searching(self) -> bool:  # a pattern or an owner (--job slurm:ID) chooses the roots
        return self._regex is not None or (self._owners is not None and self._owners.target is not None)

    def _title(self, roots: list[int]) -> str:
        members = self._members
        order = [(pid, members[pid]) for pid in dict.fromkeys([*roots, *members]) if pid in members]
        return self._owners.title(self.label, order) if self._owners is not None else self.label
