"""Choosing the job: the named pids (climbing from a rank to its launcher), a pattern or an owner's processes."""

from __future__ import annotations

import os
import re

from hwtop.probes import owners, proctree
from hwtop.probes.job.records import _Stat
from hwtop.probes.job.state import MAX_PROCESSES, JobError
from hwtop.probes.job.table import ProcessTable
from hwtop.probes.procfiles import read_bytes

PATTERN_RESCAN_S = 5.0


class JobFocus:
    """Which processes are the job: checked once at start, the pattern re-matched every PATTERN_RESCAN_S. Keeps
    what the caller named (roots, pattern, label), what the pattern or owner matched, and the note shown when a
    named rank led to its launcher."""

    __slots__ = ("_cmdlines", "_matched", "_matched_at", "_owners", "_regex", "exclude", "label", "note", "pattern",
                 "proc", "roots", "table")

    def __init__(self, table: ProcessTable, roots: tuple[int, ...], pattern: str | None, label: str,
                 exclude: frozenset[int] | None, root: str) -> None:
        self.table = table
        self.proc = table.proc
        self.roots = roots
        self.pattern = pattern
        self.label = label
        self.note: str | None = None  # how the named pid led to the job (a rank → its launcher)
        self.exclude = exclude if exclude is not None else (
            proctree.own_lineage(self.proc) if root == "/" else frozenset())  # hwtop and its ancestors
        self._regex: re.Pattern[str] | None = None
        self._matched: tuple[int, ...] = ()
        self._matched_at = -1e9
        self._cmdlines: dict[tuple[int, int], str] = {}
        self._owners = owners.OwnerFocus(self.proc, pattern)  # --job slurm:ID / pod:NAME; the title's job or pod
        if self._owners.target is not None:
            self.label = self.label or owners.describe_target(self._owners.target)
        elif pattern is not None:
            number, text = proctree.parse_target(pattern)
            if number is not None:
                self.roots, self.pattern = (*self.roots, number), None
            else:
                try:
                    self._regex = re.compile(text or "")
                except re.error as error:
                    raise JobError(f"--job {pattern!r} is not a regular expression: {error}") from None
        if not self.label:
            self.label = f"pid {', '.join(map(str, self.roots))}" if self.roots else f"job /{self.pattern}/"

    @property
    def matched(self) -> tuple[int, ...]:
        """The topmost processes the pattern or owner matched at the last scan."""
        return self._matched

    def rescan(self, mono: float) -> None:
        """Match the pattern or owner again, every PATTERN_RESCAN_S: a job started later joins."""
        if self._searching and mono - self._matched_at >= PATTERN_RESCAN_S:
            self._matched_at = mono
            self._find_matches(self.table.stats())

    def present(self, stats: dict[int, _Stat]) -> list[int]:
        """This tick's roots: the named and matched processes still there."""
        return [pid for pid in (*self.roots, *self._matched) if pid in stats]

    def check(self, strict: bool = False) -> None:
        """At start: every named pid exists and can be read, and is not hwtop or its shell; a pattern matches
        something. `strict` (doctor): the job runs Python and its /proc files can be read. Raises JobError."""
        stats = self.table.stats()
        for pid in self.roots:
            base = f"{self.proc}/{pid}"
            if pid in self.exclude:
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
            if self._owners.target is not None:
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
            if current in stats and self.table.static_of(stats[current]).python:
                return True
            todo += children.get(current, [])
        return False

    def _find_matches(self, stats: dict[int, _Stat]) -> list[int]:
        """The topmost processes whose command line matches (or that the owner holds): never hwtop, its ancestors
        or its children."""
        own = os.getpid()
        candidates = [stat for pid, stat in stats.items()
                      if not (pid in self.exclude or stat.ppid == own or stat.state == "Z")]
        if self._owners.target is not None:
            found = [stat.pid for stat in candidates if self._owners.matches(stat.pid, stat.start)]
            self._cmdlines = {}
        else:
            found = self._matching(candidates)
        self._owners.forget({pid: stat.start for pid, stat in stats.items()})
        tops = _topmost(found, stats)
        self._matched = tuple(sorted(tops))
        return tops

    def _matching(self, candidates: list[_Stat]) -> list[int]:
        """The candidates whose command line (or, without one, name) the pattern finds. Only command lines are
        read, kept per process between scans, not every process's environment."""
        assert self._regex is not None
        found = []
        cmdlines: dict[tuple[int, int], str] = {}
        for stat in candidates:
            key = (stat.pid, stat.start)
            text = self._cmdlines.get(key)
            if text is None:
                try:
                    text = " ".join(proctree.argv_of(read_bytes(f"{self.proc}/{stat.pid}/cmdline", limit=1 << 16)))
                except OSError:
                    text = ""
            cmdlines[key] = text
            if self._regex.search(text or stat.name):
                found.append(stat.pid)
        self._cmdlines = cmdlines
        return found

    def _climb(self, stats: dict[int, _Stat]) -> None:
        """A named rank stands for its whole job: while its parent is a launcher, focus on the parent."""
        climbed = []
        for pid in self.roots:
            top = pid
            while top in stats and stats[top].ppid in stats and stats[top].ppid not in self.exclude:
                parent = stats[stats[top].ppid]
                if self.table.static_of(parent).launcher is None:
                    break
                top = parent.pid
            climbed.append(top)
            if top != pid:
                launcher = self.table.static_of(stats[top]).launcher
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
        return self._regex is not None or self._owners.target is not None

    def title(self, roots: list[int], members: dict[int, int]) -> str:
        """The job's label, naming the Slurm job or pod of its first processes (`members`: pid → start time)."""
        order = [(pid, members[pid]) for pid in dict.fromkeys([*roots, *members]) if pid in members]
        return self._owners.title(self.label, order)


def _topmost(found: list[int], stats: dict[int, _Stat]) -> list[int]:
    """The found processes no other found process is an ancestor of."""
    matched = set(found)
    tops = []
    for pid in found:
        ancestor, hops = stats[pid].ppid, 0
        while ancestor in stats and ancestor not in matched and ancestor > 1 and hops < 64:
            ancestor, hops = stats[ancestor].ppid, hops + 1
        if ancestor not in matched:
            tops.append(pid)
    return tops
