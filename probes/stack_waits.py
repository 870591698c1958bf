"""The wait Python frames cannot show: a CPU rank blocked in DDP's gradient all-reduce sits inside
`loss.backward()` (the autograd engine and c10d, below Python), so its stack reads "compute". Its main thread's
own CPU time tells: computing, it is on a CPU or queued for one; waiting for its peers, it is neither. Why this
signal and not py-spy's native frames or GIL state: see probes/stack_sampler.py."""

from __future__ import annotations

from collections import Counter

from hwtop.probes.stack_classify import Tally

WAITS = ("collective", "data", "workers")  # categories where the main thread waits on others, not its own work


def main_thread_times(pid: int, proc: str = "/proc") -> tuple[float, float] | None:
    """(seconds on a CPU, seconds queued for one) of a process's main thread, from its schedstat; None where
    unreadable (gone, or a kernel without schedstats)."""
    try:
        with open(f"{proc}/{pid}/task/{pid}/schedstat", "rb") as handle:
            fields = handle.read(256).split()
        return int(fields[0]) / 1e9, int(fields[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def uses_cuda(pid: int, proc: str = "/proc") -> bool:
    """Whether the process has loaded the CUDA driver (libcuda in its maps): a GPU rank even where NVML cannot
    list its processes (a container's pid namespace). Read once a chunk: a torch process's maps are long."""
    try:
        with open(f"{proc}/{pid}/maps", "rb") as handle:
            return any(b"libcuda.so" in line for line in handle)
    except OSError:
        return False


def move_hidden_wait(tally: Tally, blocked: float) -> int:
    """Moves to `collective` the samples of `compute` that the main thread's blocked share proves were waits:
    what is blocked beyond every other category's whole share (any of them might have been blocked) happened
    inside compute frames. A lower bound: a rank that waits inside compute less than that is left as it was.
    Returns the samples moved; the commonest compute site becomes (or joins) the collective site."""
    samples = tally.samples
    compute = tally.counts.get("compute", 0)
    if not samples or not compute:
        return 0
    moved = min(compute, max(0, round(blocked * samples) - (samples - compute)))
    if moved <= 0:
        return 0
    tally.counts["compute"] -= moved
    tally.counts["collective"] += moved
    sites = tally.sites.get("compute")
    if sites:
        site, count = sites.most_common(1)[0]
        tally.sites.setdefault("collective", Counter())[site] += moved
        sites[site] = count - min(count, moved)
        if sites[site] <= 0:
            del sites[site]
    return moved


def busy_site(tally: Tally) -> str | None:
    """The commonest site of the job's own code outside waits: what a rank does when it is not waiting; a rank
    whose every sample waits, where it waits (a rank in a hung collective: the line that called it), not blank."""
    sites: Counter[str] = Counter()
    waits: Counter[str] = Counter()
    for category, counts in tally.sites.items():
        (waits if category in WAITS else sites).update(counts)
    common = sites or waits
    return common.most_common(1)[0][0] if common else None
