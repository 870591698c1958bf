"""The focused-job rules against timelines: each fires after its hold with its numbers in the evidence, stays
silent on a near miss, clears after its clear time; a balanced job raises nothing; with a GPU, a starved GPU
names a churning loader as its cause."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from hwtop.demo.profiles import GIB, MIB
from hwtop.model.job import CgroupMemory, JobProcess, JobSnapshot, Pressure, RankStacks, WorkerBirths
from tests.advice_timeline import Timeline, find, ids, plain_gpu, process, run

RANK = 4100


def proc(pid: int = RANK, role: str = "process", ppid: int = 1, cpu: float | None = 95.0, **fields) -> JobProcess:
    rank = int(role.split()[1]) if role.startswith("rank ") else None
    return JobProcess(pid, ppid, "python3", "python train.py", role, rank, 0 if ppid == 1 else 1, "R", cpu, GIB, 4,
                      (0, 1), **fields)


def worker(pid: int, parent: int = RANK, cpu: float = 30.0, **fields) -> JobProcess:
    return replace(proc(pid, "DataLoader worker", parent, cpu, **fields), name="pt_data_worker")


def stacks(pid: int = RANK, data: float = 0.1, samples: int = 200, loader: str | None = "multi-process",
           rank: int | None = None, workers: float = 0.0) -> RankStacks:
    compute = max(0.0, 1.0 - data - workers)
    return RankStacks(pid, rank, samples, 30.0, (("data", data), ("compute", compute), ("workers", workers)),
                      (("data", "train.py:57 <module>"),), loader)


def job(*processes: JobProcess, usable: int = 2, **fields) -> JobSnapshot:
    alive = [p for p in processes if p.alive]
    return JobSnapshot("pid 4100", (processes[0].pid,), "running", processes,
                       sum(p.cpu_percent or 0 for p in alive), sum(p.rss_bytes or 0 for p in alive),
                       usable_cores=usable, **fields)


def ticks(timeline: Timeline, count: int, snapshot: JobSnapshot, **kwargs):
    return [timeline.tick(job=snapshot, **kwargs) for _ in range(count)]


def pressure(cpu: float = 0.0, io: float = 0.0, memory: float = 0.0) -> Pressure:
    return Pressure("system", cpu, io, 0.0, memory, 0.0)


BALANCED = job(proc(cpu=150.0, cpu_demand=2.1, run_wait_share=0.1, hot_thread_percent=80.0),
               worker(4101, cpu=20.0, cpu_demand=0.2, run_wait_share=0.05),
               stacks=(stacks(),), pressure=pressure(cpu=5.0), pss_bytes=2 * GIB)


def test_a_balanced_job_raises_nothing():
    t = Timeline(cores=2)
    assert run(ticks(t, 40, BALANCED))[-1] == ()


# ----- data-starved -----

def test_data_starved_fires_after_its_hold_with_the_fraction_and_site():
    t = Timeline(cores=2)
    starved = replace(BALANCED, stacks=(stacks(data=0.72),))
    history = run(ticks(t, 8, starved))
    assert "data-starved" not in ids(history[4])
    finding = find(history[6], "data-starved")
    assert finding.evidence[0] == ("pid 4100: main thread waiting for data in 72% of 200 stack samples over 30 s "
                                   "(limit 30%), at train.py:57 <module>")
    assert finding.title == "pid 4100 waits for data" and finding.pids == (RANK,)


@pytest.mark.parametrize(("data", "samples"), [(0.25, 200), (0.9, 10)])
def test_data_starved_needs_the_fraction_and_enough_samples(data, samples):
    t = Timeline(cores=2)
    near = replace(BALANCED, stacks=(stacks(data=data, samples=samples),))
    assert "data-starved" not in ids(run(ticks(t, 10, near))[-1])


def test_data_starved_clears_after_its_clear_time():
    t = Timeline(cores=2)
    frames = ticks(t, 8, replace(BALANCED, stacks=(stacks(data=0.8),))) + ticks(t, 12, BALANCED)
    shown = ["data-starved" in ids(f) for f in run(frames)]
    assert shown[7] and shown[16] and not shown[18]  # false from tick 8, clear 10 s


def test_a_starved_gpu_says_its_loader_re_creates_workers():
    """With a GPU: the GPU waits, the rank waits for data, the loader re-forks its workers every epoch."""
    t = Timeline(cores=2)
    churning = replace(BALANCED, stacks=(stacks(data=0.6, workers=0.2),),
                                   worker_births=(WorkerBirths(RANK, 30, 40.0, 2),), workers_exited_last_minute=28)
    gpu = (plain_gpu(0, 12.0, pids=(RANK,)),)
    finding = find(run(ticks(t, 8, churning, gpus=gpu))[-1], "data-starved")
    assert finding.title == "GPU0 starved: pid 4100 waits for data" and finding.gpus == (0,)
    assert any("GPU0 util 12%" in line for line in finding.evidence)
    assert any("started 30 DataLoader workers in the last 40 s (45/min, at most 2 at once)" in line
               for line in finding.evidence)
    assert finding.fix[0].startswith("persistent_workers=True")


def test_gpu_starved_without_telemetry_names_the_churn_and_its_fix():
    t = Timeline(cores=2)
    churning = replace(BALANCED, worker_births=(WorkerBirths(RANK, 30, 40.0, 2),))
    gpu = (plain_gpu(0, 12.0, pids=(RANK,)),)
    processes = (process(RANK, cpu=40.0),)
    finding = find(run(ticks(t, 8, churning, gpus=gpu, processes=processes))[-1], "gpu-starved")
    assert any("re-creates them every epoch" in line for line in finding.evidence)
    assert finding.fix[0].startswith("persistent_workers=True")


# ----- worker-churn -----

def test_worker_churn_fires_on_repeated_generations_and_clears_slowly():
    t = Timeline(cores=2)
    churning = replace(BALANCED, worker_births=(WorkerBirths(RANK, 24, 30.0, 2),),
                                   workers_exited_last_minute=22, stacks=(stacks(workers=0.12, data=0.2),))
    history = run(ticks(t, 8, churning) + ticks(t, 35, BALANCED))
    finding = find(history[7], "worker-churn")
    assert finding.evidence[0] == ("pid 4100 started 24 DataLoader workers in the last 30 s: 48 a minute (limit 10), "
                                   "at most 2 running at once")
    assert "starting or joining workers in 12%" in finding.evidence[2]
    assert finding.fix[0].startswith("DataLoader(..., num_workers=N, persistent_workers=True)")
    assert "worker-churn" in ids(history[30]) and "worker-churn" not in ids(history[-1])  # clear 30 s


@pytest.mark.parametrize("births", [WorkerBirths(RANK, 3, 60.0, 2),  # 3 a minute
                                    WorkerBirths(RANK, 4, 10.0, 4)])  # one set of four, started once
def test_a_loader_started_once_is_not_churn(births):
    t = Timeline(cores=2)
    assert "worker-churn" not in ids(run(ticks(t, 10, replace(BALANCED, worker_births=(births,))))[-1])


# ----- single-core-loading -----

SINGLE = job(proc(cpu=102.0, hot_thread_percent=99.0, hot_thread_name="python3"),
             stacks=(stacks(data=0.85, loader="single-process"),), usable=4)


def test_one_core_loading_with_num_workers_0_names_the_workers_to_start():
    t = Timeline(cores=4)
    finding = find(run(ticks(t, 7, SINGLE))[-1], "single-core-loading")
    assert finding.evidence[0] == ("pid 4100: its thread python3 wants a whole core (running or queued 99% of the "
                                   "time) and it has no DataLoader workers (num_workers=0)")
    assert finding.evidence[1] == ("the job uses 1.0 of the 4 cores it may use and the box's other programs 0.0 of "
                                   "them: 3.0 free now, 3.0 once the step is fed")
    assert "(_SingleProcessDataLoaderIter), at train.py:57 <module>" in finding.evidence[2]
    # loading 85% and the rest of the step 15%: a batch takes 5.7x the step's own time, at a whole core; its step
    # uses the 1.0 core less its loading over the 15% it runs: 1.1 cores; 2.9 are free beside it, 3 workers' worth
    assert "keeping up takes 5.7 workers x 1.00 of a core each = 5.7 cores for loading" in finding.evidence
    assert finding.evidence[-1] == ("the job uses 1.0 of the 4 cores it may use (its step 1.1 while it runs, its "
                                    "workers 0.0) and the box's other programs 0.0 of them: 3.0 free now, 2.9 once "
                                    "the step is fed")
    # 5.7 cores to keep up, 4 in all: the step is never fed, so it runs 3.3/5.7 of the time at most, with 1.1
    # cores; the loading can have 3.3 (3.3 + 1.1 x 3.3 / 5.7 = 4), which four workers time-share (three would
    # leave 0.3 idle): (5.7 + 1) / (5.7 / 3.3) = 3.9x
    assert finding.fix[0].startswith("DataLoader(num_workers=4) (now 0): a batch takes one worker 5.7x the step's "
                                     "own time, each using 1.00 of a core; no count the cores hold can feed the "
                                     "step, so it runs only as often as batches arrive and its loading can have 3.3 "
                                     "of the 4.0 core(s) the box's other programs leave; 4 use 3.3 of them: about "
                                     "3.9x as fast as now.")
    # the workers first: they gain more than samples 2x cheaper (1.7x), which come next
    assert finding.fix[1].startswith("The cores are the limit: making batches as fast as the step uses them takes "
                                     "5.7 cores, and the job has 4.0 beside the box's other programs. Make each "
                                     "sample cheaper (the step waits 85% of its time for them: samples 2x cheaper "
                                     "make it 1.7x faster")


def test_one_core_loading_with_cores_to_spare_names_the_workers_that_keep_up():
    t = Timeline(cores=8)
    lighter = replace(SINGLE, stacks=(stacks(data=0.6, loader="single-process"),), usable_cores=8)
    finding = find(run(ticks(t, 7, lighter))[-1], "single-core-loading")
    # 0.6 / 0.4 = 1.5 workers keep up, 2 with 25% headroom; 1.5 cores of the 7 it has for loading
    assert finding.fix[0].startswith("DataLoader(num_workers=2) (now 0): a batch takes one worker 1.5x the step's "
                                     "own time, so 1.5 workers keep up, each using 1.00 of a core; 2 leaves 25% "
                                     "headroom")
    assert len([f for f in finding.fix if f.startswith("persistent_workers=True")]) == 1


@pytest.mark.parametrize("change", [
    {"processes": (SINGLE.processes[0], worker(4101))},  # it has a worker
    {"cpu_percent": 380.0},  # the other cores are busy with the job
    {"stacks": (stacks(data=0.1, loader="single-process"),)},  # the hot thread is computing, not loading
    {"usable_cores": 1},  # one core: nowhere to put workers
])
def test_single_core_near_misses(change):
    t = Timeline(cores=4)
    assert "single-core-loading" not in ids(run(ticks(t, 8, replace(SINGLE, **change)))[-1])


# ----- cpu-oversubscribed -----

def ranks(demand: float, wait: float, omp: str | None = None) -> JobSnapshot:
    launcher = proc(4000, "launcher", cpu=1.0, cpu_demand=0.01, run_wait_share=0.0)
    return job(launcher, *(proc(4100 + r, f"rank {r}", 4000, cpu_demand=demand, run_wait_share=wait,
                                omp_num_threads=omp, runnable_threads=2, switches_per_s=900.0) for r in range(2)),
               pressure=pressure(cpu=70.0))


def test_oversubscription_from_the_job_s_own_demand():
    t = Timeline(cores=2)
    finding = find(run(ticks(t, 7, ranks(2.0, 0.5)))[-1], "cpu-oversubscribed")
    assert finding.evidence[0] == ("the job's threads want 4.0 CPUs (running or queued, mean over 10 s) and may use 2 "
                                   "(limit 1.5x)")
    assert finding.evidence[1] == "they wait in the run queue 50% of that time (limit 25%); 1800 context switches/s"
    assert "OMP_NUM_THREADS=unset" in finding.evidence[2]
    assert finding.fix[0].startswith("OMP_NUM_THREADS=1 for each rank (2 usable cores / 2 rank(s)), or "
                                     "torch.set_num_threads(1)")


@pytest.mark.parametrize(("demand", "wait"), [(1.2, 0.4), (2.0, 0.1)])
def test_a_busy_box_is_not_the_job_s_oversubscription(demand, wait):
    """Someone else's load makes the job wait, but it wants no more than its cores: silent."""
    t = Timeline(cores=2)
    assert "cpu-oversubscribed" not in ids(run(ticks(t, 10, ranks(demand, wait)))[-1])


