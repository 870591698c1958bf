"""The job table's rows: its processes now, then the ranks and launchers that ended (with their exit codes); and
whether the job runs or ended, since when."""

from __future__ import annotations

import msgspec.structs

from hwtop.model.job import JobProcess, JobStatus
from hwtop.model.workload import WorkloadState
from hwtop.probes.job.records import ExitCodes

MAX_GONE_ROWS = 32  # ended ranks/launchers kept as rows (with exit codes); workers are only counted
KEPT_WHEN_GONE = ("launcher",)  # and ranks and roots


class JobRows:
    """Last tick's rows, from which an ended rank keeps its row; when the job was first seen ended."""

    __slots__ = ("ended_at", "exit_codes", "last")

    def __init__(self, exit_codes: ExitCodes) -> None:
        self.exit_codes = exit_codes
        self.last: dict[int, JobProcess] = {}  # last tick's rows by pid
        self.ended_at: float | None = None

    def read(self, processes: list[JobProcess], workload: WorkloadState | None) -> list[JobProcess]:
        """This tick's rows: `processes`, then the kept rows of those that ended (at most MAX_GONE_ROWS)."""
        current = {p.pid: p for p in processes}
        for pid, last in self.last.items():  # gone since the last tick
            if pid in current or not _kept(last):
                continue  # a worker or helper that ended: counted, not kept
            current[pid] = last if not last.alive else msgspec.structs.replace(
                last, alive=False, state="gone", cpu_percent=None, exit_code=self.exit_codes.get(pid, last.exit_code))
        if workload is not None and workload.exit_code is not None:
            for pid in workload.pids:
                if pid in current and not current[pid].alive and current[pid].exit_code is None:
                    current[pid] = msgspec.structs.replace(current[pid], exit_code=workload.exit_code)
        live_pids = {p.pid for p in processes}
        gone = [p for pid, p in current.items() if pid not in live_pids][-MAX_GONE_ROWS:]
        rows = [current[p.pid] for p in processes] + gone
        self.last = {p.pid: p for p in rows}
        return rows

    def status(self, alive: list[JobProcess], wall: float) -> JobStatus:
        """running while any process is alive; ended from then on (`ended_at`: when first seen ended)."""
        if alive:
            self.ended_at = None
            return "running"
        if self.ended_at is None:
            self.ended_at = wall
        return "ended"


def _kept(row: JobProcess) -> bool:
    """A rank, a launcher or a root keeps its row when it ends."""
    return row.role.startswith("rank") or row.role in KEPT_WHEN_GONE or row.depth == 0


def ended_message(rows: list[JobProcess]) -> str:
    codes = [f"pid {p.pid}: {p.exit_code}" for p in rows if p.exit_code is not None]
    return "the job ended" + (f"; exit codes {', '.join(codes)}" if codes else
                              "; exit codes are known only for processes hwtop started or saw as zombies")

