"""The job's process tree, walked from its roots each tick, and each process's role in it (rank, launcher, worker)."""

from __future__ import annotations

from hwtop.model.job import JobProcess
from hwtop.probes import proctree
from hwtop.probes.job.focus import JobFocus
from hwtop.probes.job.records import _Stat, _Static
from hwtop.probes.job.state import MAX_PROCESSES, WORKER
from hwtop.probes.job.table import ProcessTable


class ProcessTree:
    """The tree of the job's processes and their roles. Keeps the job's members (a member stays one when its
    parent dies: orphaned workers are re-parented to init) and how many processes it has had."""

    __slots__ = ("_env_launchers", "focus", "members", "seen", "table")

    def __init__(self, table: ProcessTable, focus: JobFocus) -> None:
        self.table = table
        self.focus = focus
        self.members: dict[int, int] = {}  # pid → start ticks of every live member
        self.seen = 0  # processes that have been members
        self._env_launchers: set[int] = set()

    def walk(self) -> tuple[dict[int, _Stat], list[tuple[int, int]]]:
        """The job's processes, depth-first from its roots, so the table reads as a tree; (pid, depth) in order."""
        stats = self._known()
        roots = self.focus.present(stats)
        in_job = set(roots) | set(stats)
        tops = [pid for pid in in_job if pid in roots or stats[pid].ppid not in in_job]
        stack = [(pid, 0) for pid in sorted(set(tops), reverse=True)]
        order: list[tuple[int, int]] = []
        visited: set[int] = set()
        scan: list[dict[int, _Stat]] = []  # one scan of /proc this tick, where a children file is missing
        exclude = self.focus.exclude
        while stack and len(order) < MAX_PROCESSES:
            pid, depth = stack.pop()
            if pid in visited or pid in exclude:
                continue
            visited.add(pid)
            order.append((pid, depth))
            for child in sorted(self._children(pid, scan), reverse=True):
                if child not in stats:
                    stat = (scan[0] if scan else {}).get(child) or self.table.stat(child)
                    if stat is None:
                        continue
                    stats[child] = stat
                stack.append((child, depth + 1))
        self._env_launchers = self._launchers_by_children(stats)
        return stats, order

    def _known(self) -> dict[int, _Stat]:
        """The roots, the matched processes and last tick's members that are still the same processes."""
        stats: dict[int, _Stat] = {}
        members = self.members
        for pid in {*self.focus.roots, *self.focus.matched, *members}:
            stat = self.table.stat(pid)
            if stat is not None and (pid not in members or members[pid] == stat.start):
                stats[pid] = stat
        return stats

    def _children(self, pid: int, scan: list[dict[int, _Stat]]) -> list[int]:
        kids = proctree.children_of(self.table.proc, pid)
        if kids is not None:
            return kids
        if not scan:  # no children files: one scan of /proc this tick
            scan.append(self.table.stats())
        return [s.pid for s in scan[0].values() if s.ppid == pid]

    def role(self, stat: _Stat, static: _Static, stats: dict[int, _Stat],
             workload_rank: dict[int, int]) -> tuple[str, int | None]:
        """(role, rank). Children inherit their rank's environment, so RANK alone does not make a rank: the
        topmost process carrying it does, or a Python child of a launcher; DataLoader workers name themselves
        pt_data_worker; a launcher is known by its executable or module."""
        argv = static.cmdline or ""
        if "resource_tracker" in argv or "multiprocessing.forkserver" in argv or "semaphore_tracker" in argv:
            return "helper", None
        if stat.name == "pt_data_worker":
            return WORKER, None
        rank = proctree.rank_of(static.environ)
        if rank is None:
            rank = workload_rank.get(stat.pid)
        parent = stats.get(stat.ppid)
        parent_static = self.table.static_of(parent) if parent is not None else None
        parent_rank = None
        if parent is not None and parent_static is not None:
            parent_rank = proctree.rank_of(parent_static.environ)
            if parent_rank is None:
                parent_rank = workload_rank.get(parent.pid)
        if static.launcher is not None:
            return "launcher", None
        if rank is not None and (parent_rank != rank or stat.pid in workload_rank):
            return f"rank {rank}", rank
        if parent_rank is not None:
            return "worker of a rank", None
        if parent_static is not None and parent_static.launcher is not None and static.python:
            return "rank ?", None  # a launcher's Python child whose environment cannot be read
        if stat.pid in self._env_launchers:
            return "launcher", None
        return "process", None

    def _launchers_by_children(self, stats: dict[int, _Stat]) -> set[int]:
        """Processes whose children carry a rank they do not (a launcher hwtop does not know by name)."""
        out = set()
        for child in stats.values():
            parent = stats.get(child.ppid)
            if parent is None:
                continue
            rank = proctree.rank_of(self.table.static_of(child).environ)
            if rank is not None and proctree.rank_of(self.table.static_of(parent).environ) is None:
                out.add(parent.pid)
        return out

    def remember(self, processes: list[JobProcess], stats: dict[int, _Stat]) -> None:
        """This tick's processes are the members the next walk starts from."""
        self.seen += sum(1 for p in processes if p.pid not in self.members)
        self.members = {p.pid: stats[p.pid].start for p in processes}