def test_oversubscription_counts_the_dataloader_workers_too():
    t = Timeline(cores=2)
    base = ranks(2.0, 0.5)
    workers = (worker(4110, parent=4100, cpu_demand=0.7), worker(4111, parent=4101, cpu_demand=0.6))
    finding = find(run(ticks(t, 7, replace(base, processes=base.processes + workers)))[-1], "cpu-oversubscribed")
    assert finding.title == "More runnable threads than cores (5.3 for 2)"
    assert finding.evidence == (
        "the job's threads want 5.3 CPUs (running or queued, mean over 10 s) and may use 2 (limit 1.5x)",
        "they wait in the run queue 38% of that time (limit 25%); 1800 context switches/s",
        "rank 0 (pid 4100): 4 threads, 2 runnable now, wants 2.0 CPUs, OMP_NUM_THREADS=unset",
        "rank 1 (pid 4101): 4 threads, 2 runnable now, wants 2.0 CPUs, OMP_NUM_THREADS=unset",
        "2 DataLoader workers want 1.3 CPUs more",
        "CPU pressure (system): some task waited for a CPU 70% of the time")
    assert finding.fix == (
        "OMP_NUM_THREADS=1 for each rank (2 usable cores / 2 rank(s)), or torch.set_num_threads(1) at the top of the "
        "script; do not set it to os.cpu_count() per rank.",
        "torchrun sets OMP_NUM_THREADS=1 when it is unset: a torch.set_num_threads() call in the script overrides "
        "that.",
        "Count the DataLoader workers too: ranks x threads + workers should stay near the usable cores; fewer "
        "workers if they are CPU-bound.")
    assert (finding.scope, finding.pids) == ("job", (4100, 4101))


