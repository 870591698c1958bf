"""The job probe's snapshots, tick by tick, over scripted /proc trees, against what it answered when recorded: a
torchrun job whose workers churn, whose ranks end (a zombie's exit code, a gone row, the workload's exit code) and
whose stacks are sampled; a `--job` pattern that picks up a second job at its rescan and finds a launcher by its
children; a Slurm job; a plain script whose worker opens a dataset. Any change to what the probe reports shows here
as a difference; a change meant to alter it is recorded again with
`python -m tests.probes.test_job_recorded --record` (a tmp directory of its own) and reviewed in the diff.

The page size and clock tick are fixed (figures read them from the machine), and the dataset files' disk is
"unknown" (the fake root has no block devices), so the record is the same on every Linux box."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

from hwtop.model.job import JobSnapshot, RankStacks, WorkerStacks
from hwtop.model.snapshot import GpuProcess, GpuSnapshot
from hwtop.model.workload import RankState, WorkloadState
from hwtop.probes.job import JobProbe
from tests.fakeproc import FakeProc, Proc, Thread
from tests.manual_clock import ManualClock

RECORD = Path(__file__).parent.parent / "fixtures" / "job-probe" / "snapshots.jsonl"
PY = "/usr/bin/python3"
LAUNCHER = (PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py")
WALL = 1_700_000_000.0


class ScriptedStacks:
    """A stack source whose answers follow the ranks it was asked for; what it was asked is part of the record."""

    def __init__(self) -> None:
        self.asked: list[object] = []

    def want(self, targets: dict[int, int | None], on_gpu: frozenset[int] = frozenset(),
             workers: dict[int, int | None] | None = None) -> None:
        self.asked.append([sorted(targets.items()), sorted(on_gpu), sorted((workers or {}).items())])
        self._targets = dict(targets)

    def results(self) -> tuple[tuple[RankStacks, ...], str | None]:
        out = tuple(RankStacks(pid, rank, 10 * len(self.asked), 3.0, (("collective", 0.6), ("compute", 0.4)),
                               phase_seconds=(("compute", 1.5 * len(self.asked)),), busy_site="train.py:9 step",
                               updated_at=WALL + len(self.asked))
                    for pid, rank in sorted(self._targets.items()))
        return out, "py-spy is slow here" if len(self.asked) % 3 == 0 else None

    def worker_results(self) -> tuple[WorkerStacks, ...]:
        return (WorkerStacks(1, None, len(self.asked), 2.0, 0.5),)

    def finish(self) -> None:
        self.asked.append("finish")

    def close(self) -> None:
        self.asked.append("close")


class Scene:
    """One /proc tree and one probe over it, moved a second a tick; each tick's snapshot kept as JSON."""

    def __init__(self, root: Path, make: Callable[[str, ManualClock], JobProbe]) -> None:
        self.proc = FakeProc(root)
        self.clock = ManualClock(100.0)
        self.root = root
        self.make = make
        self.snapshots: list[object] = []
        self.pswpin = 0

    def start(self) -> JobProbe:
        self.proc.write()
        self.probe = self.make(str(self.root), self.clock)
        return self.probe

    def tick(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             before_read: Callable[[], None] | None = None) -> JobSnapshot:
        self.proc.uptime += 1.0
        self.clock.now += 1.0
        self.proc.pswpin += 7
        self.proc.write()
        if before_read is not None:
            before_read()
        job = self.probe.read(gpus, workload, now=WALL + self.clock.now)
        self.snapshots.append(json.loads(msgspec.json.encode(job)))
        return job


def gpu(index: int, *pids: int) -> GpuSnapshot:
    return GpuSnapshot(index, "fake", None, None,
                       processes=tuple(GpuProcess(pid, "compute", (index + 1) << 30) for pid in pids))


def write_cgroup(root: Path, pressure_total: int) -> None:
    group = root / "sys/fs/cgroup/job"
    group.mkdir(parents=True, exist_ok=True)
    (root / "sys/fs/cgroup/cgroup.controllers").write_text("cpu memory io\n")
    (group / "cpu.max").write_text("300000 100000\n")
    (group / "memory.max").write_text(f"{8 << 30}\n")
    (group / "memory.current").write_text(f"{(3 << 30) + pressure_total}\n")
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")
    for name in ("cpu", "io", "memory"):
        (group / f"{name}.pressure").write_text(f"some avg10=0 avg60=0 avg300=0 total={pressure_total}\n"
                                                f"full avg10=0 avg60=0 avg300=0 total={pressure_total // 3}\n")


