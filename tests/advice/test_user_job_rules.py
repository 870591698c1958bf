"""Issue 47's rules against timelines: the loader's fix from the measured supply (no GPU fix without a GPU, no
deeper prefetch for workers that cannot keep up), worker-stuck and loop-stuck (a hang, not a slow loader),
work-in-loop, memory-growing (a steady climb, not a warm-up). Each fires with its numbers and stays silent on
the near miss that tells it apart."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from hwtop.demo.profiles import GIB, MIB
from hwtop.model.job import CgroupMemory, RankStacks, Stillness, WorkerStacks
from tests.advice.test_job_rules import BALANCED, RANK, SINGLE, job, proc, stacks, ticks, worker
from tests.advice_timeline import Timeline, find, ids, plain_gpu, run

WORKER_PID = 4101
READ = "slow_store.py:25 RemoteSamples.fetch"


def worker_stacks(busy: float = 1.0, still: Stillness | None = None, pid: int = WORKER_PID) -> WorkerStacks:
    return WorkerStacks(pid, RANK, 100, 10.0, busy, READ, still)


def still(seconds: float = 13.0, fetching: bool = True, category: str = "workers",
          site: str = "stuck_worker.py:28 Store.read", frame: str | None = None) -> Stillness:
    return Stillness(seconds, 128, frame or site, site, category, fetching)


def waiting(data: float, *worker_list, running: float | None = None, rank_still: Stillness | None = None,
            **fields):
    main = replace(stacks(data=data), main_running=running, still=rank_still)
    return job(proc(cpu=40.0), *worker_list, stacks=(main,), **fields)


def starved_by_one_worker(main_cpu: float, worker_cpu: float):
    """data-starved for a loop with one waiting worker, its step's own work `main_cpu` of the time by schedstat."""
    main = replace(stacks(data=0.75), main_cpu=main_cpu)
    slow = job(proc(cpu=40.0), worker(WORKER_PID, cpu=worker_cpu, switches_per_s=50.0), stacks=(main,),
               worker_stacks=(worker_stacks(),))
    return find(run(ticks(Timeline(cores=2), 8, slow))[-1], "data-starved")


# ----- data-starved: the fix from the measured supply -----

def test_workers_that_wait_on_storage_get_a_number_with_its_arithmetic_and_no_gpu_fix():
    t = Timeline(cores=2)
    slow = waiting(0.75, worker(WORKER_PID, cpu=2.0, switches_per_s=50.0), worker_stacks=(worker_stacks(),))
    finding = find(run(ticks(t, 8, slow))[-1], "data-starved")
    # 1 worker x 1.00 busy / 0.25 of the step its own = 4.0x; fed, the step is taken as 2x faster: 8.0 workers;
    # 8.0 x 1.25 = 10
    assert ("a batch takes a worker 1 x 1.00 / 0.25 = 4.0x the step's own time" in
            next(line for line in finding.evidence if "own time" in line))
    assert finding.fix[0].startswith("DataLoader(num_workers=10) (now 1): a batch takes one worker 4.0x the step's "
                                     "own time, so 4.0 workers keep up with the step as measured; it was measured "
                                     "starved, when a step runs cold: fed, it runs faster (its threads awake, its "
                                     "data in cache), taken as 2x, so 8.0 keep up with it; they wait more than they "
                                     "compute (2% of a core each while making a batch), so more of them cost little "
                                     "CPU; 10 leaves 25% headroom; 10 of them take 0.2 of the 1 core(s)")
    assert not any("pin_memory" in fix or "prefetch" in fix for fix in finding.fix)


