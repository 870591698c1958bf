"""Who a process belongs to, as the box's scheduler placed it: a Slurm job, a Kubernetes pod, a container.

Every name here comes from outside (cgroup paths, a process's environment, a container runtime's files): it is
untrusted text, shown through safe_text. The labels are the short forms the process table, the GPU panel and
`--job` speak (`job 4242`, `ns/pod`, a container's name or short id); the exporter's labels are dcgm-exporter's
(`hpc_job`, `pod`, `namespace`, `container`: exporter/metrics.py)."""

from __future__ import annotations

from typing import Final, Literal

from hwtop.model.record import Record

OwnerKind = Literal["slurm", "pod", "container"]
SLURM: Final = "slurm"
POD: Final = "pod"
CONTAINER: Final = "container"
SHORT_ID = 12  # a container id as `docker ps` and `podman ps` print it


class Owner(Record, frozen=True):
    kind: OwnerKind
    job_id: str | None = None  # Slurm: the job (digits), step (0, batch, extern, interactive) and user
    step: str | None = None
    user: str | None = None
    job_name: str | None = None  # SLURM_JOB_NAME, where the process's environment could be read
    pod_uid: str | None = None  # Kubernetes: from the kubepods cgroup
    qos: str | None = None  # guaranteed | burstable | besteffort
    pod: str | None = None  # the pod's name and namespace, where its environment says them (probes/owners.py)
    namespace: str | None = None
    container_id: str | None = None  # a pod's container, or a Docker/Podman container (the full id)
    container_name: str | None = None
    runtime: str | None = None  # docker | podman | containerd | cri-o
    inner_pid: int | None = None  # its pid inside its container's own pid namespace (NSpid), where it has one

    @property
    def label(self) -> str:
        """The short form a table cell or a GPU line shows."""
        if self.kind == SLURM:
            return f"job {self.job_id}"
        if self.kind == POD:
            if self.pod and self.namespace:
                return f"{self.namespace}/{self.pod}"
            return self.pod or f"pod {(self.pod_uid or '?')[:8]}"
        return self.container_name or (self.container_id or "?")[:SHORT_ID]

    @property
    def short_label(self) -> str:
        """The label where room is short: a pod's name without its namespace."""
        if self.kind == POD and self.pod:
            return self.pod
        return self.label

    @property
    def container(self) -> str | None:
        """The container as dcgm-exporter's `container` label names it: its name, else its short id."""
        if self.container_name:
            return self.container_name
        return self.container_id[:SHORT_ID] if self.container_id else None

    def same(self, other: Owner | None) -> bool:
        """The same job, pod or container (a Slurm job's steps are one job; a pod's containers one pod)."""
        if other is None or other.kind != self.kind:
            return False
        if self.kind == SLURM:
            return other.job_id == self.job_id
        if self.kind == POD:
            return other.pod_uid == self.pod_uid if self.pod_uid else other.label == self.label
        return other.container_id == self.container_id


def owners_label(owners: tuple[Owner, ...], width: int | None = None) -> str:
    """Several owners of one GPU, as a line says them: `job 4242 (alice)`, or `job 4242 (alice), job 5151 (bob)`,
    cut to `width` with `+N` for the rest."""
    parts = [f"{o.label} ({o.user})" if o.kind == SLURM and o.user else o.label for o in owners]
    text = ", ".join(parts)
    if width is None or len(text) <= width:
        return text
    for keep in range(len(parts) - 1, 0, -1):
        text = ", ".join(parts[:keep]) + f" +{len(parts) - keep}"
        if len(text) <= width:
            return text
    return parts[0][: max(0, width - 1)] + "…" if width > 1 else ""


def distinct(owners: list[Owner | None]) -> tuple[Owner, ...]:
    """Each owner once (by `same`), in the order first met."""
    out: list[Owner] = []
    for owner in owners:
        if owner is not None and not any(owner.same(seen) for seen in out):
            out.append(owner)
    return tuple(out)