def torchrun(root: Path) -> dict[str, object]:
    """torchrun, two ranks on two GPUs, a helper and a rank's Python child; DataLoader workers born and ending;
    rank 1 a zombie with exit status 3, then gone; the launcher ends with the workload's exit code."""
    stacks = ScriptedStacks()
    scene = Scene(root, lambda where, clock: JobProbe(roots=(511,), root=where, clock=clock, stacks=stacks,
                                                      host="node-a", exclude=frozenset()))
    proc, cgroup = scene.proc, "0::/job\n"
    proc.add(Proc(500, 1, "python3", LAUNCHER, cgroup=cgroup))
    for rank, pid in ((0, 510), (1, 511)):
        env = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
               "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_IB_DISABLE": "1",
               "NCCL_SOCKET_IFNAME": "eth0"}
        proc.add(Proc(pid, 500, "python3", (PY, "-u", "train.py"), env=env, cgroup=cgroup, affinity="0-7",
                      threads=[Thread(pid, "python3"), Thread(pid + 1000, "pt_autograd_0")]))
    proc.add(Proc(520, 510, "python3", (PY, "-c", "from multiprocessing.resource_tracker import main;main(5)"),
                  env={"RANK": "0"}, cgroup=cgroup))
    proc.add(Proc(530, 511, "python3", (PY, "-c", "compile"), env={"RANK": "1"}, cgroup=cgroup))
    data = root / "shard-0.bin"
    data.write_bytes(b"x")
    write_cgroup(root, 0)
    scene.start().check()
    checked = {"roots": list(scene.probe.roots), "note": scene.probe.note, "label": scene.probe.label}
    gpus = (gpu(0, 510), gpu(1, 511, 530))
    workload = WorkloadState("ddp", "running", None, (RankState(0, 510, 5, 0.1, 80.0, 0.1, 1.0, "bf16", None, 8,
                                                                None),), None, pids=(500,))
    pid = 700
    for epoch in range(4):
        for rank_pid in (510, 511):
            proc.add(Proc(pid, rank_pid, "pt_data_worker", (PY, "-u", "train.py"), start=int(proc.uptime * 100) + 50,
                          ticks=40, fds=(str(data),), cgroup=cgroup, state="D" if epoch % 2 else "S"))
            pid += 1
        for p in (proc.procs[510], proc.procs[511]):
            p.ticks += 90 + 10 * epoch
            p.read_bytes += 1 << 20
            p.major_faults += epoch
            p.pss_kb = None if epoch == 3 and p.pid == 511 else 60_000 + 1000 * epoch
            main = p.threads[0]
            main.state, main.run_ns, main.wait_ns, main.slices = "R", main.run_ns + 800_000_000, \
                main.wait_ns + 50_000_000 * epoch, main.slices + 40
        write_cgroup(root, 100_000 * (epoch + 1))
        scene.tick(gpus, workload)
        for worker in [p for p in proc.procs.values() if p.name == "pt_data_worker" and epoch % 2 == 0]:
            proc.remove(worker.pid)
        scene.tick(gpus, workload)
    proc.procs[511].state, proc.procs[511].exit_status = "Z", 3 << 8
    scene.tick(gpus, workload)
    proc.remove(511)
    proc.procs[530].ppid = 1  # its rank ended: re-parented to init, still the job's
    scene.tick(gpus, workload)
    for done in (510, 520, 530, *[p for p in proc.procs if p >= 700]):
        proc.remove(done)
    scene.tick((gpu(0),), workload)
    ended = msgspec.structs.replace(workload, status="crashed", exit_code=1)
    proc.remove(500)
    scene.tick((), ended)
    scene.tick((), ended)
    finished = scene.probe.finish_stacks()
    scene.probe.close()
    return {"checked": checked, "ticks": scene.snapshots, "asked": stacks.asked,
            "finished": json.loads(msgspec.json.encode(finished))}