def test_the_steps_own_time_is_its_main_threads_cpu_time_where_it_is_read():
    """A CPU rank's schedstat (probes/stack_sampler.py main_cpu) says the step's own work is 3.2% of the time,
    where its 200 samples say 25%: the arithmetic divides by the CPU time, and says so."""
    finding = starved_by_one_worker(0.032, 1.0)
    arithmetic = next(line for line in finding.evidence if "own time" in line)
    assert "is on a CPU 3.2% of the time (the step's own work and each batch's hand-over" in arithmetic
    assert "a batch takes a worker 1 x 1.00 / 0.032 = 31.2x the step's own time" in arithmetic
    # 31.25 x 2 (fed) x 1.25 = 78.1: 79 workers, more than the 64 hwtop names for one rank
    assert finding.fix[0].startswith("DataLoader(num_workers=64) (now 1)"), finding.fix
    assert "; 64, the most hwtop names for one rank (79 with 25% headroom); 64 of them take 0.6 of the 1 core(s) " \
        "it has for loading" in finding.fix[0], finding.fix
    # 62.5 fed: 64 feed it, with less headroom than asked; the fix says no more
    assert not any("not enough" in fix for fix in finding.fix), finding.fix


def test_a_count_bounded_below_the_fed_step_says_how_much_waiting_it_leaves_and_what_else_to_cut():
    """The step's own work 1.6% of the time: 62.5x, 125 workers fed; 64 named (the most for one rank) make its
    batches 1.95x (2.0x) slower than it uses them, so it still waits ~49%: the fix says so and names the read itself."""
    finding = starved_by_one_worker(0.016, 0.5)
    assert finding.fix[0].startswith("DataLoader(num_workers=64) (now 1)"), finding.fix
    assert finding.fix[1] == (
        "64 workers are not enough: they make batches 2.0x slower than the fed step uses them, so it will still wait "
        "for data about 49% of the time. Beyond them, each read must get cheaper: one request for a whole batch's "
        "samples (a Dataset's __getitems__(indices) is handed the batch's indices), a local copy or cache of the "
        "store, larger records per read."), finding.fix


def test_waiting_workers_are_bounded_by_the_cores_they_would_fill():
    """Workers at 2% of a core each for a step they feed 31.25x faster than they make its batches: 79 (fed, with
    headroom) would take 1.6 cores; the count named is the most that fit the 1 core it has for loading, 50."""
    finding = starved_by_one_worker(0.032, 2.0)
    assert finding.fix[0].startswith("DataLoader(num_workers=50) (now 1)"), finding.fix
    assert "; 50, the most such workers the 1 core(s) it has for loading can run, at 2.0% of a core each;" in \
        finding.fix[0]


def test_receiving_batches_already_made_is_not_waiting_for_data():
    """A fed loop of many workers whose main thread spends 45% of its samples in the DataLoader, 27 of them
    receiving batches its workers had ready (tests/jobs/slow_store.py with 62 workers on 2 cores: 16% of 238
    samples in the hand-over, 11% waiting): it waits 18%, under the limit; one that waits 40% is starved, and the
    hand-over is said apart."""
    t = Timeline(cores=2)
    fed = waiting(0.45, worker(WORKER_PID, cpu=1.0, switches_per_s=50.0), worker_stacks=(worker_stacks(0.6),))
    fed = replace(fed, stacks=(replace(fed.stacks[0], handover=0.27),))
    assert "data-starved" not in ids(run(ticks(t, 8, fed))[-1])
    starved = replace(fed, stacks=(replace(fed.stacks[0], handover=0.05),))
    finding = find(run(ticks(Timeline(cores=2), 8, starved))[-1], "data-starved")
    assert finding.evidence[0].startswith("pid 4100: main thread waiting for data in 40% of 200 stack samples")
    assert finding.evidence[0].endswith("; receiving batches already made in 5% more, not counted")


