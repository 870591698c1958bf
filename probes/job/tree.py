"""The job's process tree, walked from its roots each tick, and each process's role in it (rank, launcher, worker)."""

from __future__ import annotations

from hwtop.probes import proctree
from hwtop.probes.job.focus import JobFocus
from hwtop.probes.job.records import _Stat, _Static
from hwtop.probes.job.state import MAX_PROCESSES, WORKER


class ProcessTree(JobFocus):
    """The tree of the job's processes and their roles; what ended is forgotten."""

    __slots__ = ()

    def _walk(self) -> tuple[dict[int, _Stat], list[tuple[int, int]]]:
        """The job's processes, depth-first from its roots, so the table reads as a tree. Members stay members
        when their parent dies (orphaned workers are re-parented to init): still the job."""
        stats: dict[int, _Stat] = {}
        for pid in {*self.roots, *self._matched, *self._members}:
            stat = self._stat(pid)
            if stat is not None and (pid not in self._members or self._members[pid] == stat.start):
                stats[pid] = stat
        roots = [pid for pid in (*self.roots, *self._matched) if pid in stats]
        in_job = set(roots) | set(stats)
        tops = [pid for pid in in_job if pid in roots or stats[pid].ppid not in in_job]
        stack = [(pid, 0) for pid in sorted(set(tops), reverse=True)]
        order: list[tuple[int, int]] = []
        visited: set[int] = set()
        scanned: dict[int, _Stat] | None = None
        while stack and len(order) < MAX_PROCESSES:
            pid, depth = stack.pop()
            if pid in visited or pid in (self.exclude or ()):
                continue
            visited.add(pid)
            order.append((pid, depth))
            kids = proctree.children_of(self.proc, pid)
            if kids is None:  # no children files: one scan of /proc this tick
                if scanned is None:
                    scanned = self._stats()
                kids = [s.pid for s in scanned.values() if s.ppid == pid]
            for child in sorted(kids, reverse=True):
                if child not in stats:
                    stat = (scanned or {}).get(child) or self._stat(child)
                    if stat is None:
                        continue
                    stats[child] = stat
                stack.append((child, depth + 1))
        return stats, order

    def _role(self, stat: _Stat, static: _Static, parent: _Stat | None, stats: dict[int, _Stat],
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
        parent_static = self._static_of(parent) if parent is not None else None
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
            rank = proctree.rank_of(self._static_of(child).environ)
            if rank is not None and proctree.rank_of(self._static_of(parent).environ) is None:
                out.add(parent.pid)
        return out

    def _forget(self, stats: dict[int, _Stat]) -> None:
        alive = {(s.pid, s.start) for s in stats.values() if s.state != "Z"}
        for key in [k for k in self._tracked if k not in alive]:
            del self._tracked[key]
        live = {s.pid for s in stats.values()}
        self._exit_codes = {pid: code for pid, code in self._exit_codes.items()
                            if pid in live or pid in self._last}