def pattern(root: Path) -> dict[str, object]:
    """`--job 'train\\.py'`: the topmost match, a second job at the next rescan, a launcher known only by its
    children's ranks, a process with no children file (the /proc scan), a zombie that never had a command line."""
    scene = Scene(root, lambda where, clock: JobProbe(pattern=r"train\.py", root=where, clock=clock, host="node-b",
                                                      exclude=frozenset()))
    proc = scene.proc
    proc.add(Proc(300, 1, "bash", ("/bin/bash", "run.sh", "train.py")))
    proc.add(Proc(310, 300, "python3", (PY, "train.py"), env={"RANK": "0", "LOCAL_RANK": "0"}))
    proc.add(Proc(311, 300, "python3", (PY, "train.py"), env={"RANK": "1", "LOCAL_RANK": "1"}))
    proc.add(Proc(320, 310, "python3", (PY, "train.py"), env={"RANK": "0"}))
    proc.add(Proc(400, 1, "python3", (PY, "eval.py")))
    scene.start().check()

    def no_children_file() -> None:
        proc.unlink(root / "proc/310/task/310/children")

    for second in range(12):
        if second == 3:
            proc.add(Proc(600, 1, "python3", (PY, "train.py", "--other"), start=int(proc.uptime * 100)))
            proc.add(Proc(601, 600, "sh", (), state="Z", exit_status=9))
        if second == 8:
            proc.remove(601)
            proc.procs[311].state = "Z"
        proc.procs[310].ticks += 50
        scene.tick(before_read=no_children_file if second % 2 else None)
    return {"ticks": scene.snapshots}


def slurm(root: Path) -> dict[str, object]:
    """`--job slurm:4242`: every process of the job, beside another job and a stranger with the same command."""
    alice = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "llama", "SLURM_JOB_USER": "alice"}

    def step(job: int, name: str) -> str:
        return f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/{name}\n"

    scene = Scene(root, lambda where, clock: JobProbe(pattern="slurm:4242", root=where, clock=clock, host="node-c",
                                                      exclude=frozenset()))
    proc = scene.proc
    proc.add(Proc(300, 1, "slurmstepd", ("slurmstepd: [4242.0]",), cgroup=step(4242, "slurm")))
    proc.add(Proc(310, 300, "python3", (PY, "train.py"), env=alice, cgroup=step(4242, "user/task_0")))
    proc.add(Proc(400, 1, "slurmstepd", ("slurmstepd: [5151.0]",), cgroup=step(5151, "slurm")))
    proc.add(Proc(410, 400, "python3", (PY, "pretrain.py"), env={"SLURM_JOB_ID": "5151"},
                  cgroup=step(5151, "user/task_0")))
    proc.add(Proc(600, 1, "python3", (PY, "train.py")))
    scene.start().check()
    for second in range(7):
        if second == 2:
            proc.add(Proc(320, 310, "pt_data_worker", (PY, "train.py"), env=alice, cgroup=step(4242, "user/task_0"),
                          start=int(proc.uptime * 100)))
        if second == 5:
            proc.remove(320)
        scene.tick()
    return {"ticks": scene.snapshots}


def plain_script(root: Path) -> dict[str, object]:
    """`python train.py` with sampling asked (no py-spy source given: a scripted one stands in), threads queued
    for a CPU, a worker in D state reading a dataset file, the same pid started anew."""
    stacks = ScriptedStacks()
    scene = Scene(root, lambda where, clock: JobProbe(roots=(800,), root=where, clock=clock, stacks=stacks,
                                                      sample_stacks=True, host="node-d", exclude=frozenset()))
    proc = scene.proc
    proc.add(Proc(800, 1, "python3", (PY, "train.py"), threads=[Thread(800, "python3"), Thread(801, "omp")]))
    data = root / "sample.bin"
    data.write_bytes(b"x")
    scene.start()
    scene.tick()
    main, omp = proc.procs[800].threads
    main.state, main.run_ns, main.wait_ns, main.slices = "R", 900_000_000, 100_000_000, 50
    omp.state, omp.run_ns, omp.wait_ns, omp.slices = "R", 300_000_000, 200_000_000, 150
    proc.add(Proc(810, 800, "pt_data_worker", (PY, "train.py"), fds=(str(data),), state="D",
                  threads=[Thread(810, "pt_data_worker", state="D")]))
    scene.tick()
    proc.remove(810)
    scene.tick()
    proc.add(Proc(810, 800, "pt_data_worker", (PY, "train.py"), start=5000))  # the pid, reused
    scene.tick()
    scene.tick()
    return {"ticks": scene.snapshots, "asked": stacks.asked}