def test_cpu_bound_workers_on_too_few_cores_are_told_the_cores_are_the_limit():
    t = Timeline(cores=2)
    pegged = waiting(0.75, worker(WORKER_PID, cpu=99.0), worker_stacks=(worker_stacks(),))
    finding = find(run(ticks(t, 8, pegged))[-1], "data-starved")
    # the step uses 0.4 of a core over the 25% it runs: 1.6 cores; with the worker's 1.0, no core is left
    assert finding.fix[0].startswith("The cores are the limit: making batches as fast as the step uses them takes "
                                     "4.0 cores, and no core is free for it: the job's step uses 1.6 of the 2 it may "
                                     "use while it runs, so a worker would take its core from the step (no faster). "
                                     "Make each sample cheaper (about 4.0x, for its 1 worker(s) to keep up)")
    assert len(finding.fix) == 1 or "num_workers" not in finding.fix[1]
    assert not any("prefetch" in fix or "num_workers=5" in fix for fix in finding.fix)


def test_workers_that_keep_up_get_no_number_but_the_hand_over_and_a_gpu_job_pin_memory():
    t = Timeline(cores=8)
    uneven = waiting(0.35, worker(WORKER_PID, cpu=30.0), worker(4102, cpu=30.0),
                     worker_stacks=(worker_stacks(0.4), worker_stacks(0.4, pid=4102)), usable=8)
    gpu = (plain_gpu(0, 30.0, pids=(RANK,)),)
    finding = find(run(ticks(t, 8, uneven, gpus=gpu))[-1], "data-starved")
    # 2 workers x 0.40 busy / 0.65 = 1.2 workers' worth of work: the 2 there keep up
    assert "its 2 worker(s) keep up: 1.2 would" in finding.evidence
    assert finding.fix[0].startswith("The workers keep up, so more of them would not help")
    assert "prefetch_factor" in finding.fix[0] and not any("num_workers=" in fix for fix in finding.fix)
    assert any(fix.startswith("pin_memory=True") for fix in finding.fix)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_demo_and_an_attached_job_reach_their_fix_through_the_same_arithmetic(monkeypatch):
    """The starved story's telemetry (1 worker, 256 x 6 ms a batch, a 0.29 s step) through gpu-starved, and an
    attached job whose samples say the same (wait 81%, its worker always busy) through data-starved: one function
    (supply.supply_lines) writes both fixes, each from the Supply its rule measured."""
    from hwtop.advice import supply
    from hwtop.advice.rules import loader, pipeline
    from tests.advice_timeline import play_story

    assert pipeline.supply_lines is supply.supply_lines and loader.supply_lines is supply.supply_lines
    calls: list[tuple[str, supply.Supply, list[str]]] = []

    def spy(measured: supply.Supply, t):
        evidence, fixes = supply.supply_lines(measured, t)
        calls.append((measured.arithmetic, measured, fixes))
        return evidence, fixes

    monkeypatch.setattr(pipeline, "supply_lines", spy)
    monkeypatch.setattr(loader, "supply_lines", spy)
    story = next(f for frame in play_story("starved", 30.0) for f in frame.findings if f.id == "gpu-starved")
    assert story.fix[0].startswith("DataLoader(num_workers=7) (now 1): a batch takes one worker 5.3x")
    t = Timeline(cores=256)
    attached = waiting(0.81, worker(WORKER_PID, cpu=100.0), worker_stacks=(worker_stacks(),), usable=32)
    finding = find(run(ticks(t, 8, attached))[-1], "data-starved")
    assert finding.fix[0].startswith("DataLoader(num_workers=7) (now 1): a batch takes one worker 5.3x")
    telemetry = [fixes for text, _, fixes in calls if text.startswith("a batch takes one worker 256 samples")]
    samples = [fixes for text, _, fixes in calls if text.startswith("the main thread waits for data 81%")]
    assert telemetry and story.fix[0] == telemetry[-1][0]  # the story's fix: what the function wrote
    assert samples and finding.fix[0] == samples[-1][0]  # the attached job's: the same function's


# ----- worker-stuck -----

STUCK = waiting(1.0, worker(WORKER_PID, cpu=0.0, switches_per_s=0.0), worker(4102, cpu=0.5),
                worker_stacks=(worker_stacks(still=still()), worker_stacks(0.0, pid=4102)))


