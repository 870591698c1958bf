"""`--job slurm:ID` and `--job pod:NAME`: the job is every process of that owner on this host (a /proc tree in
Slurm's cgroup v2 layout, beside another user's job and a pod), and the job view's title names the Slurm job or pod
whichever way the job was named."""

from __future__ import annotations

import pytest

from hwtop.probes.job import JobError, JobProbe
from tests.fakeproc import FakeProc, Proc

PY = "/usr/bin/python3"
UID = "6b0a2f4e-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
CID = "3f1c0d5e9a7b" + "0123456789abcdef" * 3 + "0a1b"


def step(job: int, name: str) -> str:
    return f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/{name}\n"


def shared_box(tmp_path) -> FakeProc:  # noqa: ANN001
    proc = FakeProc(tmp_path)
    alice = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "llama", "SLURM_JOB_USER": "alice"}
    proc.add(Proc(300, 1, "slurmstepd", ("slurmstepd: [4242.0]",), cgroup=step(4242, "slurm")))
    proc.add(Proc(310, 300, "python3", (PY, "train.py"), env=alice, cgroup=step(4242, "user/task_0")))
    proc.add(Proc(311, 300, "python3", (PY, "train.py"), env=alice, cgroup=step(4242, "user/task_1")))
    proc.add(Proc(320, 310, "pt_data_worker", (PY, "train.py"), env=alice, cgroup=step(4242, "user/task_0")))
    proc.add(Proc(400, 1, "slurmstepd", ("slurmstepd: [5151.0]",), cgroup=step(5151, "slurm")))
    proc.add(Proc(410, 400, "python3", (PY, "pretrain.py"), env={"SLURM_JOB_ID": "5151"},
                  cgroup=step(5151, "user/task_0")))
    proc.add(Proc(500, 1, "python3", (PY, "serve.py"), env={"POD_NAME": "bert-7f9", "POD_NAMESPACE": "research"},
                  cgroup=f"0::/kubepods/burstable/pod{UID}/{CID}\n"))
    proc.add(Proc(600, 1, "python3", (PY, "train.py")))  # the same command line, nobody's job
    proc.write()
    return proc


def test_slurm_job_is_every_process_of_the_job(tmp_path) -> None:  # noqa: ANN001
    shared_box(tmp_path)
    probe = JobProbe(pattern="slurm:4242", root=str(tmp_path), exclude=frozenset())
    probe.check()
    job = probe.read()
    assert {p.pid for p in job.processes} == {300, 310, 311, 320}
    assert job.label == "Slurm job 4242 (llama, alice)"  # the title, from the job's environment


def test_pod_by_name_and_by_namespace(tmp_path) -> None:  # noqa: ANN001
    shared_box(tmp_path)
    for name in ("bert-7f9", "research/bert-7f9", UID):
        probe = JobProbe(pattern=f"pod:{name}", root=str(tmp_path), exclude=frozenset())
        probe.check()
        job = probe.read()
        assert {p.pid for p in job.processes} == {500} and job.label == "pod research/bert-7f9"


def test_a_pid_focus_names_its_slurm_job_in_the_title(tmp_path) -> None:  # noqa: ANN001
    shared_box(tmp_path)
    job = JobProbe(roots=(410,), root=str(tmp_path), exclude=frozenset()).read()
    assert job.label == "pid 410 · Slurm job 5151"
    assert JobProbe(roots=(600,), root=str(tmp_path), exclude=frozenset()).read().label == "pid 600"


def test_no_such_owner_is_one_clear_line(tmp_path) -> None:  # noqa: ANN001
    shared_box(tmp_path)
    with pytest.raises(JobError, match="no process of Slurm job 9999 on this host"):
        JobProbe(pattern="slurm:9999", root=str(tmp_path), exclude=frozenset()).check()
    with pytest.raises(JobError, match="no process of pod nobody on this host"):
        JobProbe(pattern="pod:nobody", root=str(tmp_path), exclude=frozenset()).check()
    # a pattern that only looks like a prefix stays a pattern: `train.py` matches pids 310, 311 and 600's lines
    assert JobProbe(pattern="train.py", root=str(tmp_path), exclude=frozenset()).read().processes
