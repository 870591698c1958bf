"""Job focus: a training job — the processes the user named and all their descendants (the launcher, the ranks,
DataLoader workers), found anew each tick so that workers started later join it. For each live process: CPU,
PSS, threads and how they are scheduled, role, GPU, CPU affinity against the CPUs its threads last ran on, NUMA
placement, I/O, major faults and the disks its open files live on. For the job: workers born and exited in the
last minute, pressure stalls, its memory cgroup, and (with sample_stacks) where each rank's time goes.

Work per tick grows with the live processes only: a process that ended is forgotten (a rank keeps a row with
its exit code; a DataLoader worker only counts in "N exited in the last minute"). The costlier files
(smaps_rollup, numa_maps, fd) are read on their own schedules, a bounded number per tick.

The parts, one module each (JobProbe in probe.py composes them): records.py (/proc/PID/stat, what is kept per
process), state.py (the probe's fields), focus.py (which processes are the job), tree.py (the process tree and
roles), figures.py (each process's figures), workers.py (DataLoader workers), resources.py (cores, pressure,
cgroup, swap, disks), ranks.py (stacks to ranks). This package re-exports their public names."""

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
from hwtop.probes.job.probe import KEPT_WHEN_GONE, MAX_GONE_ROWS, JobProbe
from hwtop.probes.job.ranks import main_processes, with_stacks
from hwtop.probes.job.records import exit_code_of, parse_job_stat
from hwtop.probes.job.resources import DEVICE_MEMORY_S
from hwtop.probes.job.state import MAX_PROCESSES, WORKER, JobError, StackSource
from hwtop.probes.job.workers import MINUTE_S
from hwtop.probes.procfiles import parse_numa_maps

__all__ = ["DEVICE_MEMORY_S", "FDS_PER_TICK", "KEPT_WHEN_GONE", "MAX_GONE_ROWS", "MAX_PROCESSES", "MINUTE_S",
           "NCCL_VARIABLES_MAX", "NUMA_EVERY_S", "PATTERN_RESCAN_S", "PSS_EVERY_S", "PSS_PER_TICK", "WORKER",
           "JobError", "JobProbe", "StackSource", "exit_code_of", "main_processes", "nccl_variables",
           "parse_job_stat", "parse_numa_maps", "with_stacks"]