def test_a_stuck_worker_is_a_hang_with_its_pid_line_and_time_and_no_prefetch():
    t = Timeline(cores=2)
    found = run(ticks(t, 2, STUCK))[-1]
    finding = find(found, "worker-stuck")
    assert finding.severity == "critical" and finding.pids == (WORKER_PID, RANK)
    assert finding.evidence[0].startswith("DataLoader worker pid 4101 has not moved for 13 s: all 128 stack samples "
                                          "at stuck_worker.py:28 Store.read, using 0.0% of a core, never woken")
    assert "its other worker(s): pid 4102 making batches in 0% of its samples" in finding.evidence
    assert "blocked at stuck_worker.py:28 Store.read" in finding.fix[0] and "d on it in the job view" in finding.fix[0]
    assert "timeout=60" in finding.fix[1]
    assert "data-starved" not in ids(found)  # more workers or a deeper prefetch would not help a hang


def test_a_worker_woken_for_each_slow_read_is_slow_not_stuck():
    t = Timeline(cores=2)
    slow = replace(STUCK, processes=(STUCK.processes[0], replace(STUCK.processes[1], switches_per_s=50.0),
                                     STUCK.processes[2]))
    found = run(ticks(t, 8, slow))[-1]
    assert "worker-stuck" not in ids(found) and "data-starved" in ids(found)


def test_a_worker_still_for_less_than_the_limit_or_idle_between_batches_is_not_stuck():
    t = Timeline(cores=2)
    brief = replace(STUCK, worker_stacks=(worker_stacks(still=still(seconds=6.0)),))
    idle = replace(STUCK, worker_stacks=(worker_stacks(0.0, still=still(fetching=False)),))
    assert "worker-stuck" not in ids(run(ticks(t, 3, brief))[-1])
    assert "worker-stuck" not in ids(run(ticks(Timeline(cores=2), 3, idle))[-1])


# ----- loop-stuck -----

def test_a_main_thread_stuck_in_its_own_code_is_named_with_its_line():
    t = Timeline(cores=2)
    blocked = still(15.0, fetching=False, category="other", site="stuck_main.py:61 main",
                    frame="threading.py:327 Condition.wait")
    stuck = job(proc(cpu=0.2), worker(WORKER_PID, cpu=0.0),
                stacks=(replace(stacks(data=0.0), fractions=(("other", 0.9), ("compute", 0.1)), main_running=0.09,
                                still=blocked),))
    finding = find(run(ticks(t, 2, stuck))[-1], "loop-stuck")
    assert finding.evidence[0].startswith("pid 4100's main thread has not moved for 15 s: all 128 stack samples at "
                                          "stuck_main.py:61 main (innermost frame threading.py:327 Condition.wait)")
    assert finding.severity == "critical" and "timeout" in finding.fix[1]


def test_a_main_thread_that_spins_on_one_line_or_waits_for_data_is_not_loop_stuck():
    t = Timeline(cores=2)
    spinning = job(proc(cpu=100.0), stacks=(replace(stacks(), main_running=1.0,
                                                    still=still(fetching=False, category="other")),))
    in_loader = job(proc(cpu=0.0), stacks=(replace(stacks(data=1.0), main_running=0.0,
                                                   still=still(fetching=False, category="data")),))
    assert "loop-stuck" not in ids(run(ticks(t, 3, spinning))[-1])
    assert "loop-stuck" not in ids(run(ticks(Timeline(cores=2), 3, in_loader))[-1])


# ----- work-in-loop -----

def busy_loop(other: float, running: float) -> RankStacks:
    return replace(stacks(), fractions=(("other", other), ("compute", 1.0 - other)), main_running=running,
                   sites=(("other", "tokenize_in_loop.py:31 tokenize"),), data_loader="single-process")