# ----- loader-io-bound -----

def io_job(worker_cpu: float = 20.0, io: float = 40.0, blocked: int = 1, memory: float = 0.0,
           faults: float = 0.0) -> JobSnapshot:
    return job(proc(cpu=30.0, read_bytes_per_s=0.0, major_faults_per_s=faults),
               worker(4101, cpu=worker_cpu, blocked_threads=blocked, read_bytes_per_s=4e6),
               worker(4102, cpu=worker_cpu, blocked_threads=blocked, read_bytes_per_s=4e6),
               stacks=(stacks(data=0.7),), pressure=pressure(io=io, memory=memory), dataset_devices=(("sda", 2),))


def test_loader_io_bound_with_blocked_workers_and_io_pressure():
    t = Timeline(cores=2)
    finding = find(run(ticks(t, 7, io_job()))[-1], "loader-io-bound")
    assert "I/O pressure (system): some task stalled on storage 40% of the last 10 s (limit 10%)" in finding.evidence
    assert any(line.startswith("DataLoader workers in D state (waiting on storage) in 100%") for line in
               finding.evidence)
    assert any(line.startswith("dataset disk sda (hdd, 2 file(s) seen open)") for line in finding.evidence)
    assert finding.fix[0].startswith("Pack many small files")


@pytest.mark.parametrize("change", [{"worker_cpu": 99.0}, {"io": 2.0, "blocked": 0}])
def test_cpu_bound_workers_or_no_io_wait_are_not_io_bound(change):
    t = Timeline(cores=2)
    assert "loader-io-bound" not in ids(run(ticks(t, 10, io_job(**change)))[-1])