SCENES: dict[str, Callable[[Path], dict[str, object]]] = {
    "torchrun": torchrun, "pattern": pattern, "slurm": slurm, "plain-script": plain_script}


@contextmanager
def fixed_machine() -> Iterator[None]:
    """A 4 KiB page and 100 ticks a second wherever the record is checked (the figures read both from the box)."""
    with pytest.MonkeyPatch.context() as patch:
        import hwtop.probes.job.figures as figures
        import hwtop.probes.threads as threads

        patch.setattr(figures, "PAGE_SIZE", 4096)
        patch.setattr(figures, "CLOCK_TICKS", 100)
        patch.setattr(threads, "CLOCK_TICKS", 100)
        yield


def play(name: str, root: Path) -> dict[str, object]:
    """The scene's parts as JSON reads them back (lists, not tuples)."""
    with fixed_machine():
        return json.loads(json.dumps(SCENES[name](root)))


def recorded() -> dict[str, dict[str, Any]]:  # JSON's values
    """The record: JSON lines of [scene, part, value], a tick's snapshot a line, so a new record reads as a diff."""
    out: dict[str, dict[str, Any]] = {}
    ticks: dict[str, list[Any]] = {}
    for line in RECORD.read_text().splitlines():
        scene, part, value = json.loads(line)
        if part == "tick":
            ticks.setdefault(scene, []).append(value)
        else:
            out.setdefault(scene, {})[part] = value
    for scene, values in ticks.items():
        out.setdefault(scene, {})["ticks"] = values
    return out


@pytest.mark.parametrize("name", sorted(SCENES))
def test_the_job_probe_reports_what_it_reported_when_recorded(name: str, tmp_path: Path) -> None:
    then = recorded()[name]
    played = play(name, tmp_path)
    assert set(played) == set(then)
    for part in played:
        if part != "ticks":
            assert played[part] == then[part], part
    ticks, ticks_then = played["ticks"], then["ticks"]
    assert isinstance(ticks, list) and isinstance(ticks_then, list) and len(ticks) == len(ticks_then)
    for index, (now, before) in enumerate(zip(ticks, ticks_then, strict=True)):
        assert now == before, f"{name}: tick {index + 1} differs"


def test_the_record_exercises_what_it_stands_for() -> None:
    """The scenes reach the probe's paths: a worker born between ticks, a zombie's exit code, a gone rank, the
    workload's exit code, ranks with stacks, the rescan, a launcher by children, a dataset disk, a quota."""
    record = recorded()
    torchrun_ticks = record["torchrun"]["ticks"]
    last_live = torchrun_ticks[-4]
    assert any(p["role"] == "DataLoader worker" and p["cpu_percent"] for t in torchrun_ticks for p in t["processes"])
    assert any(p["pid"] == 511 and p.get("exit_code") == 3 and p["state"] == "gone" for p in last_live["processes"])
    assert torchrun_ticks[-1]["status"] == "ended" and "pid 500: 1" in torchrun_ticks[-1]["message"]
    assert last_live["ranks"] and any(r.get("samples") for r in last_live["ranks"])
    assert any(t.get("usable_cores") == 3 for t in torchrun_ticks)
    assert any(t.get("workers_exited_last_minute") for t in torchrun_ticks)
    assert any(t.get("dataset_devices") for t in torchrun_ticks)
    roles = {p["role"] for t in record["pattern"]["ticks"] for p in t["processes"]}
    assert {"launcher", "rank 0", "rank 1", "worker of a rank"} <= roles
    assert any(p["pid"] == 600 for p in record["pattern"]["ticks"][-1]["processes"])
    assert record["slurm"]["ticks"][0]["label"] == "Slurm job 4242 (llama, alice)"


def record() -> None:
    lines = []
    for name in sorted(SCENES):
        with tempfile.TemporaryDirectory() as where:
            for part, value in play(name, Path(where)).items():
                values = value if part == "ticks" and isinstance(value, list) else [value]
                lines += [json.dumps([name, "tick" if part == "ticks" else part, v], sort_keys=True,
                                     separators=(",", ":")) for v in values]
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text("\n".join(lines) + "\n")
    print(f"recorded {len(lines)} lines of {', '.join(sorted(SCENES))} in {RECORD}")


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    record()
