"""The model of a focused job (`--pid`, `--job`, f on a process, the embedded workload from its first step): its
processes, their stacks, the pressure and memory limits of its cgroup. Kept apart from model/snapshot.py, so a
monitor with no focused job never imports this module."""

from __future__ import annotations

from typing import Literal

from hwtop.model.flight import FlightRank
from hwtop.model.ras import NcclView
from hwtop.model.record import Record

JobStatus = Literal["running", "ended"]


class WorkerBirths(Record, frozen=True):
    """DataLoader workers one parent started within the last minute, against the most it ran at once."""

    parent: int
    born: int
    span_s: float  # how much of the minute hwtop has watched this parent
    peak_alive: int


class Pressure(Record, frozen=True):
    """Pressure stall information over the last tick, in % of wall time: `some` = at least one task stalled on
    the resource. `source` is "cgroup <path>" when the job's own cgroup reports it, else "system"."""

    source: str
    cpu_some: float | None
    io_some: float | None
    io_full: float | None
    memory_some: float | None
    memory_full: float | None


class CgroupMemory(Record, frozen=True):
    """The memory cgroup the job's root runs in, where it has a limit."""

    path: str
    used_bytes: int
    limit_bytes: int | None
    # processes the kernel's OOM killer has ended in it, ever (oom_kill): v2's memory.events counts its subtree
    # (Linux 5.2+, unless mounted with memory_localevents: then, as v1's memory.oom_control, the group alone)
    oom_kills: int | None = None


class Stillness(Record, frozen=True):
    """A main thread whose every stack sample was the same stack (frames and lines) for `seconds` up to its last
    samples: a thread that is blocked, or spins on one line. `frame` is its innermost frame, `site` the innermost
    frame of the job's own code (`file:line function`); `category` is the stack's (probes/stack_classify.py)."""

    seconds: float
    samples: int
    frame: str | None = None
    site: str | None = None
    category: str = "other"
    fetching: bool = False  # a DataLoader worker's stack inside its fetch (the Dataset, collate), not its idle wait


class WorkerStacks(Record, frozen=True):
    """Samples of one DataLoader worker's main thread over the last `window_s`: the share it spent making a batch
    (inside the loader's fetch: the Dataset's __getitem__ and collate) rather than waiting for the next index,
    the commonest site of the job's own code while making one, and whether its stack has stopped moving."""

    pid: int
    parent: int | None
    samples: int
    window_s: float
    busy: float  # share of the samples inside the fetch
    site: str | None = None
    still: Stillness | None = None
    python: float | None = None  # share of its fetch samples in the job's own Python lines (a loop, not a library)


class RankStacks(Record, frozen=True):
    """Samples of one rank's main thread over the last `window_s`, sorted into categories. `fractions` and
    `sites` are (category, value) pairs; a site is the innermost frame of the job's own code in that category."""

    pid: int
    rank: int | None
    samples: int
    window_s: float
    fractions: tuple[tuple[str, float], ...] = ()
    sites: tuple[tuple[str, str], ...] = ()
    data_loader: str | None = None  # "single-process" (num_workers=0) or "multi-process", as the stack shows
    message: str | None = None
    phase_seconds: tuple[tuple[str, float], ...] = ()  # cumulative seconds per category since first sampled
    busy_site: str | None = None  # the commonest own-code site outside waits (collective, data, workers), else in them
    main_running: float | None = None  # share of the window its main thread was on a CPU or queued for one
    main_cpu: float | None = None  # ...on a CPU only, in its quietest chunk, for a rank without a GPU (schedstat)
    updated_at: float | None = None  # wall-clock time of the last samples read
    still: Stillness | None = None  # its main thread's stack has not moved: for how long, and where
    handover: float = 0.0  # share of its samples in "data" receiving a batch already made, not waiting for one
    data_python: float | None = None  # share of its "data" samples in the job's own Python lines (num_workers=0)

    def fraction(self, category: str) -> float:
        return next((value for name, value in self.fractions if name == category), 0.0)

    def site(self, category: str) -> str | None:
        return next((value for name, value in self.sites if name == category), None)

    @property
    def data_wait(self) -> float:
        """The share it waits for a batch to be made: "data" less the hand-over of batches already made."""
        return max(0.0, self.fraction("data") - self.handover)