def test_reads_that_are_refaults_point_at_memory_first():
    t = Timeline(cores=2)
    finding = find(run(ticks(t, 7, io_job(memory=30.0, faults=80.0)))[-1], "loader-io-bound")
    assert finding.fix[0].startswith("Relieve the memory pressure first")


# ----- job-memory-pressure -----

def growing_job(t: Timeline, seconds: int, limit: int | None = 1200 * MIB, memory: float = 30.0,
                faults: float = 60.0) -> list:
    frames = []
    for second in range(seconds):
        size = (200 + 15 * second) * MIB
        snapshot = job(proc(cpu=50.0, pss_bytes=300 * MIB, major_faults_per_s=faults / 3),
                       worker(4101, pss_bytes=size, major_faults_per_s=faults / 3),
                       worker(4102, pss_bytes=size, major_faults_per_s=faults / 3),
                       pressure=pressure(memory=memory), cgroup_memory=CgroupMemory("/job", 1190 * MIB, limit),
                       pss_bytes=300 * MIB + 2 * size)
        frames.append(t.tick(job=snapshot))
    return frames


def test_memory_pressure_names_the_cgroup_limit_and_what_grows():
    t = Timeline(cores=2)
    finding = find(run(growing_job(t, 20))[-1], "job-memory-pressure")
    assert finding.evidence[0] == ("memory pressure (system): some task stalled on memory 30% of the last 10 s (limit "
                                   "10%)")
    assert "its memory cgroup /job uses 1.2 GiB of its 1.2 GiB limit (99%)" in finding.evidence
    growing = [line for line in finding.evidence if line.startswith("growing:")]
    assert growing == ["growing: DataLoader worker pid 4101 +285 MiB in 19 s (15.0 MiB/s)",
                       "growing: DataLoader worker pid 4102 +285 MiB in 19 s (15.0 MiB/s)"]
    assert finding.fix[0].startswith("2 DataLoader worker(s) grow each on its own") and \
        "Drop the per-worker cache" in finding.fix[0]


