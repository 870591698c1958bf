"""The job probe on a /proc tree written by the test: the launcher known by its module, ranks by their
environment, a named rank standing for its job, ended workers counted and gone from the table, births per
parent, CPU of a worker born between ticks, PSS summed, a rank's exit code, threads' scheduling, dataset disks
seen through a short-lived worker, pressure and cgroups parsed."""

from __future__ import annotations

import pytest

from hwtop.model.job import CgroupMemory, JobSnapshot
from hwtop.probes.cgroup import cgroups_of, cpu_quota_cores, memory_of, parse_cgroup_file
from hwtop.probes.job import JobError, JobProbe
from hwtop.probes.psi import PressureProbe, parse_pressure
from tests.fakeproc import FakeProc, Proc, Thread

PY = "/usr/bin/python3"
LAUNCHER = (PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def torchrun_job(proc: FakeProc) -> None:
    proc.add(Proc(500, 1, "python3", LAUNCHER))
    for rank, pid in ((0, 510), (1, 511)):
        env = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "OMP_NUM_THREADS": "1"}
        proc.add(Proc(pid, 500, "python3", (PY, "-u", "train.py"), env=env))
    proc.add(Proc(520, 510, "python3", (PY, "-c", "from multiprocessing.resource_tracker import main;main(5)"),
                  env={"RANK": "0"}))


def tick(proc: FakeProc, probe: JobProbe, clock: Clock, seconds: float = 1.0) -> JobSnapshot:
    proc.uptime += seconds
    clock.now += seconds
    proc.write()
    return probe.read(now=clock.now)


def test_launcher_by_module_ranks_by_environment_and_a_rank_stands_for_its_job(tmp_path):
    proc = FakeProc(tmp_path)
    torchrun_job(proc)
    proc.add(Proc(530, 510, "pt_data_worker", (PY, "-u", "train.py"), env={"RANK": "0"}))
    proc.write()
    clock = Clock()
    probe = JobProbe(roots=(511,), root=str(tmp_path), clock=clock)
    probe.check()
    assert probe.roots == (500,) and "started by python -m torch.distributed.run (pid 500)" in (probe.note or "")
    job = tick(proc, probe, clock)
    roles = {p.pid: (p.role, p.rank, p.depth) for p in job.processes}
    assert roles == {500: ("launcher", None, 0), 510: ("rank 0", 0, 1), 511: ("rank 1", 1, 1),
                     520: ("helper", None, 2), 530: ("DataLoader worker", None, 2)}
    assert {p.pid: p.omp_num_threads for p in job.processes if p.rank is not None} == {510: "1", 511: "1"}


def test_a_python_script_mentioning_torchrun_is_not_a_launcher(tmp_path):
    proc = FakeProc(tmp_path)
    proc.add(Proc(600, 1, "python3", (PY, "train.py", "--note", "torchrun")))
    proc.add(Proc(601, 600, "python3", (PY, "train.py", "--note", "torchrun")))
    proc.write()
    probe = JobProbe(roots=(600,), root=str(tmp_path), clock=Clock())
    assert {p.role for p in probe.read().processes} == {"process"}


def test_workers_that_end_leave_the_table_and_are_counted_with_births_per_parent(tmp_path):
    proc = FakeProc(tmp_path)
    torchrun_job(proc)
    clock = Clock()
    probe = JobProbe(roots=(500,), root=str(tmp_path), clock=clock)
    tick(proc, probe, clock)
    pid = 700
    tables = []
    for _epoch in range(5):  # each epoch: two workers of rank 0 start and, a tick later, end
        for _ in range(2):
            proc.add(Proc(pid, 510, "pt_data_worker", (PY, "-u", "train.py"), start=int(proc.uptime * 100) + 50,
                          ticks=40))
            pid += 1
        job = tick(proc, probe, clock)
        born = [p for p in job.processes if p.role == "DataLoader worker"]
        assert len(born) == 2 and all(p.cpu_percent is not None for p in born)  # first seen: CPU over its life
        for p in born:
            proc.remove(p.pid)
        tables.append(len(tick(proc, probe, clock).processes))
    assert tables == [4] * 5  # launcher, two ranks, the helper: the ten ended workers are not rows
    assert job.pids_seen == 14
    assert (job.workers_started_last_minute, job.workers_exited_last_minute) == (10, 8)
    births = {b.parent: b for b in job.worker_births}
    assert set(births) == {510} and births[510].born == 10 and births[510].peak_alive == 2


