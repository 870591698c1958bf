"""Whose a process is: its Slurm job, Kubernetes pod or container, from /proc/PID/cgroup and, where the process's
files can be read, its environment. Nothing privileged is asked (no kubelet socket, no runtime's state).

The cgroup paths, as their makers write them (read from their source):
- Slurm, cgroup v1 (SchedMD/slurm src/plugins/cgroup/v1: "%s/uid_%u", "%s/job_%u", "%s/step_%s", task_%u):
  `/slurm/uid_1000/job_4242/step_0/task_1` in each controller's hierarchy (`slurm_<node>` with several slurmd);
- Slurm, cgroup v2 (src/plugins/cgroup/v2: the stepd's systemd scope, then job_%u/step_%s, the user's tasks
  under `user/task_%d`, the stepd itself under `slurm`): `/system.slice/slurmstepd.scope/job_4242/step_0/user/
  task_0`; steps are numbers or batch, extern, interactive;
- Kubernetes (kubernetes pkg/kubelet/cm/cgroup_manager_linux.go, qos_container_manager_linux.go): the cgroupfs
  driver's `/kubepods/burstable/pod<uid>/<container id>` (guaranteed pods straight under `/kubepods`), the
  systemd driver's `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid, '-' as '_'>.slice/
  cri-containerd-<id>.scope` (`crio-<id>.scope`, `docker-<id>.scope`);
- Docker (`/system.slice/docker-<id>.scope`, cgroupfs `/docker/<id>`) and Podman (`/machine.slice/
  libpod-<id>.scope`; rootless `/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-<id>.scope`,
  cgroupfs `/libpod_parent/libpod-<id>`); `libpod-conmon-<id>` and `crio-conmon-<id>` are the monitor, not the
  container.
A Slurm job inside a pod (an operator running slurmd in pods) is owned by the job: the nearer owner.

The environment adds what no path says, only where /proc/PID/environ is readable (the same user, or root):
SLURM_JOB_ID/SLURM_STEP_ID (a Slurm without cgroup tracking), SLURM_JOB_NAME, SLURM_JOB_USER. A pod's name and
namespace: the downward API's variables where the pod spec sets them (POD_NAME/POD_NAMESPACE, or the Kubernetes
docs' MY_POD_NAME/MY_POD_NAMESPACE), else HOSTNAME for the name (the kubelet makes a pod's hostname its name,
unless it runs in the host's network, when HOSTNAME is the node's) and the service account's namespace file in the
pod's own root. Chosen over the kubelet's pod-resources socket (root only, and gRPC) and the runtime's state
(root only) because the user who runs hwtop can read their own pods' files. A Podman container's name is in its
`/run/.containerenv`, where Podman writes it; Docker keeps names only in root's /var/lib/docker, so a Docker
container shows its short id. Cgroup paths say ids and digits; every name read here is untrusted text.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Callable

import msgspec

from hwtop.model.owner import CONTAINER, POD, SLURM, Owner

_SLURM_V1 = re.compile(r"/slurm[^/]*/uid_(\d+)/job_(\d+)(?:/step_([^/]+))?")
_SLURM_V2 = re.compile(r"slurmstepd\.scope/job_(\d+)(?:/step_([^/]+))?")
_POD_SYSTEMD = re.compile(r"kubepods(?:-(burstable|besteffort))?-pod([0-9a-fA-F_]{8,64})\.slice")
_POD_CGROUPFS = re.compile(r"pod([0-9a-fA-F-]{8,64})")
_SCOPE = re.compile(r"(docker|libpod|cri-containerd|crio)-([0-9a-f]{12,64})(?:\.scope)?")
_HEX_ID = re.compile(r"[0-9a-f]{64}")
_RUNTIME = {"docker": "docker", "libpod": "podman", "cri-containerd": "containerd", "crio": "cri-o"}

ENV_KEYS = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_NAME", "SLURM_JOB_USER", "POD_NAME", "POD_NAMESPACE",
            "MY_POD_NAME", "MY_POD_NAMESPACE", "HOSTNAME", "KUBERNETES_SERVICE_HOST")
ENV_LIMIT = 1 << 20
NAME_LIMIT = 253  # a Kubernetes name is at most 253 characters; anything longer is cut
SERVICE_ACCOUNT_NAMESPACE = "var/run/secrets/kubernetes.io/serviceaccount/namespace"
TITLE_LOOKS = 16  # processes a job's title looks at for its owner
CACHE_LIMIT = 65536  # owners kept: pruned by the probe to the live processes, and never beyond this

_users: dict[int, str] = {}


def user_name(uid: int) -> str:
    """The login name of `uid`, or the number where the passwd database has none (a container's user)."""
    name = _users.get(uid)
    if name is None:
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        _users[uid] = name
    return name


def _paths(text: str) -> list[str]:
    """The cgroup paths of /proc/PID/cgroup, the v2 line ('0::') first: it is the one a v2 or hybrid box
    places every process by."""
    paths = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[2] not in ("/", ""):
            if parts[0] == "0" and not parts[1]:
                paths.insert(0, parts[2])
            else:
                paths.append(parts[2])
    return paths


def _slurm(path: str) -> Owner | None:
    match = _SLURM_V1.search(path)
    if match:
        return Owner(SLURM, job_id=match.group(2), step=match.group(3), user=user_name(int(match.group(1))))
    match = _SLURM_V2.search(path)
    if match:
        return Owner(SLURM, job_id=match.group(1), step=match.group(2))
    return None


def _container(parts: list[str], start: int) -> tuple[str, str] | None:
    """(runtime, full id) of the first container scope at or after `start`."""
    for index in range(start, len(parts)):
        part = parts[index]
        match = _SCOPE.fullmatch(part)
        if match:
            return _RUNTIME[match.group(1)], match.group(2)
        if _HEX_ID.fullmatch(part):  # cgroupfs: /docker/<id>, /kubepods/.../pod<uid>/<id>
            previous = parts[index - 1] if index else ""
            return ("docker" if previous == "docker" else ""), part
    return None


def _pod(parts: list[str]) -> Owner | None:
    for index, part in enumerate(parts):
        if "kubepods" not in part:
            continue
        for at in range(index, min(index + 3, len(parts))):
            systemd = _POD_SYSTEMD.fullmatch(parts[at])
            cgroupfs = None if systemd else _POD_CGROUPFS.fullmatch(parts[at])
            if systemd:
                uid, qos = systemd.group(2).replace("_", "-"), systemd.group(1) or "guaranteed"
            elif cgroupfs and parts[at - 1] in ("kubepods", "burstable", "besteffort"):
                uid = cgroupfs.group(1)
                qos = parts[at - 1] if parts[at - 1] != "kubepods" else "guaranteed"
            else:
                continue
            found = _container(parts, at + 1)
            return Owner(POD, pod_uid=uid.lower(), qos=qos, container_id=found[1] if found else None,
                         runtime=(found[0] or None) if found else None)
    return None


def parse_cgroup(text: str) -> Owner | None:
    """The owner a /proc/PID/cgroup file places its process in (v1, v2 or hybrid), None for the user's own."""
    paths = _paths(text)
    for path in paths:
        owner = _slurm(path)
        if owner is not None:
            return owner
    for path in paths:
        parts = path.strip("/").split("/")
        owner = _pod(parts)
        if owner is not None:
            return owner
        found = _container(parts, 0)
        if found is not None and found[0]:
            return Owner(CONTAINER, container_id=found[1], runtime=found[0])
    return None


def parse_environ(data: bytes) -> dict[str, str]:
    """The variables of ENV_KEYS in a NUL-separated environment block, each cut to NAME_LIMIT."""
    out = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            key = name.decode("utf-8", "replace")
            if key in ENV_KEYS:
                out[key] = value.decode("utf-8", "replace")[:NAME_LIMIT]
    return out


def with_environ(owner: Owner | None, env: dict[str, str], nodename: str = "") -> Owner | None:
    """`owner` with what the environment adds. The cgroup is the authority: a SLURM_JOB_ID that disagrees with
    it is ignored (an inherited or forged variable); one alone places a process where Slurm tracks none."""
    job = env.get("SLURM_JOB_ID", "")
    if owner is None and job.isdigit():
        owner = Owner(SLURM, job_id=job, step=env.get("SLURM_STEP_ID") or None)
    if owner is None:
        return None
    if owner.kind == SLURM and job == owner.job_id:
        return Owner(SLURM, job_id=owner.job_id, step=owner.step or env.get("SLURM_STEP_ID") or None,
                     user=env.get("SLURM_JOB_USER") or owner.user, job_name=env.get("SLURM_JOB_NAME") or None)
    if owner.kind == POD:
        name = env.get("POD_NAME") or env.get("MY_POD_NAME")
        hostname = env.get("HOSTNAME")
        if not name and hostname and hostname != nodename:
            name = hostname
        namespace = env.get("POD_NAMESPACE") or env.get("MY_POD_NAMESPACE")
        return Owner(POD, pod_uid=owner.pod_uid, qos=owner.qos, pod=name or None, namespace=namespace or None,
                     container_id=owner.container_id, runtime=owner.runtime)
    return owner


def _read(path: str, limit: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def _containerenv_name(text: str) -> str | None:
    """`name="..."` of Podman's /run/.containerenv (written for every container it runs)."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "name" and len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            return value[1:-1][:NAME_LIMIT] or None
    return None


class OwnerReader:
    """Owners by (pid, start time): a process's owner does not change while it lives (a process moved between
    cgroups by hand is the rare exception, seen when its pid is next new), so each is read once."""

    def __init__(self, proc: str = "/proc") -> None:
        self.proc = proc
        self._nodename = os.uname().nodename
        self._cache: dict[tuple[int, int], Owner | None] = {}
        self.reads = 0  # owners read from /proc (not from the cache): what the benchmark counts

    def owner(self, pid: int, start: int) -> Owner | None:
        key = (pid, start)
        cache = self._cache
        if key in cache:
            return cache[key]
        owner = self._read(pid)
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[key] = owner
        return owner

    @property
    def size(self) -> int:
        return len(self._cache)

    def owner_of_pid(self, pid: int) -> Owner | None:
        """For a pid alone (a GPU's process outside the table): its start time from its stat, then the cache."""
        try:
            data = _read(f"{self.proc}/{pid}/stat", 4096)
            start = int(data[data.rindex(b")") + 2:].split(None, 22)[19])
        except (OSError, ValueError, IndexError):
            return None
        return self.owner(pid, start)

    def retain(self, alive: Callable[[int, int], bool]) -> None:
        """Forget the processes that are gone (`alive(pid, start)` false)."""
        for key in [k for k in self._cache if not alive(*k)]:
            del self._cache[key]

    def _read(self, pid: int) -> Owner | None:
        self.reads += 1
        base = f"{self.proc}/{pid}"
        try:
            owner = parse_cgroup(_read(f"{base}/cgroup", 65536).decode("utf-8", "replace"))
        except OSError:
            return None
        try:
            env = parse_environ(_read(f"{base}/environ", ENV_LIMIT))
        except OSError:  # another user's process: its environment needs ptrace rights
            env = {}
        owner = with_environ(owner, env, self._nodename)
        if owner is None:
            return None
        if owner.kind == POD and owner.namespace is None:
            namespace = self._in_root(base, SERVICE_ACCOUNT_NAMESPACE)
            if namespace:
                owner = msgspec.structs.replace(owner, namespace=namespace)
        if owner.kind in (POD, CONTAINER):
            inner = self._inner_pid(base)
            if inner is not None:
                owner = msgspec.structs.replace(owner, inner_pid=inner)
        if owner.kind == CONTAINER and owner.runtime == "podman":
            text = self._in_root(base, "run/.containerenv")
            name = _containerenv_name(text) if text else None
            if name:
                owner = msgspec.structs.replace(owner, container_name=name)
        return owner

    @staticmethod
    def _inner_pid(base: str) -> int | None:
        """The process's pid in its innermost pid namespace, from the NSpid line of its status (proc(5): the pid in
        each namespace it is in, this /proc's first): the pid `ps` shows inside its container for the host pid
        NVML reports. None where it shares this /proc's namespace (one entry) or the line is missing."""
        try:
            text = _read(f"{base}/status", 8192).decode("ascii", "replace")
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith("NSpid:"):
                values = line.split()[1:]
                return int(values[-1]) if len(values) > 1 and values[-1].isdigit() else None
        return None

    @staticmethod
    def _in_root(base: str, path: str) -> str | None:
        """A small file inside the process's own root (/proc/PID/root: the same ptrace rights as its environ)."""
        try:
            return _read(f"{base}/root/{path}", 4096).decode("utf-8", "replace").strip()[:NAME_LIMIT] or None
        except OSError:
            return None


def parse_target(text: str) -> tuple[str, str] | None:
    """`--job slurm:4242` → ("slurm", "4242"), `--job pod:NAME` (or pod:NAMESPACE/NAME, or the pod's uid) →
    ("pod", ...), `--job container:NAME_OR_ID`; None for a pid or a command-line pattern."""
    kind, sep, value = text.strip().partition(":")
    if not sep or kind not in (SLURM, POD, CONTAINER) or not value.strip():
        return None
    return kind, value.strip()


def matches(owner: Owner | None, target: tuple[str, str]) -> bool:
    """Whether `owner` is the one `--job KIND:VALUE` names."""
    kind, value = target
    if owner is None or owner.kind != kind:
        return False
    if kind == SLURM:
        return owner.job_id == value
    if kind == POD:
        return value in (owner.pod, owner.pod_uid, owner.label)
    return value == owner.container_name or bool(owner.container_id and len(value) >= 4
                                                    and owner.container_id.startswith(value))


def describe(owner: Owner) -> str:
    """A job view's title for the owner: `Slurm job 4242 (llama-70b, alice)`, `pod research/bert-7f9`."""
    if owner.kind == SLURM:
        extra = ", ".join(x for x in (owner.job_name, owner.user) if x)
        return f"Slurm job {owner.job_id}" + (f" ({extra})" if extra else "")
    inside = f", pid {owner.inner_pid} inside" if owner.inner_pid is not None else ""
    if owner.kind == POD:
        return f"pod {owner.label}{inside}"
    return f"container {owner.label}{inside}"


def describe_target(target: tuple[str, str]) -> str:
    kind, value = target
    return {SLURM: "Slurm job", POD: "pod"}.get(kind, "container") + f" {value}"


class OwnerFocus:
    """The job finder's (probes/job/focus.py) use of owners: `--job slurm:ID` or `pod:NAME` finds every process of that
    owner on this host, and the job view's title names the Slurm job or pod a job's first process belongs to."""

    def __init__(self, proc: str, pattern: str | None) -> None:
        self.target = parse_target(pattern) if pattern is not None else None
        self._reader: OwnerReader | None = None
        self._proc = proc

    def owner(self, pid: int, start: int) -> Owner | None:
        if self._reader is None:
            self._reader = OwnerReader(self._proc)
        return self._reader.owner(pid, start)

    def matches(self, pid: int, start: int) -> bool:
        return self.target is not None and matches(self.owner(pid, start), self.target)

    def forget(self, starts: dict[int, int]) -> None:
        """Drop the owners of processes gone (`starts`: pid → start time of every live process)."""
        if self._reader is not None and self._reader.size > len(starts):
            self._reader.retain(lambda pid, start: starts.get(pid) == start)

    def title(self, label: str, processes: list[tuple[int, int]]) -> str:
        """`label`, naming the owner of the job's first processes ((pid, start), roots first): `pid 41000 · Slurm
        job 4242 (alice)`; for `--job slurm:ID` the owner alone. The best told of the first few is taken: a
        job's slurmstepd has no SLURM_JOB_NAME in its environment, its tasks do."""
        found = [o for o in (self.owner(pid, start) for pid, start in processes[:TITLE_LOOKS]) if o is not None]
        if not found:
            return label
        owner = max(found, key=lambda o: (found[0].same(o), o.job_name is not None, o.user is not None,
                                          o.pod is not None, o.namespace is not None))
        return describe(owner) if self.target is not None else f"{label} · {describe(owner)}"
