"""Owners over /proc trees in the layouts their makers write: Slurm's cgroup v1 and v2 plugins, the kubelet's
cgroupfs and systemd drivers with each QoS class, containerd, CRI-O, Docker and rootless Podman."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.model.owner import Owner, distinct, owners_label
from hwtop.probes.owners import OwnerReader, describe, matches, parse_cgroup, parse_target, user_name, with_environ
from hwtop.probes.processes import ProcessProbe
from tests.fakeproc import FakeProc, Proc

CID = "3f1c0d5e9a7b" + "0123456789abcdef" * 3 + "0a1b"  # 64 hex digits, as runtimes name containers
UID = "6b0a2f4e-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
SYSTEMD_UID = UID.replace("-", "_")  # the kubelet's systemd driver escapes '-' in a unit name as '_'

# A cgroup v1 box: one line per hierarchy; Slurm's task plugin places the task in cpuset, memory, devices and
# freezer, systemd's own hierarchy still says slurmd's service.
SLURM_V1 = "\n".join([
    "12:pids:/system.slice/slurmd.service",
    "11:memory:/slurm/uid_1000/job_4242/step_0/task_1",
    "10:devices:/slurm/uid_1000/job_4242/step_0/task_1",
    "9:freezer:/slurm/uid_1000/job_4242/step_0",
    "8:cpuset:/slurm/uid_1000/job_4242/step_0",
    "4:cpu,cpuacct:/system.slice/slurmd.service",
    "1:name=systemd:/system.slice/slurmd.service",
    "0::/system.slice/slurmd.service",
]) + "\n"

LAYOUTS = {
    "slurm v1": (SLURM_V1, "job 4242", {"step": "0"}),
    "slurm v1, several slurmd": ("4:memory:/slurm_node07/uid_0/job_17/step_batch/task_0\n", "job 17",
                                 {"step": "batch", "user": "root"}),
    "slurm v2 task": ("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", "job 4242", {"step": "0"}),
    "slurm v2 batch": ("0::/system.slice/slurmstepd.scope/job_9/step_batch/user/task_0\n", "job 9",
                       {"step": "batch"}),
    "slurm v2 stepd": ("0::/system.slice/slurmstepd.scope/job_9/step_extern/slurm\n", "job 9", {"step": "extern"}),
    "slurm v2 several slurmd": ("0::/system.slice/node07_slurmstepd.scope/job_5/step_interactive/user/task_0\n",
                                "job 5", {"step": "interactive"}),
    "k8s systemd guaranteed containerd": (
        f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/cri-containerd-{CID}.scope\n", "pod 6b0a2f4e",
        {"qos": "guaranteed", "runtime": "containerd", "container_id": CID, "pod_uid": UID}),
    "k8s systemd burstable cri-o": (
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SYSTEMD_UID}.slice/crio-{CID}.scope\n",
        "pod 6b0a2f4e", {"qos": "burstable", "runtime": "cri-o", "container_id": CID}),
    "k8s systemd besteffort docker": (
        f"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{SYSTEMD_UID}.slice/docker-{CID}.scope\n",
        "pod 6b0a2f4e", {"qos": "besteffort", "runtime": "docker"}),
    "k8s systemd cri-o conmon": (
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SYSTEMD_UID}.slice/crio-conmon-{CID}.scope\n",
        "pod 6b0a2f4e", {"container_id": None}),
    "k8s cgroupfs v1 burstable": (
        f"11:memory:/kubepods/burstable/pod{UID}/{CID}\n1:name=systemd:/kubepods/burstable/pod{UID}/{CID}\n",
        "pod 6b0a2f4e", {"qos": "burstable", "container_id": CID}),
    "k8s cgroupfs guaranteed": (f"0::/kubepods/pod{UID}/{CID}\n", "pod 6b0a2f4e", {"qos": "guaranteed"}),
    "k8s cgroupfs besteffort": (f"0::/kubepods/besteffort/pod{UID}/{CID}\n", "pod 6b0a2f4e", {"qos": "besteffort"}),
    "docker systemd": (f"0::/system.slice/docker-{CID}.scope\n", CID[:12], {"runtime": "docker"}),
    "docker cgroupfs v1": (f"11:memory:/docker/{CID}\n1:name=systemd:/docker/{CID}\n", CID[:12],
                           {"runtime": "docker"}),
    "podman rootful": (f"0::/machine.slice/libpod-{CID}.scope/container\n", CID[:12], {"runtime": "podman"}),
    "podman rootless": (f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{CID}.scope\n",
                        CID[:12], {"runtime": "podman", "container_id": CID}),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_each_layout_names_its_owner(name: str) -> None:
    text, label, fields = LAYOUTS[name]
    owner = parse_cgroup(text)
    assert owner is not None and owner.label == label
    for key, value in fields.items():
        assert getattr(owner, key) == value, key


@pytest.mark.parametrize("text", [
    "0::/user.slice/user-1000.slice/session-3.scope\n",  # a login shell: the user's own
    f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-conmon-{CID}.scope\n",  # podman's monitor
    "0::/\n",  # inside a container's cgroup namespace
    "0::/system.slice/slurmd.service\n",  # slurmd itself is no job's
    f"0::/system.slice/{CID}\n",  # a bare id under no runtime
    "",
])
def test_no_owner(text: str) -> None:
    assert parse_cgroup(text) is None


def test_slurm_inside_a_pod_is_the_job() -> None:
    text = f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/cri-containerd-{CID}.scope/system.slice/" \
           "slurmstepd.scope/job_31/step_0/user/task_0\n"
    owner = parse_cgroup(text)
    assert owner is not None and owner.label == "job 31"


def test_environment_adds_name_and_user_and_cannot_move_a_job() -> None:
    owner = parse_cgroup("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n")
    env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "llama-70b", "SLURM_JOB_USER": "alice"}
    named = with_environ(owner, env)
    assert named is not None and (named.job_name, named.user) == ("llama-70b", "alice")
    forged = with_environ(owner, {**env, "SLURM_JOB_ID": "1"})
    assert forged == owner  # the cgroup says 4242: a disagreeing variable adds nothing
    alone = with_environ(None, {"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "3"})  # no cgroup tracking
    assert alone is not None and (alone.job_id, alone.step) == ("77", "3")
    assert with_environ(None, {"SLURM_JOB_ID": "not a number"}) is None


def test_pod_name_from_downward_api_then_hostname_never_the_node() -> None:
    pod = parse_cgroup(f"0::/kubepods/pod{UID}/{CID}\n")
    downward = with_environ(pod, {"POD_NAME": "trainer-0", "POD_NAMESPACE": "ml", "HOSTNAME": "x"}, "node1")
    assert downward is not None and downward.label == "ml/trainer-0"
    docs_names = with_environ(pod, {"MY_POD_NAME": "trainer-1", "MY_POD_NAMESPACE": "ml"}, "node1")
    assert docs_names is not None and docs_names.label == "ml/trainer-1"
    hostname = with_environ(pod, {"HOSTNAME": "trainer-2"}, "node1")
    assert hostname is not None and hostname.label == "trainer-2"
    host_network = with_environ(pod, {"HOSTNAME": "node1"}, "node1")  # hostNetwork: HOSTNAME is the node's
    assert host_network is not None and host_network.label == "pod 6b0a2f4e"


def _tree(tmp_path: Path) -> FakeProc:
    fake = FakeProc(tmp_path)
    fake.add(Proc(100, 1, "python", ("python", "train.py"), cgroup=SLURM_V1,
                  env={"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "llama", "SLURM_JOB_USER": "alice"}))
    fake.add(Proc(200, 1, "python", ("python", "serve.py"), cgroup=f"0::/kubepods/burstable/pod{UID}/{CID}\n"))
    fake.add(Proc(300, 1, "python", ("python", "x.py"),
                  cgroup=f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{CID}.scope\n"))
    fake.add(Proc(400, 1, "bash", ("bash",)))
    fake.write()
    secrets = tmp_path / "proc/200/root/var/run/secrets/kubernetes.io/serviceaccount"
    secrets.mkdir(parents=True)
    (secrets / "namespace").write_text("research\n")
    (tmp_path / "proc/200/environ").write_bytes(b"HOSTNAME=bert-7f9\0PATH=/usr/bin\0")
    run = tmp_path / "proc/300/root/run"
    run.mkdir(parents=True)
    (run / ".containerenv").write_text(f'engine="podman-4.9.3"\nname="notebook"\nid="{CID}"\nimage="x"\n')
    return fake


def test_reader_over_a_proc_tree(tmp_path: Path) -> None:
    _tree(tmp_path)
    reader = OwnerReader(str(tmp_path / "proc"))
    slurm = reader.owner(100, 1000)
    assert slurm is not None and (slurm.label, slurm.user, slurm.job_name, slurm.step) == \
        ("job 4242", "alice", "llama", "0")
    pod = reader.owner(200, 1000)
    assert pod is not None and pod.label == "research/bert-7f9" and pod.container == CID[:12]
    podman = reader.owner(300, 1000)
    assert podman is not None and podman.label == "notebook"
    assert reader.owner(400, 1000) is None
    assert reader.owner_of_pid(100) == slurm and reader.owner_of_pid(999) is None


def test_read_once_per_process_and_again_for_a_reused_pid(tmp_path: Path) -> None:
    fake = _tree(tmp_path)
    reader = OwnerReader(str(tmp_path / "proc"))
    for _ in range(3):
        reader.owner(100, 1000)
        reader.owner(400, 1000)  # no owner is remembered too
    assert reader.reads == 2
    fake.procs[100].start = 5000
    fake.procs[100].cgroup = "0::/system.slice/slurmstepd.scope/job_5151/step_0/user/task_0\n"
    fake.procs[100].env = {}
    fake.write()
    reader.retain(lambda pid, start: (pid, start) in {(100, 5000), (400, 1000)})
    owner = reader.owner(100, 5000)
    assert owner is not None and owner.label == "job 5151" and reader.reads == 3


def test_unreadable_files_give_what_the_cgroup_says(tmp_path: Path) -> None:
    fake = _tree(tmp_path)
    (tmp_path / "proc/100/environ").unlink()  # another user's process: no environment
    (tmp_path / "proc/400/cgroup").unlink()  # gone mid-read
    del fake
    reader = OwnerReader(str(tmp_path / "proc"))
    owner = reader.owner(100, 1000)
    assert owner is not None and owner.label == "job 4242" and owner.user == user_name(1000)  # the path's uid_1000
    assert owner.job_name is None
    assert reader.owner(400, 1000) is None


def test_process_rows_carry_their_owner(tmp_path: Path) -> None:
    _tree(tmp_path)
    rows = {p.pid: p for p in ProcessProbe(str(tmp_path), limit=10).read()}
    assert rows[100].owner is not None and rows[100].owner.label == "job 4242"
    assert rows[400].owner is None


HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07[bold]evil[/]\nname"


def test_hostile_names_stay_text(tmp_path: Path) -> None:
    fake = _tree(tmp_path)
    fake.procs[100].env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_USER": HOSTILE, "SLURM_JOB_NAME": HOSTILE}
    fake.write()
    (tmp_path / "proc/200/environ").write_bytes(f"POD_NAME={HOSTILE}\0POD_NAMESPACE=ns\0".encode())
    reader = OwnerReader(str(tmp_path / "proc"))
    slurm, pod = reader.owner(100, 1000), reader.owner(200, 1000)
    assert slurm is not None and slurm.user == HOSTILE and slurm.job_name == HOSTILE  # kept literally
    assert pod is not None and pod.label == f"ns/{HOSTILE}"
    # a path cannot smuggle a name in: only digits make a job id, hex a container id
    smuggled = parse_cgroup("0::/system.slice/slurmstepd.scope/job_4\x1b[2J/step_0\n")
    assert smuggled == Owner("slurm", job_id="4")


def test_targets_and_matches() -> None:
    assert parse_target("slurm:4242") == ("slurm", "4242")
    assert parse_target(" pod:ml/trainer-0 ") == ("pod", "ml/trainer-0")
    assert parse_target("4242") is None and parse_target("train.py") is None and parse_target("slurm:") is None
    job = Owner("slurm", job_id="4242")
    assert matches(job, ("slurm", "4242")) and not matches(job, ("slurm", "424"))
    pod = Owner("pod", pod_uid=UID, pod="trainer-0", namespace="ml")
    assert all(matches(pod, ("pod", v)) for v in ("trainer-0", "ml/trainer-0", UID))
    assert not matches(pod, ("slurm", "trainer-0")) and not matches(None, ("pod", "trainer-0"))
    box = Owner("container", container_id=CID, container_name="notebook")
    assert matches(box, ("container", "notebook")) and matches(box, ("container", CID[:12]))


def test_gpu_owner_line() -> None:
    alice, bob = Owner("slurm", job_id="4242", user="alice"), Owner("slurm", job_id="5151", user="bob")
    both = distinct([alice, None, Owner("slurm", job_id="4242", step="1"), bob])
    assert both == (alice, bob)
    assert owners_label(both) == "job 4242 (alice), job 5151 (bob)"
    assert owners_label(both, 20) == "job 4242 (alice) +1"


_names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(st.lists(st.tuples(st.integers(0, 20), _names, _names), max_size=12))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_cgroup_file_parses_or_says_none(lines: list[tuple[int, str, str]]) -> None:
    text = "\n".join(f"{h}:{c}:{p}" for h, c, p in lines)
    owner = parse_cgroup(text)
    assert owner is None or owner.kind in ("slurm", "pod", "container")
    if owner is not None and owner.kind == "slurm":
        assert owner.job_id is not None and owner.job_id.isdigit()


@given(st.integers(1, 2**32), st.sampled_from(["0", "12", "batch", "extern", "interactive"]), st.integers(0, 64),
       st.sampled_from(["", "node07_"]), st.sampled_from(["system.slice/", ""]))
def test_any_slurm_v2_place(job: int, step: str, task: int, prefix: str, parent: str) -> None:
    owner = parse_cgroup(f"0::/{parent}{prefix}slurmstepd.scope/job_{job}/step_{step}/user/task_{task}\n")
    assert owner is not None and (owner.job_id, owner.step) == (str(job), step)


def test_a_containers_process_knows_its_pid_inside(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "proc/200/status").write_text("Name:\tpython\nNSpid:\t200\t7\nCpus_allowed_list:\t0-3\n")
    (tmp_path / "proc/300/status").write_text("Name:\tpython\nNSpid:\t300\nCpus_allowed_list:\t0-3\n")
    reader = OwnerReader(str(tmp_path / "proc"))
    pod, podman = reader.owner(200, 1000), reader.owner(300, 1000)
    assert pod is not None and pod.inner_pid == 7 and pod.namespace == "research"  # the rest kept
    assert podman is not None and podman.inner_pid is None and podman.label == "notebook"  # one namespace: none
    assert describe(pod) == "pod research/bert-7f9, pid 7 inside"
