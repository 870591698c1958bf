"""Runs the job for the monitor: reads its telemetry on a background thread and keeps a small, bounded state
that the sampler copies into each snapshot (no torch here)."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

import msgspec.structs

from hwtop.model.serial import lenient_record
from hwtop.model.workload import AmpSummary, JobConfig, NonfiniteEvent, OomEvent, RankState, WorkloadState
from hwtop.workload.launcher import WorkloadProcess

STALL_S = 15.0  # no telemetry for this long while running: shown as stalled
RING = 60


class WorkloadMonitor:
    def __init__(self, job_args: list[str], env: dict[str, str] | None = None) -> None:
        self.job_args = job_args
        self.kind = next((job_args[i + 1] for i, a in enumerate(job_args[:-1]) if a == "--scenario"), "balanced")
        self._lock = threading.Lock()
        self._ranks: dict[int, dict[str, Any]] = {}
        self._rings: dict[tuple[int, str], deque[float]] = {}
        self._last_event: str | None = None
        self._last_record_at = time.monotonic()
        self._summary: AmpSummary | None = None
        self._config: JobConfig | None = None
        self._oom_count = 0
        self._last_oom: OomEvent | None = None
        self._nonfinite_steps = 0
        self._last_nonfinite: NonfiniteEvent | None = None
        self._pids: set[int] = set()
        self._stopped = False
        self.job = WorkloadProcess(job_args, env=env)
        self._pids.add(self.job.pgid)
        self._reader = threading.Thread(target=self._read, name="hwtop-workload", daemon=True)
        self._reader.start()

    @property
    def root(self) -> int:
        """The job's first process (its launcher, or its one rank), which leads its process group."""
        return self.job.pgid

    def _read(self) -> None:
        for record in self.job.records():
            with self._lock:
                self._last_record_at = time.monotonic()
                self._apply(record)
        self.job.wait()

    def _apply(self, record: dict[str, Any]) -> None:
        event, rank = record.get("event"), record.get("rank")
        if not isinstance(rank, int):
            return
        state = self._ranks.setdefault(rank, {})
        if event == "started":
            state.update(pid=record.get("pid"))
            if rank == 0 or self._config is None:
                self._config = lenient_record(JobConfig, record)
            if isinstance(record.get("pid"), int):
                self._pids.add(record["pid"])
        elif event == "step":
            state.update(record)
            if record.get("step_skipped") or record.get("loss_finite") is False:
                self._nonfinite_steps += 1
                self._last_nonfinite = msgspec.structs.replace(lenient_record(NonfiniteEvent, record),
                                                               skipped=record.get("step_skipped") is True)
            for key in ("step_time_s", "samples_per_s", "scale"):
                value = record.get(key)
                if isinstance(value, int | float):
                    ring = self._rings.setdefault((rank, key), deque(maxlen=RING))
                    ring.append(float(value))
        if event == "diverged":
            self._last_nonfinite = msgspec.structs.replace(lenient_record(NonfiniteEvent, record), stopped=True)
        if event != "step":
            detail = ", ".join(f"{key.replace('_', ' ')} {record[key]}" for key in
                               ("batch_size", "largest_fit", "steps", "message") if record.get(key) is not None)
            self._last_event = f"rank {rank} {event}" + (f": {detail}" if detail else "")
        if event == "summary":
            self._summary = lenient_record(AmpSummary, record)
        if event == "oom":
            self._oom_count += 1
            self._last_oom = lenient_record(OomEvent, record)

    def state(self) -> WorkloadState:
        with self._lock:
            code = self.job.process.poll()
            if self._stopped and code is not None:
                status = "stopped"
            elif code is None:
                quiet = time.monotonic() - self._last_record_at
                status = "stalled" if self._ranks and quiet > STALL_S else "running" if self._ranks else "starting"
            elif code == 0:
                status = "finished"
            else:
                status = "crashed"
            ranks = tuple(
                RankState(
                    rank=rank, pid=s.get("pid"), step=s.get("step"), step_time_s=s.get("step_time_s"),
                    samples_per_s=s.get("samples_per_s"), data_wait_fraction=s.get("data_wait_fraction"),
                    loss=s.get("loss"), amp=s.get("amp"), scale=s.get("scale"), batch_size=s.get("batch_size"),
                    rss_bytes=s.get("rss_bytes"), cuda_allocated_bytes=s.get("cuda_allocated_bytes"),
                    cuda_reserved_bytes=s.get("cuda_reserved_bytes"), cuda_peak_bytes=s.get("cuda_peak_bytes"),
                    step_times=tuple(self._rings.get((rank, "step_time_s"), ())),
                    throughput=tuple(self._rings.get((rank, "samples_per_s"), ())),
                    scales=tuple(self._rings.get((rank, "scale"), ())),
                )
                for rank, s in sorted(self._ranks.items()))
            tail = tuple(self.job.stderr_tail)[-3:] if status == "crashed" else ()
            return WorkloadState(
                kind=self.kind, status=status, exit_code=code, ranks=ranks, last_event=self._last_event,
                stderr_tail=tail, pids=tuple(sorted(self._pids)), garbage_lines=self.job.garbage_lines,
                summary=self._summary, config=self._config, oom_count=self._oom_count, last_oom=self._last_oom,
                nonfinite_steps=self._nonfinite_steps, last_nonfinite=self._last_nonfinite,
            )

    def stop(self) -> None:
        self._stopped = True
        self.job.stop()

    def last_stderr(self, wait_s: float) -> tuple[str, ...]:
        """Its stderr's last lines once its output has been drained (it has ended): the reader thread reads
        stderr once stdout has closed."""
        self._reader.join(wait_s)
        return tuple(self.job.stderr_tail)
