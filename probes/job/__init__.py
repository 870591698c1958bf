"""Job focus: a training job — the processes the user named and all their descendants (the launcher, the ranks,
DataLoader workers), found anew each tick so that workers started later join it. For each live process: CPU,
PSS, threads and how they are scheduled, role, GPU, CPU affinity against the CPUs its threads last ran on, NUMA
placement, I/O, major faults and the disks its open files live on. For the job: workers born and exited in the
last minute, pressure stalls, its memory cgroup, and (with sample_stacks) where each rank's time goes.

Work per tick grows with the live processes only: a process that ended is forgotten (a rank keeps a row with
its exit code; a DataLoader worker only counts in "N exited in the last minute"). The costlier files
(smaps_rollup, numa_maps, fd) are read on their own schedules, a bounded number per tick.

The readers, one module each, each keeping its own state (JobProbe in probe.py composes them): table.py (the
processes known: their stat, static facts and what their figures keep, shared by the next three), focus.py (which
processes are the job), tree.py (the process tree and roles), figures.py (each process's figures), rows.py (the
table's rows, the ended ranks kept); then the parts, handed what the tick found (parts.py: where a new reader
plugs in): workers.py (DataLoader workers), resources.py (cores, pressure, cgroup, swap, disks), ranks.py (stacks
to ranks). records.py parses /proc/PID/stat; state.py holds what they all share. This package re-exports their
public names."""

from __future__ import annotations

from hwtop.probes.job.figures import (
           FDS_PER_TICK,
           NCCL_VARIABLES_MAX,
           NUMA_EVERY_S,
           PSS_EVERY_S,
           PSS_PER_TICK,
           nccl_variables,
)
from hwtop.probes.job.focus import PATTERN_RESCAN_S
from hwtop.probes.job.probe import JobProbe
from hwtop.probes.job.ranks import main_processes, with_stacks
from hwtop.probes.job.records import exit_code_of, parse_job_stat
from hwtop.probes.job.resources import DEVICE_MEMORY_S
from hwtop.probes.job.rows import KEPT_WHEN_GONE, MAX_GONE_ROWS
from hwtop.probes.job.state import MAX_PROCESSES, WORKER, JobError, StackSource
from hwtop.probes.job.workers import MINUTE_S
from hwtop.probes.procfiles import parse_numa_maps

__all__ = ["DEVICE_MEMORY_S", "FDS_PER_TICK", "KEPT_WHEN_GONE", "MAX_GONE_ROWS", "MAX_PROCESSES", "MINUTE_S",
           "NCCL_VARIABLES_MAX", "NUMA_EVERY_S", "PATTERN_RESCAN_S", "PSS_EVERY_S", "PSS_PER_TICK", "WORKER",
           "JobError", "JobProbe", "StackSource", "exit_code_of", "main_processes", "nccl_variables",
           "parse_job_stat", "parse_numa_maps", "with_stacks"]
