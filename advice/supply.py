"""How many DataLoader workers a starved step needs, from what was measured: the one computation behind the fix
of every loader rule, whatever the job (the demo's stories and the embedded workload from their telemetry, an
attached job from its stack samples). A batch takes one worker `ratio` times the step's own time (everything
the training loop does besides waiting for data), so `ratio` workers keep up; each uses `worker_cores` of a CPU
while it makes a batch, so keeping up takes `ratio * worker_cores` cores. Where that is more than the cores the
rank has for loading, the cores are the limit and each sample must get cheaper; otherwise the fix is a number."""

from __future__ import annotations

import math

import msgspec

from hwtop.advice.thresholds import Thresholds

CHEAPER_SAMPLE = "decode once and cache tensors, smaller inputs, fewer augmentation passes"


class Supply(msgspec.Struct, frozen=True):
    workers: int  # DataLoader workers now (0: the main thread loads its own batches)
    ratio: float  # one batch's time in one worker, over the step's own time
    worker_cores: float  # CPU a worker uses while making a batch, in cores: ~1 computes, ~0 waits (storage, sleep)
    cores: int | None  # usable cores of the job, where known
    ranks: int
    arithmetic: str  # how `ratio` was measured, for the evidence
    cores_text: str | None = None  # what `cores` counts, where it is not plain ("256 logical CPUs on 128 cores")

    @property
    def loading_cores(self) -> int | None:
        """Cores one rank has for its workers: its share of the usable cores, one left for its main thread."""
        return None if self.cores is None else max(1, self.cores // max(1, self.ranks) - 1)

    @property
    def cpu_needed(self) -> float:
        """Cores of CPU the workers burn to make batches as fast as the step uses them."""
        return self.ratio * self.worker_cores


WAITING_CORES = 0.5  # a worker using under half a core while it makes a batch waits more than it computes


def waiting(supply: Supply) -> bool:
    return supply.worker_cores < WAITING_CORES


def fed_ratio(supply: Supply, t: Thresholds) -> float:
    """Workers that keep up once the step is fed. `ratio` divides by the step measured while it starved, when it
    runs cold; for workers that wait (cheap to add) the count is for the faster, fed step; workers that compute
    cost a core each, so theirs stays what was measured (the cores, not the count, are their limit)."""
    return supply.ratio * (t["starved_step_speedup"] if waiting(supply) else 1.0)


def worker_cap(supply: Supply) -> int | None:
    """The most workers of this kind the cores it has for loading can run: what bounds the count of workers that
    wait, cheap as each is."""
    cores = supply.loading_cores
    if cores is None or supply.worker_cores <= 0:
        return None
    return max(1, math.floor(cores / supply.worker_cores))


def wanted_workers(supply: Supply, t: Thresholds) -> int:
    """Workers that keep up with the fed step, with headroom, before any bound."""
    return math.ceil(fed_ratio(supply, t) * t["loader_headroom"])


def target_workers(supply: Supply, t: Thresholds) -> int:
    target = min(wanted_workers(supply, t), int(t["loader_max_workers"]))
    cap = worker_cap(supply)
    return max(supply.workers + 1, target if cap is None else min(target, cap))


def supply_lines(supply: Supply, t: Thresholds) -> tuple[list[str], list[str]]:
    """(evidence, fixes) for a step that waits for its batches."""
    evidence = [supply.arithmetic]
    cores, needed = supply.loading_cores, supply.cpu_needed
    share = (f"{supply.cores_text or f'{supply.cores} usable cores'} / {supply.ranks} rank(s), one left for the main "
             "thread")
    if cores is not None:
        evidence.append(f"keeping up takes {supply.ratio:.1f} workers x {supply.worker_cores:.2f} of a core each = "
                        f"{needed:.1f} cores for loading; the job has {cores} ({share})")
    fixes: list[str] = []
    if 0 < supply.workers and supply.ratio <= supply.workers:  # they make batches faster than the step uses them
        evidence.append(f"its {supply.workers} worker(s) keep up: {supply.ratio:.1f} would")
        fixes.append("The workers keep up, so more of them would not help: the step waits for each batch's hand-over "
                     "to the main process, or for batches that arrive unevenly. A larger batch_size makes the "
                     "hand-over a smaller share of each step; a deeper prefetch_factor (default 2 batches per "
                     "worker) smooths uneven batches.")
    elif cores is not None and needed > cores:  # the cores are the limit
        fixes.append(f"The cores are the limit: making batches as fast as the step uses them takes {needed:.1f} "
                     f"cores and the job has {cores} for loading. Make each sample about {needed / max(cores, 1):.1f}x "
                     f"cheaper ({CHEAPER_SAMPLE}), or run on more cores.")
        if supply.workers < cores:
            fixes.append(f"Meanwhile DataLoader(num_workers={cores}) uses every core there is for loading.")
    else:
        target, fed, cap = target_workers(supply, t), fed_ratio(supply, t), worker_cap(supply)
        why = f"a batch takes one worker {supply.ratio:.1f}x the step's own time, so {supply.ratio:.1f} workers keep up"
        if waiting(supply):
            why += (f" with the step as measured; it was measured starved, when a step runs cold: fed, it runs "
                    f"faster (its threads awake, its data in cache), taken as {t['starved_step_speedup']:g}x, so "
                    f"{fed:.1f} keep up with it; they wait more than they compute ({100 * supply.worker_cores:.0f}% of "
                    "a core each while making a batch), so more of them cost little CPU")
        wanted = wanted_workers(supply, t)
        if cap is not None and target == cap < wanted:
            why += (f"; {target}, the most such workers the {cores} core(s) it has for loading can run, at "
                    f"{100 * supply.worker_cores:.1f}% of a core each")
        elif target == t["loader_max_workers"] < wanted:
            why += (f"; {target}, the most hwtop names for one rank ({wanted} with "
                    f"{100 * (t['loader_headroom'] - 1):.0f}% headroom)")
        else:
            why += f"; {target} leaves {100 * (t['loader_headroom'] - 1):.0f}% headroom"
        if cores is not None and waiting(supply):
            why += (f"; {target} of them take {target * supply.worker_cores:.1f} of the {cores} core(s) it has for "
                    f"loading ({share})")
        elif cores is not None:
            why += f"; they take {needed:.1f} of the {cores} cores it has for loading ({share})"
        fixes.append(f"DataLoader(num_workers={target}) (now {supply.workers}): {why}.")
        if target < fed:
            fixes.append(short_of_fed(supply, target, fed))
        if supply.workers == 0:
            fixes.append("persistent_workers=True with it, so the workers are not re-created each epoch.")
    return evidence, fixes


def short_of_fed(supply: Supply, target: int, fed: float) -> str:
    """What a bounded count leaves undone: the share of the fed step's time it will still wait, and what is left
    to make cheaper, so a user does not take the number for the whole fix."""
    rest = ("each read must get cheaper: one request for a whole batch's samples (a Dataset's "
            "__getitems__(indices) is handed the batch's indices), a local copy or cache of the store, larger "
            "records per read" if waiting(supply) else
            f"each sample must get cheaper ({CHEAPER_SAMPLE})")
    return (f"{target} workers are not enough: they make batches {fed / target:.1f}x slower than the fed step uses "
            f"them, so it will still wait for data about {100 * (1 - target / fed):.0f}% of the time. Beyond them, "
            f"{rest}.")