def test_memory_pressure_with_the_box_reading_back_from_swap_says_all_it_measured():
    t = Timeline(cores=2)
    frames = [replace(s, job=replace(s.job, swap_in_pages_per_s=350.0)) for s in growing_job(t, 20)]
    finding = find(run(frames)[-1], "job-memory-pressure")
    assert finding.title == "The job is short of memory"
    assert finding.evidence == (
        "memory pressure (system): some task stalled on memory 30% of the last 10 s (limit 10%)",
        "the job's processes fault 60 pages/s back in from disk or swap (limit 20)",
        "the box reads 350 pages/s back from swap",
        "its memory cgroup /job uses 1.2 GiB of its 1.2 GiB limit (99%)",
        "the box has 200.0 GiB of 256.0 GiB available (78%)",
        "the job's memory (PSS) 1.2 GiB",
        "growing: DataLoader worker pid 4101 +285 MiB in 19 s (15.0 MiB/s)",
        "growing: DataLoader worker pid 4102 +285 MiB in 19 s (15.0 MiB/s)")
    assert finding.fix == (
        "2 DataLoader worker(s) grow each on its own: a cache or list filled in Dataset.__getitem__ is copied per "
        "worker. Drop the per-worker cache, or build it once before the DataLoader starts and share it "
        "(numpy.memmap, torch tensors in shared memory).",
        "Fewer DataLoader workers and a smaller prefetch_factor: each worker holds its own Dataset copy and "
        "prefetch_factor x batch samples.",
        "A larger memory limit for the job (its cgroup allows 1.2 GiB), or a smaller batch.")
    assert (finding.scope, finding.pids) == ("job", (4101, 4102))


def test_a_worker_that_grew_and_was_killed_is_still_named_with_the_kill():
    """The OOM killer ends the worker that grew, and the job shuts its other worker down: the last ticks before
    the job ends still say who grew (CI saw the finding's last evidence lose both workers), and that it was killed."""
    t = Timeline(cores=2)
    frames = []
    for second in range(20):
        size = (200 + 15 * second) * MIB
        workers = [worker(4101, pss_bytes=size, major_faults_per_s=20.0)] if second < 16 else []
        if second < 18:
            workers.append(worker(4102, pss_bytes=size, major_faults_per_s=20.0))
        frames.append(t.tick(job=job(proc(cpu=50.0, pss_bytes=300 * MIB, major_faults_per_s=20.0), *workers,
                                     pressure=pressure(memory=30.0),
                                     cgroup_memory=CgroupMemory("/job", 1190 * MIB, 1200 * MIB,
                                                                oom_kills=3 if second < 16 else 4))))
    finding = find(run(frames)[-1], "job-memory-pressure")
    assert [line for line in finding.evidence if line.startswith("growing:")] == [
        "growing: DataLoader worker pid 4101 +225 MiB in 15 s (15.0 MiB/s), then it ended",
        "growing: DataLoader worker pid 4102 +255 MiB in 17 s (15.0 MiB/s), then it ended"]
    assert "Drop the per-worker cache" in finding.fix[0]
    killed = find(run(frames)[-1], "job-oom-killed")  # the kill itself is its own finding
    assert killed.severity == "critical"
    assert killed.evidence[0] == ("the kernel's OOM killer ended 1 process(es) in the job's memory cgroup /job 3 s "
                                  "ago (its oom_kill count went 3 → 4)")
    assert "gone since: DataLoader worker pid 4101 (RSS 1024 MiB a moment before)" in killed.evidence


def caching_job(t: Timeline, kill_at: int, seconds: int, kills_before: int = 0, exiting_s: int = 0) -> list:
    """Two workers filling a cache at 100 MiB/s each under a 1 GiB limit, killed at `kill_at` s (still seen alive
    for `exiting_s` more), before any pressure has held: the job then ends."""
    frames = []
    for second in range(seconds):
        size = (100 + 100 * min(second, kill_at - 1)) * MIB
        workers = [replace(worker(pid, pss_bytes=size), rss_bytes=size + 50 * MIB) for pid in (4101, 4102)
                   ] if second < kill_at + exiting_s else []
        status = "running" if second <= kill_at else "ended"
        snapshot = replace(job(proc(cpu=50.0, pss_bytes=300 * MIB), *workers,
                               cgroup_memory=CgroupMemory("/job", min(300 * MIB + 2 * size, GIB) if workers else 0, GIB,
                                                          oom_kills=kills_before + (2 if second >= kill_at else 0))),
                           status=status)
        frames.append(t.tick(job=snapshot))
    return frames