class RankFigures(Record, frozen=True):
    """One rank of a job, as every reader sees it: the job view, `doctor`, the rules, the exporter
    (`hwtop_job_rank_seconds_total{job,rank,host,phase}`) and the fleet, which rebuilds these from Prometheus for
    the ranks of every host. `phase_seconds` are cumulative seconds of the rank's main thread per phase since hwtop
    began watching (counters: they only grow); `shares` are the fractions over the recent window (sum to ~1).
    Phases are the stack categories of probes/stack_classify.py (`compute`, `collective`, `data`, ...)."""

    rank: int
    host: str  # untrusted text (a host label from a remote exporter): render through safe_text
    pid: int | None = None
    local_rank: int | None = None
    gpu: int | None = None  # the GPU index the rank uses on its host, where known
    phase_seconds: tuple[tuple[str, float], ...] = ()
    shares: tuple[tuple[str, float], ...] = ()
    steps: int | None = None  # optimizer steps where the job's telemetry reports them (the embedded workload's)
    site: str | None = None  # its commonest own-code site outside waits, else where it waits: `file:line function`
    samples: int = 0  # stack samples behind `shares`
    seen_at: float | None = None  # wall-clock time (epoch s) these figures were last updated: a rank that stops
    # advancing while the others do is a hang (advice/ranks.py), so it compares across hosts
    # From NCCL RAS (model/ras.py): what NCCL says of the rank in the communicator judged as the
    # job's (NcclView.main: the one whose counts move); counts are collectives launched, not completed.
    collectives: tuple[tuple[str, int], ...] = ()  # (operation, collectives launched): AllReduce, ...
    lag: int | None = None  # collectives launched behind the most advanced rank, summed over operations
    nccl_state: str | None = None  # RUNNING, INIT, ABORT, UNRESPONSIVE, DEAD, ... (model/ras.py RasRank.state)
    nccl_only: bool = False  # known from RAS alone (another host's rank): no stack figures are expected of it
    # What the verdict weighs besides (advice/ranks.py judge): its main thread's stack stopped (for how
    # long, where), its share on a CPU, and its Flight Recorder (model/flight.py).
    still: Stillness | None = None
    main_running: float | None = None
    flight: FlightRank | None = None

    def share(self, phase: str) -> float:
        for name, value in self.shares:  # a plain loop: the rules ask it of every rank in every recent snapshot
            if name == phase:
                return value
        return 0.0

    @property
    def collective_share(self) -> float:
        return self.share("collective")


class JobProcess(Record, frozen=True):
    """One process of a focused job, with what /proc says of where it runs and what it touches."""

    pid: int
    ppid: int | None
    name: str
    cmdline: str | None
    role: str  # launcher | rank N | DataLoader worker | helper | process
    rank: int | None
    depth: int  # 0 for a root of the job, 1 for its children, ...
    state: str | None
    cpu_percent: float | None
    rss_bytes: int | None
    threads: int | None
    cpu_affinity: tuple[int, ...] | None
    thread_cpus: tuple[int, ...] = ()  # the CPUs its threads last ran on
    numa_pages: tuple[tuple[int, int], ...] | None = None  # (node, pages) from numa_maps; None: unreadable
    read_bytes_per_s: float | None = None
    write_bytes_per_s: float | None = None
    gpus: tuple[tuple[int, int | None], ...] = ()  # (GPU index, its memory there) from NVML
    cuda_visible_devices: str | None = None
    local_rank: int | None = None
    dataset_devices: tuple[tuple[str, int], ...] = ()  # (disk, open files on it)
    alive: bool = True
    exit_code: int | None = None  # known for a zombie, or for the embedded job
    pss_bytes: int | None = None  # proportional set size (smaps_rollup): shared pages divided among sharers
    major_faults_per_s: float | None = None  # pages read back from disk or swap on access
    runnable_threads: int | None = None  # threads in state R at this tick
    blocked_threads: int | None = None  # threads in state D (uninterruptible: waiting on storage, mostly)
    cpu_demand: float | None = None  # (time on a CPU + time waiting for one) per second, summed over threads
    run_wait_share: float | None = None  # of that demand, the share spent waiting in the run queue
    switches_per_s: float | None = None  # times its threads were put on a CPU, per second (schedstat)
    hot_thread_percent: float | None = None  # its busiest thread, running or queued, in % of one core
    hot_thread_name: str | None = None
    omp_num_threads: str | None = None  # OMP_NUM_THREADS from its environment, where readable
    nccl_env: tuple[tuple[str, str], ...] = ()  # its NCCL_* environment variables (NCCL_IB_DISABLE, ...), sorted
    world_size: int | None = None  # WORLD_SIZE and LOCAL_WORLD_SIZE (torchrun): ranks in all and on this host
    local_world_size: int | None = None


class JobSnapshot(Record, frozen=True):
    """The focused job: its roots and every descendant, live; after it ends, the last view and how it ended."""

    label: str
    roots: tuple[int, ...]
    status: JobStatus
    processes: tuple[JobProcess, ...]
    cpu_percent: float | None
    rss_bytes: int
    gpu_memory: tuple[tuple[int, int], ...] = ()  # (GPU index, bytes the job holds there)
    ended_at: float | None = None
    message: str | None = None  # what could not be read (permissions), or how it ended
    pids_seen: int = 0
    pss_bytes: int | None = None  # summed PSS of the live processes (RSS for any not yet read)
    workers_started_last_minute: int = 0
    workers_exited_last_minute: int = 0
    worker_births: tuple[WorkerBirths, ...] = ()  # per parent: DataLoader workers born in the last minute
    usable_cores: int | None = None  # CPUs the job may run on: its affinity, capped by its cgroup's CPU quota
    pressure: Pressure | None = None
    cgroup_memory: CgroupMemory | None = None
    stacks: tuple[RankStacks, ...] = ()  # where each rank's main thread spends its time, from py-spy samples
    stack_message: str | None = None  # why stacks are missing or partial (py-spy absent, ptrace refused)
    dataset_devices: tuple[tuple[str, int], ...] = ()  # (disk, files seen open on it by any process of the job)
    swap_in_pages_per_s: float | None = None  # the box's pages read back from swap (/proc/vmstat pswpin)
    ranks: tuple[RankFigures, ...] = ()  # per-rank figures (rank order); ranks of other hosts come from the fleet
    nccl: NcclView | None = None  # NCCL's own view of the job from its RAS service, where it answers
    worker_stacks: tuple[WorkerStacks, ...] = ()  # DataLoader workers sampled beside the ranks, where slots allow