def test_python_work_in_the_loop_is_named_with_its_line_and_share():
    t = Timeline(cores=2)
    tokenizing = job(proc(cpu=100.0), stacks=(busy_loop(0.66, 0.97),))
    finding = find(run(ticks(t, 7, tokenizing))[-1], "work-in-loop")
    assert finding.evidence[0] == ("pid 4100's main thread runs the job's own Python outside the model, the optimizer "
                                   "and the DataLoader in 66% of 200 stack samples (limit 50%), mostly at "
                                   "tokenize_in_loop.py:31 tokenize")
    assert finding.fix[0].startswith("Move the work at tokenize_in_loop.py:31 tokenize into the Dataset's __getitem__")
    assert "DataLoader(num_workers=1)" in finding.fix[0]


def test_a_loop_mostly_in_the_model_or_asleep_in_its_own_code_is_not_work_in_loop():
    t = Timeline(cores=2)
    assert "work-in-loop" not in ids(run(ticks(t, 8, job(proc(), stacks=(busy_loop(0.3, 0.97),))))[-1])
    asleep = job(proc(cpu=3.0), stacks=(busy_loop(0.9, 0.05),))
    assert "work-in-loop" not in ids(run(ticks(Timeline(cores=2), 8, asleep))[-1])
    # a 20 ms sleep each step: 52% of samples in its own code, but on a CPU 60% of the time with 48% computing
    sleeping = job(proc(cpu=60.0), stacks=(busy_loop(0.52, 0.6),))
    assert "work-in-loop" not in ids(run(ticks(Timeline(cores=2), 8, sleeping))[-1])
    importing = job(proc(cpu=99.0), stacks=(busy_loop(1.0, 0.99),))  # `import torch` at start-up: no loop yet
    assert "work-in-loop" not in ids(run(ticks(Timeline(cores=2), 8, importing))[-1])


def test_a_loop_whose_step_is_a_few_percent_is_found_when_a_window_holds_none_of_it():
    """tokenize_in_loop.py computes in ~3% of its samples: some windows hold no compute sample at all. What it did
    since it was first sampled says it is in its loop; a start-up that never computed stays quiet."""
    t = Timeline(cores=2)
    window_without_step = replace(busy_loop(1.0, 0.99), phase_seconds=(("other", 19.4), ("compute", 0.6)))
    finding = find(run(ticks(t, 7, job(proc(cpu=100.0), stacks=(window_without_step,))))[-1], "work-in-loop")
    assert "in 100% of 200 stack samples" in finding.evidence[0]
    never_trained = replace(busy_loop(1.0, 0.99), phase_seconds=(("other", 20.0),))
    assert "work-in-loop" not in ids(run(ticks(Timeline(cores=2), 8, job(proc(cpu=99.0),
                                                                            stacks=(never_trained,))))[-1])


# ----- memory-growing -----

def grown(seconds: int, per_s: float, level_after: int | None = None, **fields):
    out = []
    for second in range(seconds):
        size = 2 * GIB + per_s * (min(second, level_after) if level_after is not None else second)
        out.append(replace(BALANCED, pss_bytes=int(size), **fields))
    return out


def test_a_steady_climb_is_named_with_its_rate_and_when_the_box_runs_out():
    t = Timeline(cores=2)
    found = run([t.tick(job=j) for j in grown(20, 150 * MIB)])[-1]
    finding = find(found, "memory-growing")
    assert finding.evidence[0].startswith("the job's memory (PSS of its 2 process(es)) grew from 2.0 GiB to 4.8 GiB in "
                                          "19 s: 150.0 MiB/s, steadily")
    # the fake box has 200 GiB available: 200 GiB / 150 MiB/s = 23 min
    assert finding.evidence[1] == "at that rate the box's 200.0 GiB available (of 256.0 GiB) run out in 23 min"
    assert finding.fix[0].startswith("Tensors kept across steps")