def test_a_job_the_oom_killer_ended_before_any_pressure_held_is_named_with_what_it_killed():
    """As a cached-augmentation script under a 1 GiB limit did: its two workers were killed 1.6 s into training, and
    doctor said "No problems seen"."""
    t = Timeline(cores=2)
    findings = run(caching_job(t, kill_at=4, seconds=8))
    assert "job-memory-pressure" not in ids(findings[3])  # nothing had held before the kill
    finding = find(findings[-1], "job-oom-killed")
    assert finding.severity == "critical" and finding.scope == "job"
    assert finding.evidence[:4] == (
        "the kernel's OOM killer ended 2 process(es) in the job's memory cgroup /job 3 s ago (its oom_kill count "
        "went 0 → 2)",
        "just before, the cgroup used 1.0 GiB of its 1.0 GiB limit",
        "gone since: DataLoader worker pid 4101 (RSS 450 MiB a moment before)",
        "gone since: DataLoader worker pid 4102 (RSS 450 MiB a moment before)")
    assert "growing: DataLoader worker pid 4101 +300 MiB in 3 s (100.0 MiB/s), then it ended" in finding.evidence
    assert finding.evidence[-1] == "the job has ended"
    assert "Drop the per-worker cache" in finding.fix[0] and set(finding.pids) == {4101, 4102}


def test_a_killed_worker_still_exiting_when_the_count_rises_is_named_once_it_is_gone():
    """Under load the count rose a tick before the killed worker left the process table (CI-like box)."""
    t = Timeline(cores=2)
    finding = find(run(caching_job(t, kill_at=4, seconds=8, exiting_s=1))[-1], "job-oom-killed")
    assert [line for line in finding.evidence if line.startswith("gone since:")] == [
        "gone since: DataLoader worker pid 4101 (RSS 450 MiB a moment before)",
        "gone since: DataLoader worker pid 4102 (RSS 450 MiB a moment before)"]


def test_oom_kills_counted_before_the_watch_began_are_not_this_job():
    t = Timeline(cores=2)
    findings = run(caching_job(t, kill_at=100, seconds=8, kills_before=5))  # a count of 5 that never moves
    assert not any("job-oom-killed" in ids(f) for f in findings)


def test_a_growth_is_measured_on_pss_once_read_never_from_rss_to_pss():
    """Until its smaps_rollup is read a process shows RSS, which counts each shared library whole: a worker
    sharing 900 MiB of torch with its parent went from RSS 1.1 GiB to PSS 0.3 GiB, and read as shrinking."""
    t = Timeline(cores=2)
    frames = []
    for second in range(20):
        size = (200 + 15 * second) * MIB
        read = second >= 4
        frames.append(t.tick(job=job(
            proc(cpu=50.0, pss_bytes=300 * MIB, major_faults_per_s=20.0),
            replace(worker(4101, pss_bytes=size if read else None, major_faults_per_s=20.0),
                    rss_bytes=size + 900 * MIB),
            pressure=pressure(memory=30.0), cgroup_memory=CgroupMemory("/job", 1190 * MIB, 1200 * MIB))))
    finding = find(run(frames)[-1], "job-memory-pressure")
    assert [line for line in finding.evidence if line.startswith("growing:")] == [
        "growing: DataLoader worker pid 4101 +225 MiB in 15 s (15.0 MiB/s)"]


def test_memory_stalls_with_nothing_of_the_job_behind_them_stay_silent():
    """Another cgroup's reclaim shows in the system's PSI; this job has room and no faults."""
    t = Timeline(cores=2)
    assert "job-memory-pressure" not in ids(run(growing_job(t, 15, limit=None, faults=0.0))[-1])


def test_a_job_with_its_stacks_and_pressure_survives_a_recording():
    import json

    from hwtop.model.serial import snapshot_from_dict

    snapshot = Timeline(cores=2).tick(job=replace(
        BALANCED, cgroup_memory=CgroupMemory("/job", 5 * GIB, None), worker_births=(WorkerBirths(RANK, 6, 30.0, 2),)))
    assert snapshot_from_dict(json.loads(snapshot.to_json())) == snapshot