def test_pss_sums_the_live_processes_and_a_rank_keeps_its_exit_code(tmp_path):
    proc = FakeProc(tmp_path)
    torchrun_job(proc)
    proc.procs[510].pss_kb = 100_000
    proc.procs[511].pss_kb = None  # not readable: its RSS stands in
    clock = Clock()
    probe = JobProbe(roots=(500,), root=str(tmp_path), clock=clock)
    job = tick(proc, probe, clock)
    assert job.pss_bytes == (50_000 + 100_000 + 50_000) * 1024 + 25600 * 4096
    proc.procs[511].state, proc.procs[511].exit_status = "Z", 3 << 8
    tick(proc, probe, clock)
    proc.remove(511)
    job = tick(proc, probe, clock)
    rank1 = next(p for p in job.processes if p.pid == 511)
    assert not rank1.alive and rank1.exit_code == 3


def test_threads_scheduling_hot_thread_and_dataset_disks_of_a_worker(tmp_path):
    proc = FakeProc(tmp_path)
    proc.add(Proc(800, 1, "python3", (PY, "train.py"), threads=[Thread(800, "python3"), Thread(801, "omp")]))
    data = tmp_path / "sample.bin"
    data.write_bytes(b"x")
    clock = Clock()
    probe = JobProbe(roots=(800,), root=str(tmp_path), clock=clock)
    tick(proc, probe, clock)
    main, omp = proc.procs[800].threads
    main.state, main.run_ns, main.wait_ns, main.slices = "R", 900_000_000, 100_000_000, 50
    omp.state, omp.run_ns, omp.wait_ns, omp.slices = "R", 300_000_000, 200_000_000, 150
    proc.add(Proc(810, 800, "pt_data_worker", (PY, "train.py"), fds=(str(data),), state="D",
                  threads=[Thread(810, "pt_data_worker", state="D")]))
    job = tick(proc, probe, clock)
    main_row = next(p for p in job.processes if p.pid == 800)
    assert main_row.runnable_threads == 2 and main_row.cpu_demand == pytest.approx(1.5)
    assert main_row.run_wait_share == pytest.approx(0.2) and main_row.switches_per_s == pytest.approx(200.0)
    assert main_row.hot_thread_percent == pytest.approx(100.0) and main_row.hot_thread_name == "python3"
    worker = next(p for p in job.processes if p.pid == 810)
    assert worker.blocked_threads == 1 and worker.dataset_devices
    proc.remove(810)
    job = tick(proc, probe, clock)
    assert job.dataset_devices == worker.dataset_devices  # remembered after the worker ended


def test_bad_targets_are_refused_with_one_line(tmp_path):
    proc = FakeProc(tmp_path)
    proc.add(Proc(900, 1, "sleep", ("/bin/sleep", "60")))
    proc.write()
    with pytest.raises(JobError, match=r"pid 900 \(sleep\) is not a Python process"):
        JobProbe(roots=(900,), root=str(tmp_path)).check(strict=True)
    with pytest.raises(JobError, match="no process with pid 901"):
        JobProbe(roots=(901,), root=str(tmp_path)).check(strict=True)
    with pytest.raises(JobError, match="hwtop itself or one of its parents"):
        JobProbe(roots=(900,), root=str(tmp_path), exclude=frozenset({900})).check()
    with pytest.raises(JobError, match="no process matches --job"):
        JobProbe(pattern="nothing-like-this", root=str(tmp_path)).check()
    assert JobProbe(pattern="900", root=str(tmp_path)).roots == (900,)  # --job NAME_OR_PID: a number is a pid