def test_a_cgroup_limit_runs_out_first():
    t = Timeline(cores=2)
    group = CgroupMemory("/job", 3 * GIB, 4 * GIB)
    finding = find(run([t.tick(job=j) for j in grown(20, 20 * MIB, cgroup_memory=group)])[-1], "memory-growing")
    assert finding.evidence[1] == "at that rate its cgroup's 4.0 GiB limit (3.0 GiB used) run out in 51 s"


def test_growth_that_levels_off_or_is_small_stays_quiet():
    t = Timeline(cores=2)
    assert "memory-growing" not in ids(run([t.tick(job=j) for j in grown(30, 40 * MIB, level_after=12)])[-1])
    t = Timeline(cores=2)
    assert "memory-growing" not in ids(run([t.tick(job=j) for j in grown(30, 2 * MIB)])[-1])  # 60 MiB in all


# ----- what limits the loader (issue 54): waiting samples, computing samples on busy cores, a Python loop -----

def main_loading(data: float, running: float, python: float | None = None, cpu: float = 100.0,
                 demand: float | None = None):
    """num_workers=0: the main thread loads its own batches `data` of the time, on a CPU or queued `running`."""
    main = replace(stacks(data=data, loader="single-process"), main_running=running, data_python=python,
                   sites=(("data", "train.py:40 Clips.emphasised"),))
    return job(proc(cpu=cpu, cpu_demand=demand), stacks=(main,))


def test_a_main_thread_that_sleeps_on_its_reads_gets_a_count_from_rate_and_wait_however_few_the_cores():
    """The DDP rank of issue 54 whose reads were 0.2 ms slower: it loads 40% of the time, and is on a CPU 66% of
    it, the step's 60% all but 6 points: its loading uses 15% of a core. Measured: one worker, nothing; eight, 2x."""
    finding = find(run(ticks(Timeline(cores=2), 8, main_loading(0.4, 0.66, cpu=70.0)))[-1], "data-starved")
    assert "so its loading 15% of the time it loads" in next(line for line in finding.evidence if "num_workers=0" in
                                                              line and "own time" in line)
    assert finding.fix[0].startswith("DataLoader(num_workers="), finding.fix
    assert "they wait more than they compute (15% of a core each while making a batch)" in finding.fix[0]
    assert not any(fix.startswith("The cores are the limit") for fix in finding.fix)


def test_a_python_loop_on_busy_cores_is_told_to_vectorise_and_never_given_a_worker_that_takes_the_steps_core():
    """The step's own threads use both cores while it runs (2 wanted over its 60%): no core for a worker."""
    busy = main_loading(0.4, 1.0, python=0.95, cpu=160.0, demand=1.6)
    finding = find(run(ticks(Timeline(cores=2), 8, busy, cores=80.0))[-1], "data-starved")
    assert finding.fix[0].startswith("The cores are the limit"), finding.fix
    assert "a worker would take its core from the step (no faster)" in finding.fix[0]
    assert ("the samples spend 95% of their time in the job's own Python lines at train.py:40 Clips.emphasised: "
            "vectorise that transform") in finding.fix[0]
    assert not any("num_workers=" in fix for fix in finding.fix), finding.fix


def test_others_on_the_jobs_cores_are_counted_and_said():
    """Issue 55: "uses 1.0 of the 2 cores it may use: 1.0 idle" beside "cores now: 0 100%, 1 100%"."""
    shared = replace(SINGLE, usable_cores=2, cpu_percent=100.0)
    assert "single-core-loading" not in ids(run(ticks(Timeline(cores=2), 7, shared, cores=100.0))[-1])
    finding = find(run(ticks(Timeline(cores=2), 8, shared, cores=100.0))[-1], "data-starved")
    line = next(line for line in finding.evidence if line.startswith("the job uses "))
    assert line.startswith("the job uses 1.0 of the 2 cores it may use") and "other programs 1.0 of them: 0.0 free" \
        in line
    assert finding.fix[0].startswith("The cores are the limit") and "the box's other programs 1.0" in finding.fix[0]
    assert finding.fix[1].startswith("A DataLoader worker more would share a core with the box's other programs")
