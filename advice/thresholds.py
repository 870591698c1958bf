"""Every number the rules compare against, with where it comes from. A config file may override any of them
(`[advice.thresholds]` in ~/.config/hwtop/config.toml, read by session.config); unknown names and values outside
their unit's bounds are refused, not ignored. The numbers several rules or a panel share are declared here, in
TABLE; a rule may declare its own beside it (`@rule(..., thresholds={...})`, advice/registry.py), which stays the
rule's: nothing is added to TABLE as modules import. The table of every name is built from the rules found
(advice.rules.THRESHOLDS) where it is wanted (the config file's schema, the docs' test); the monitor's first frame
imports no rule (its panels read only the names declared here)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import msgspec


class Threshold(msgspec.Struct, frozen=True):
    value: float
    unit: str
    why: str

    @property
    def bounds(self) -> tuple[float, float]:
        """What a config file may set it to, by its unit."""
        return BOUNDS_OF_UNIT.get(self.unit, ANY_COUNT)


TABLE: Mapping[str, Threshold] = MappingProxyType({
    "gpu_memory_full_percent": Threshold(
        95.0, "%", "device memory above ~95% of total leaves no room for the allocator's next block"),
    "fragmentation_ratio": Threshold(
        1.5, "x", "hwtop's choice: reserved above 1.5x allocated (and >1 GiB cached) is memory the caching "
        "allocator holds but cannot hand to the next, larger request; PyTorch's CUDA notes name expandable_segments "
        "for this"),
    "fragmentation_min_bytes": Threshold(1 << 30, "B", "below 1 GiB of cache, fragmentation is not worth a fix"),
    "gpu_waiting_util_percent": Threshold(
        50.0, "%", "hwtop's choice: a training step keeps NVML utilisation near 100%; under half over 10 s "
        "means the GPU waits for something"),
    "numa_local_memory_share": Threshold(
        0.5, "fraction", "hwtop's choice: a rank with under half its resident pages on its GPU's node pays the "
        "inter-socket link on most host-side copies"),
    "gpu_busy_util_percent": Threshold(
        30.0, "%", "hwtop's choice: above this a GPU is doing real work; idle GPUs lower clocks "
        "and PCIe speed on purpose (advice/judge.py: the rules' and the panels' one answer to 'is this GPU busy?')"),
    "data_wait_fraction": Threshold(
        0.3, "fraction", "a step that spends 30% of its time waiting for the next batch is input-bound; the "
        "balanced scenario measures 0.14 here, dataloader-bound 0.83"),
    "core_pegged_percent": Threshold(90.0, "%", "hwtop's choice: a core above 90% has no headroom left"),
    "core_idle_percent": Threshold(25.0, "%", "hwtop's choice: a core below 25% is mostly idle"),
    "idle_core_share": Threshold(0.75, "fraction", "'most other cores idle': three in four"),
    "min_cores_for_single_core": Threshold(4, "cores", "with fewer cores, one busy core is not 'most idle'"),
    "iowait_percent": Threshold(
        20.0, "%", "hwtop's choice: average iowait (vmstat's 'wa' column) above 20% of CPU time means the "
        "CPUs wait on storage"),
    "disk_class_share": Threshold(
        0.8, "fraction", "hwtop's choice: reading at 80% of its class's throughput leaves the disk no headroom"),
    "hdd_bytes_per_s": Threshold(150e6, "B/s", "hardware guide: HDD ~150 MB/s"),
    "ssd_bytes_per_s": Threshold(550e6, "B/s", "hardware guide: SATA SSD ~550 MB/s (SATA 3 is 600 MB/s raw)"),
    "nvme_bytes_per_s": Threshold(7e9, "B/s", "hardware guide: NVMe ~7 GB/s (PCIe 4.0 x4)"),
    "disk_busy_percent": Threshold(90.0, "%", "hwtop's choice: busy 90% of the time (iostat's %util) is saturated"),
    "memory_available_percent": Threshold(
        10.0, "%", "hwtop's choice: under 10% available, the page cache that feeds the DataLoader is being "
        "squeezed out"),
    "swap_growth_bytes": Threshold(256 * (1 << 20), "B", "hwtop's choice: 256 MiB more swap within the window is "
                                                         "steady paging, not noise"),
    "straggler_ratio": Threshold(
        0.7, "fraction", "hwtop's choice: a rank's GPU below 70% of the busiest rank's utilisation; in DDP every "
        "all-reduce waits for the slowest rank"),
    "spin_util_percent": Threshold(
        95.0, "%", "hwtop's choice: NCCL's kernels poll a flag while they wait for a peer, so NVML reports the GPU "
        "busy the whole time"),
    "spin_power_share": Threshold(
        0.35, "fraction", "hwtop's choice: ...yet polling draws little power; a GPU that computes at 95% utilisation "
        "draws well over a third of its power limit"),
    "spin_seconds": Threshold(20.0, "s", "hwtop's choice: a collective takes milliseconds; 20 s of flat spinning "
                                         "is a rank that never arrived, not a slow step"),
    # ----- a focused job, with or without a GPU -----
    "stack_min_samples": Threshold(
        20, "samples", "hwtop's choice: with 20 samples a 30% share has a standard error of ~10 points; fewer "
        "say too little"),
    "worker_births_per_min": Threshold(
        10, "workers/min", "hwtop's choice: ten new DataLoader workers a minute from one parent is a new set at "
        "least every epoch of a few seconds; each start forks the parent and rebuilds the Dataset"),
    "worker_generations": Threshold(
        2, "sets", "a parent that started twice as many workers as it ever ran at once replaced them at least once"),
    "single_core_spare_cores": Threshold(
        0.5, "cores", "hwtop's choice: 'the other cores idle' = the job leaves at least half a usable core "
                      "unused (torch's own threads take a little of it between steps)"),
    "oversubscription_ratio": Threshold(
        1.5, "x", "hwtop's choice: threads wanting 1.5x the usable cores queue a third of their time; a "
                  "job sized to its cores stays near 1x"),
    "runqueue_wait_share": Threshold(
        0.25, "fraction", "hwtop's choice: the job's threads spend a quarter of their runnable time in the run "
                          "queue (schedstat) instead of on a CPU"),
    "io_psi_some_percent": Threshold(
        10.0, "%", "hwtop's choice: some task stalled on I/O 10% of the time (PSI, kernel "
                   "Documentation/accounting/psi.rst)"),
    "blocked_worker_share": Threshold(
        0.25, "fraction", "hwtop's choice: a DataLoader worker seen in D state (waiting on storage) in a quarter "
                          "of the ticks"),
    "memory_psi_some_percent": Threshold(
        10.0, "%", "hwtop's choice: some task stalled on memory (reclaim, refaults, swap-in) 10% of the time "
                   "(PSI, kernel Documentation/accounting/psi.rst)"),
    "major_faults_per_s": Threshold(
        20.0, "faults/s", "hwtop's choice: pages read back from disk or swap at 20/s is a working set that no "
                          "longer fits"),
    "cgroup_memory_full_share": Threshold(
        0.9, "fraction", "hwtop's choice: a cgroup at 90% of its memory limit reclaims its own page cache"),
    # ----- the user's own job: the loader's arithmetic, hangs, work in the loop, memory that grows -----
    "loader_headroom": Threshold(
        1.25, "x", "hwtop's choice: workers that make batches 25% faster than the step uses them absorb a slow "
                   "sample or a slow step without a stall; exactly enough workers stall on every hiccup"),
    "starved_step_speedup": Threshold(
        2.0, "x", "hwtop's choice, the least measured: a step measured while it starves runs cold (torch's intra-op "
                  "threads asleep, its weights out of cache); fed back to back, tests/jobs/slow_store.py's step "
                  "(--hidden 512) took its main thread 2.0x (one intra-op thread) to 4.6x (two, under doctor on a "
                  "loaded box) less CPU on a 2-core box (benchmarks/starved_step.py, benchmarks/README.md). Workers "
                  "that wait more than they compute are named for a step this much faster: each costs little CPU, "
                  "and too few leave the fed loop waiting"),
    "loader_max_workers": Threshold(
        64, "workers", "hwtop's choice: the most DataLoader workers named for one rank, however little each costs: "
                       "each is a process with its own copy of the Dataset and a thread in the main process to feed "
                       "it. tests/jobs/slow_store.py with its first, tiny model (--hidden 512) on 2 cores read "
                       "3-15% waiting with 46 to 110 workers, yet its rate still rose with each worker up to 64 "
                       "and past it: a bound, not a fed loop; the fix says what it leaves (benchmarks/README.md)"),
    "stuck_stack_s": Threshold(
        10.0, "s", "hwtop's choice: a sample or a step takes milliseconds to seconds; a thread whose every stack "
                   "sample shows the same frames and lines for 10 s (two of the sampler's chunks, "
                   "probes/stack_sampler.py) while the loop waits on it has stopped. DataLoader's own timeout "
                   "defaults to 0: it would wait forever"),
    "stuck_cpu_percent": Threshold(
        5.0, "%", "hwtop's choice: a blocked thread uses no CPU; under 5% of a core (py-spy's own sampling and "
                  "a queue's timed poll included) is waiting, not working"),
    "stuck_switches_per_s": Threshold(
        1.0, "switches/s", "hwtop's choice: a thread blocked on a lock or a dead mount is never put on a CPU; a "
                           "worker that sleeps between slow reads has one stack too, but is woken for each read "
                           "(tests/jobs/slow_store.py's worker: ~50/s)"),
    "loop_python_share": Threshold(
        0.5, "fraction", "hwtop's choice: a main thread in the job's own Python (outside torch's modules, the "
                         "optimizer and the DataLoader) half its samples does per step as much outside the model "
                         "as in it; tests/jobs/tokenize_in_loop.py measures ~0.9, its fixed twin under 0.1"),
    "loop_running_share": Threshold(
        0.5, "fraction", "hwtop's choice: ...and is on a CPU at least half the time (schedstat), and beyond its "
                         "compute share for at least half its own Python's: work, not a sleep or a wait in the job's "
                         "own code (tests/jobs/stuck_worker.py --no-hang sleeps 20 ms a step: 52% 'other', 15% "
                         "running beyond compute)"),
    "loop_training_share": Threshold(
        0.005, "fraction", "hwtop's choice: a main thread that computed or waited for data in under 0.5% of its "
                           "samples is not in its training loop yet (importing torch, building its dataset: none "
                           "there); tests/jobs/tokenize_in_loop.py computes in 0.5-3.5% of a window's on a quiet "
                           "2-core box"),
    "memory_growth_span_s": Threshold(
        15.0, "s", "hwtop's choice: the job's PSS is read every 2 s (probes/job/figures.py PSS_EVERY_S): 15 s gives "
                   "the line seven points or more"),
    "memory_growth_min_bytes": Threshold(
        64 * (1 << 20), "B", "hwtop's choice: a job's memory moves by tens of MiB as the allocator and the "
                             "prefetch queues breathe; 64 MiB more, steadily, is growth"),
    "memory_growth_floor_bytes_per_s": Threshold(
        1 << 20, "B/s", "hwtop's choice: under 1 MiB/s a day adds under 84 GiB: left to job-memory-pressure "
                        "when it bites"),
    "memory_growth_fit": Threshold(
        0.8, "fraction", "hwtop's choice: the job's memory over the window fits a straight line (R^2 >= 0.8): a "
                         "climb, not one step up (a step and a plateau fits worse; tests/jobs/keep_losses.py on a "
                         "quiet box climbs fast, then a little slower: R^2 0.92)"),
    "memory_growth_level_share": Threshold(
        0.5, "fraction", "hwtop's choice: growth that levels off (a cache that fills, the allocator warming up) "
                         "grows in the last third of the window at under half its rate in the middle third: quiet"),
    "memory_exhaustion_s": Threshold(
        24 * 3600.0, "s", "hwtop's choice: a job that would run the box (or its cgroup) out of memory within a day "
                          "at its rate is named now, long before pressure; the OOM killer ends it otherwise"),
    # ----- the ranks of a job -----
    "straggler_peer_wait_share": Threshold(
        0.4, "fraction", "hwtop's choice, measured on tests/jobs/ddp_straggler.py (gloo, 2 ranks, a 2-core box at "
                         "load ~9): with one rank slowed the other waits in collectives 52-91% of its samples (52% "
                         "in a first 3 s chunk); balanced, the two wait 35% and 43%, so the ratio below decides"),
    "straggler_own_wait_ratio": Threshold(
        0.33, "fraction", "hwtop's choice: the straggler waits at most a third as much as the others (measured: "
                          "the slowed rank 1% against 91%; balanced ranks differ by ~1.2x)"),
    "memory_growth_bytes_per_s": Threshold(
        1 << 20, "B/s", "hwtop's choice: a process growing 1 MiB/s for the window is named as what grows"),
    # ----- a job's ranks across hosts: hangs (advice/ranks.py) -----
    "rank_hang_wait_share": Threshold(
        0.98, "fraction", "hwtop's choice: a rank held back by a straggler still computes between all-reduces "
                          "(the waiting rank of tests/jobs/ddp_straggler.py: 91% waiting); one that waits 98% of "
                          "its samples or more makes no progress at all: the collective is not completing"),
    "rank_hang_s": Threshold(
        30.0, "s", "hwtop's choice, as ras_hang_s: a collective some ranks launched 30 s before another rank's Flight "
                   "Recorder dump that it never launched, or one a rank launched and had not finished 30 s later, is "
                   "a hang; a step's collectives take milliseconds, ranks are dumped seconds apart (a healthy "
                   "3-rank gloo job's live dumps: 1 s and 54 collectives apart), and NCCL's watchdog waits 10 min"),
    "rank_stale_s": Threshold(
        30.0, "s", "hwtop's choice: the stack sampler reports each rank every 10 s (probes/stack_sampler.py); "
                   "three missed reports while the other ranks' arrive is a rank, or its host, that stopped"),
    # ----- NCCL's own view of a job, from its RAS service (advice/nccl_ranks.py) -----
    "ras_hang_s": Threshold(
        30.0, "s", "NCCL's ras.rst: a one-operation mismatch is normal while a job runs, but counts that do not "
                   "change across subsequent queries mean a stuck communicator; 30 s is three queries at hwtop's "
                   "10 s interval past the first, and RAS's own peer timeouts (ras_internal.h) are 5-20 s"),
    "ras_stopped_s": Threshold(
        60.0, "s", "hwtop's choice: no collective launched by any rank for a minute (a checkpoint, an eval, or "
                   "every rank stuck before one) is said as such; a training step launches many a second"),
    "ras_straggler_min_queries": Threshold(
        6, "queries", "hwtop's choice: fewer answers cannot tell a rank that is routinely late (ras.rst: work "
                      "imbalance) from chance"),
    "ras_straggler_share": Threshold(
        0.6, "fraction", "hwtop's choice: behind in most of the recent queries (more than half, with margin)"),
    "ras_straggler_others_share": Threshold(
        0.2, "fraction", "hwtop's choice: ...while every other rank is behind in at most a fifth of them (one in "
                         "nine, say): in a balanced job the rank caught behind changes from query to query"),
    # ----- the network -----
    "network_saturated_share": Threshold(
        0.8, "fraction", "hwtop's choice: a port moving 80% of its line rate in one direction has no headroom; "
                         "NCCL's all-reduce bus bandwidth tops out near 90% of line rate (nccl-tests' README)"),
    "network_busy_share": Threshold(
        0.25, "fraction", "hwtop's choice: a quarter of the line rate is a job's traffic, not management (SSH, "
                          "metrics, package updates stay far below)"),
    "network_idle_bytes_per_s": Threshold(
        1e6, "B/s", "hwtop's choice: an idle fabric's own traffic (subnet manager, LLDP, ARP) stays in kB/s; a "
                    "port under 1 MB/s carries no job"),
    "collective_wait_fraction": Threshold(
        0.3, "fraction", "hwtop's choice, as data_wait_fraction for input: ranks that wait in collectives 30% of "
                         "the time are bound by communication"),
    "slow_link_share": Threshold(
        0.5, "fraction", "hwtop's choice: an interface under half the speed of the fastest one up is the slow one"),
})  # read-only: a rule's own thresholds stay on the rule


# What a config file may set a threshold to, by its unit: a percentage from 0 to 100, a fraction from 0 to 1, a
# ratio from 1 (reserved over allocated memory is never below 1); any other count, size or rate from 0.
BOUNDS_OF_UNIT: dict[str, tuple[float, float]] = {"%": (0.0, 100.0), "fraction": (0.0, 1.0), "x": (1.0, math.inf)}
ANY_COUNT = (0.0, math.inf)


class Thresholds:
    """A user's overrides over the defaults; `t["name"]` is the value in use. The defaults are TABLE's, and a rule's
    own besides when that rule runs its check (`over`, from Rule.__call__): a panel's judgement on the first frame
    needs no rule imported. Which names an override may have is the config file's schema's to check, against every
    rule's (advice.rules.THRESHOLDS), and the engine's, against its rules'."""

    def __init__(self, overrides: Mapping[str, float] | None = None, hold_s: Mapping[str, float] | None = None,
                 defaults: Mapping[str, Threshold] = TABLE) -> None:
        self.values: dict[str, float] = {name: float(value) for name, value in (overrides or {}).items()}
        self.hold_s = dict(hold_s or {})
        self.defaults = defaults

    def __getitem__(self, name: str) -> float:
        value = self.values.get(name)
        return self.defaults[name].value if value is None else value

    def over(self, own: Mapping[str, Threshold]) -> Thresholds:
        """The same overrides, with a rule's own thresholds' defaults beside these."""
        return Thresholds(self.values, self.hold_s, {**self.defaults, **own})