def test_no_permission_is_refused_in_strict_mode(tmp_path, monkeypatch):
    import hwtop.probes.job.focus as job_module

    proc = FakeProc(tmp_path)
    proc.add(Proc(950, 1, "python3", (PY, "train.py")))
    proc.write()
    real = job_module.read_bytes

    def forbidden(path: str, limit: int | None = None) -> bytes:
        if path.endswith("/io"):
            raise PermissionError(13, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(job_module, "read_bytes", forbidden)
    with pytest.raises(JobError, match="no permission to inspect pid 950"):
        JobProbe(roots=(950,), root=str(tmp_path)).check(strict=True)


def test_pressure_from_totals_and_cgroup_files(tmp_path):
    assert parse_pressure("some avg10=1.00 avg60=0 avg300=0 total=5000\nfull avg10=0 avg60=0 avg300=0 total=7\n") \
        == {"some": 5000, "full": 7}
    pressure = tmp_path / "proc" / "pressure"
    pressure.mkdir(parents=True)
    clock = Clock()
    probe = PressureProbe(str(tmp_path), clock)
    for name in ("cpu", "io", "memory"):
        (pressure / name).write_text("some avg10=0 avg60=0 avg300=0 total=1000000\n"
                                     "full avg10=0 avg60=0 avg300=0 total=0\n")
    first = probe.read(None)
    assert first is not None and first.cpu_some is None  # a rate needs two reads
    (pressure / "memory").write_text("some avg10=0 avg60=0 avg300=0 total=1250000\nfull avg10=0 avg60=0 avg300=0 "
                                     "total=50000\n")
    clock.now += 1.0
    second = probe.read(None)
    assert second is not None and second.source == "system"
    assert second.memory_some == pytest.approx(25.0) and second.memory_full == pytest.approx(5.0)
    assert second.cpu_some == 0.0
    assert parse_cgroup_file("12:memory:/slurm/job_7\n0::/slurm/job_7\n") == {"memory": "/slurm/job_7",
                                                                             "": "/slurm/job_7"}


def groups_of_pid_42(tmp_path, cgroup_file: str):
    """The cgroups of pid 42 under the fake root tmp_path, whose /proc/42/cgroup reads `cgroup_file`."""
    proc_dir = tmp_path / "proc/42"
    proc_dir.mkdir(parents=True)
    (proc_dir / "cgroup").write_text(cgroup_file)
    return cgroups_of(42, str(tmp_path))


def test_cgroup_v1_memory_reads_the_hierarchical_limit_and_oom_kills(tmp_path):
    group = tmp_path / "sys/fs/cgroup/memory/slurm/job_7"
    group.mkdir(parents=True)
    (group / "memory.usage_in_bytes").write_text(f"{3 << 30}\n")
    (group / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # no limit of its own
    (group / "memory.stat").write_text(f"cache 0\nrss {3 << 30}\nhierarchical_memory_limit {4 << 30}\n")
    (group / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")  # as Linux 6 writes it
    groups = groups_of_pid_42(tmp_path, "4:memory:/slurm/job_7\n0::/\n")
    assert groups is not None and groups.memory_v1 == str(group)
    memory = memory_of(groups, str(tmp_path))
    assert memory == CgroupMemory("/sys/fs/cgroup/memory/slurm/job_7", 3 << 30, 4 << 30, oom_kills=1)
    (group / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\n")  # before Linux 4.13
    assert memory_of(groups, str(tmp_path)).oom_kills is None


def test_cgroup_v2_limit_is_the_tightest_ancestor_and_quota_counts_cores(tmp_path):
    base = tmp_path / "sys/fs/cgroup"
    group = base / "slurm/job_7"
    group.mkdir(parents=True)
    (base / "cgroup.controllers").write_text("cpu memory io\n")
    (base / "slurm/memory.max").write_text(f"{8 << 30}\n")
    (group / "memory.max").write_text("max\n")
    (group / "memory.current").write_text(f"{6 << 30}\n")
    # memory.events as Documentation/admin-guide/cgroup-v2.rst lays it out
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n")
    (group / "cpu.max").write_text("400000 100000\n")
    (group / "cpu.pressure").write_text("some avg10=0 avg60=0 avg300=0 total=0\n")
    groups = groups_of_pid_42(tmp_path, "0::/slurm/job_7\n")
    assert groups is not None and groups.unified == str(group)
    memory = memory_of(groups, str(tmp_path))
    assert memory is not None and (memory.used_bytes, memory.limit_bytes) == (6 << 30, 8 << 30)
    assert memory.oom_kills == 2
    assert cpu_quota_cores(groups) == 4.0
    assert PressureProbe(str(tmp_path)).read(groups.unified).source == "cgroup /sys/fs/cgroup/slurm/job_7"
