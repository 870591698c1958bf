"""How many DataLoader workers a starved step needs, from what was measured: the one computation behind the fix
of every loader rule, whatever the job (the demo's stories and the embedded workload from their telemetry, an
attached job from its stack samples). A batch takes one worker `ratio` times the step's own time (everything
the training loop does besides waiting for data), so `ratio` workers keep up; each uses `worker_cores` of a CPU
while it makes a batch, so keeping up takes `ratio * worker_cores` cores. Where that is more than the cores the
rank has for loading, the cores are the limit and each sample must get cheaper; otherwise the fix is a number.

What limits the workers decides the fix. Samples that wait (storage, the network: a worker on a CPU a
fraction of the time it makes a batch) need a count from the rate and the wait, however few the cores. Samples
that compute need a core each: a worker is proposed only where a core is free beside the job, counting what the
job's own step and the box's other programs use of the cores it may use (`CoreUse`); where none is, a worker
would take its core from the step (measured: no gain) or share one with others, and the fix is a cheaper
sample, said for what the samples spend their time in (the job's own Python lines: vectorise it)."""

from __future__ import annotations

import math

import msgspec

from hwtop.advice.thresholds import Thresholds

CHEAPER_SAMPLE = "decode once and cache tensors, smaller inputs, fewer augmentation passes"
PYTHON_SHARE = 0.5  # a loading whose samples are mostly in the job's own Python lines is a Python loop
FREE_FOR_A_WORKER = 0.5  # of a core: less than this free beside the job, a worker computing takes someone's core
OTHERS_BUSY = 0.5  # cores others use of the job's: enough that they, not the job's own step, fill them


class CoreUse(msgspec.Struct, frozen=True):
    """How the cores a job may use are used, in cores, over the recent past: by the job (its step's threads, its
    loading, its workers) and by the box's other programs on the same cores (the box's per-core load less the
    job's own). `cpus` is how many CPUs its affinity holds; `usable` may be fewer (a CPU quota). `step` is what
    its ranks' steps use while they run (torch's intra-op threads: a fed step runs all the time), `loaders` what
    its workers use now."""

    usable: int
    cpus: int
    job: float
    others: float
    step: float | None = None
    loaders: float = 0.0

    @property
    def free(self) -> float:
        """Cores neither the job nor anyone else uses now."""
        return max(0.0, min(self.usable - self.job, self.cpus - self.job - self.others))

    @property
    def spare(self) -> float:
        """Cores a new worker would find idle once the step is fed: what the step uses while it runs, the workers
        and the others set aside."""
        if self.step is None:
            return self.free
        return max(0.0, min(float(self.usable), self.cpus - self.others) - self.step - self.loaders)

    def line(self) -> str:
        step = (f" (its step {self.step:.1f} while it runs, its workers {self.loaders:.1f})" if self.step is not None
                else "")
        return (f"the job uses {self.job:.1f} of the {self.usable} cores it may use{step} and the box's other "
                f"programs {self.others:.1f} of them: {self.free:.1f} free now, {self.spare:.1f} once the step is "
                "fed")


class Supply(msgspec.Struct, frozen=True):
    workers: int  # DataLoader workers now (0: the main thread loads its own batches)
    ratio: float  # one batch's time in one worker, over the step's own time
    worker_cores: float  # CPU a worker uses while making a batch, in cores: ~1 computes, ~0 waits (storage, sleep)
    cores: int | None  # usable cores of the job, where known
    ranks: int
    arithmetic: str  # how `ratio` was measured, for the evidence
    cores_text: str | None = None  # what `cores` counts, where it is not plain ("256 logical CPUs on 128 cores")
    use: CoreUse | None = None  # how the job's cores are used now, where the box's per-core load is known
    python_share: float | None = None  # share of the loading's samples in the job's own Python lines (a loop)
    site: str | None = None  # where the loading spends its time: `file:line function` of the job's own code
    gpu: bool = False  # the job computes on a GPU (a decode there is a fix)
    wait: float | None = None  # share of the step the main thread waits for data (serial loading's speed-ups)

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
    keeping = (f"keeping up takes {supply.ratio:.1f} workers x {supply.worker_cores:.2f} of a core each = "
               f"{needed:.1f} cores for loading")
    if supply.use is not None:
        evidence += [keeping, supply.use.line()]
    elif cores is not None:
        evidence.append(f"{keeping}; the job has {cores} ({_share(supply)})")
    if 0 < supply.workers and supply.ratio <= supply.workers:  # they make batches faster than the step uses them
        evidence.append(f"its {supply.workers} worker(s) keep up: {supply.ratio:.1f} would")
        return evidence, ["The workers keep up, so more of them would not help: the step waits for each batch's "
                          "hand-over to the main process, or for batches that arrive unevenly. A larger batch_size "
                          "makes the hand-over a smaller share of each step; a deeper prefetch_factor (default 2 "
                          "batches per worker) smooths uneven batches."]
    if waiting(supply):
        return evidence, _waiting_fixes(supply, t)
    return evidence, _computing_fixes(supply, t)


def _share(supply: Supply) -> str:
    return (f"{supply.cores_text or f'{supply.cores} usable cores'} / {supply.ranks} rank(s), one left for the main "
            "thread")


def _waiting_fixes(supply: Supply, t: Thresholds) -> list[str]:
    """Workers that wait more than they compute: a count from the rate the step uses batches and how long each
    takes one worker (rate x latency), bounded by the cores they would fill, not by the cores alone."""
    target, fed, cap = target_workers(supply, t), fed_ratio(supply, t), worker_cap(supply)
    cores = supply.loading_cores
    why = (f"a batch takes one worker {supply.ratio:.1f}x the step's own time, so {supply.ratio:.1f} workers keep up "
           f"with the step as measured; it was measured starved, when a step runs cold: fed, it runs faster (its "
           f"threads awake, its data in cache), taken as {t['starved_step_speedup']:g}x, so {fed:.1f} keep up with "
           f"it; they wait more than they compute ({100 * supply.worker_cores:.0f}% of a core each while making a "
           "batch), so more of them cost little CPU")
    why += _bound(supply, t, target, cap)
    if cores is not None:
        why += (f"; {target} of them take {target * supply.worker_cores:.1f} of the {cores} core(s) it has for "
                f"loading ({_share(supply)})")
    fixes = [f"DataLoader(num_workers={target}) (now {supply.workers}): {why}."]
    if target < fed:
        fixes.append(short_of_fed(supply, target, fed))
    if supply.workers == 0:
        fixes.append("persistent_workers=True with it, so the workers are not re-created each epoch.")
    return fixes


def _bound(supply: Supply, t: Thresholds, target: int, cap: int | None) -> str:
    wanted = wanted_workers(supply, t)
    if cap is not None and target == cap < wanted:
        return (f"; {target}, the most such workers the {supply.loading_cores} core(s) it has for loading can run, "
                f"at {100 * supply.worker_cores:.1f}% of a core each")
    if target == t["loader_max_workers"] < wanted:
        return (f"; {target}, the most hwtop names for one rank ({wanted} with "
                f"{100 * (t['loader_headroom'] - 1):.0f}% headroom)")
    return f"; {target} leaves {100 * (t['loader_headroom'] - 1):.0f}% headroom"


MIN_GAIN = 1.2  # a worker count named where no count can feed the step must make it at least this much faster


def unfed_room(supply: Supply) -> float | None:
    """Cores the loading can have where no count of workers the cores hold could feed the step (keeping up takes
    more cores than the job may use beside the box's other programs, the step's own aside): the step then runs
    only as often as batches arrive, using its cores that share of the time, so the loading has the rest:
    L + step x L / needed = room.
    None where the step could be fed (its cores are then taken all the time: `CoreUse.spare`) or the use is not
    known. tests/jobs/single_core.py on 2 cores (19.6 workers' worth): 0 workers 5.5 steps/s, 1 4.8, 2 8.1."""
    use = supply.use
    if use is None or use.step is None:
        return None
    cores = min(float(use.usable), use.cpus - use.others)
    needed = supply.cpu_needed
    if needed <= cores:
        return None
    return max(0.0, cores / (1.0 + use.step / needed) - use.loaders)


def unfed_gain(supply: Supply, workers: int, cores: float) -> float:
    """How much faster `workers` computing workers on `cores` make a step that cannot be fed than it is now: a
    batch now takes `ratio` step-times in the main thread plus the step (num_workers=0), or `ratio` over what its
    workers get; then `ratio` over what the new ones get, never less than the step itself."""
    ratio, each = supply.ratio, max(supply.worker_cores, 0.05)
    now = ratio + 1.0 if supply.workers == 0 else max(1.0, ratio * each / min(supply.workers * each, cores or each))
    return now / max(1.0, ratio * each / max(min(workers * each, cores), 1e-9))


def room(supply: Supply) -> int:
    """Workers more that the free cores hold: where the box's use is known, its free cores (where no count can
    feed the step, what its loading can have beside it, filled, and only where that measures faster); else the
    cores the rank has for loading less what its workers use now."""
    unfed = unfed_room(supply)
    if unfed is not None and supply.use is not None:
        total = max(1, math.ceil(unfed / max(supply.worker_cores, 0.05) - 0.25))
        more = max(0, total - supply.workers)
        return more if more and unfed_gain(supply, total, unfed + supply.use.loaders) >= MIN_GAIN else 0
    if supply.use is not None:
        free = supply.use.spare
    elif supply.loading_cores is not None:
        free = supply.loading_cores - supply.workers * supply.worker_cores
    else:
        return 0
    if free < FREE_FOR_A_WORKER * min(1.0, supply.worker_cores):
        return 0
    return max(1, math.floor(free / max(supply.worker_cores, 0.05) + 0.25))


def _computing_fixes(supply: Supply, t: Thresholds) -> list[str]:
    """Workers that compute need a core each: as many more as the free cores hold (each sample cheaper for the
    rest); none free, a cheaper sample first, and no worker that would take the step's core; where no count can
    feed the step, a cheaper sample first and the workers that fill what the loading can have after it."""
    unfed, use = unfed_room(supply), supply.use
    if unfed is not None and use is not None:
        return _unfed_fixes(supply, t, unfed + use.loaders)
    more = room(supply)
    if more:
        target = min(supply.workers + more, target_workers(supply, t))
        held = (f"{target} leaves {100 * (t['loader_headroom'] - 1):.0f}% headroom"
                if target >= wanted_workers(supply, t) else f"{_room_words(supply)} hold {target}")
        fixes = [f"DataLoader(num_workers={target}) (now {supply.workers}): a batch takes one worker "
                 f"{supply.ratio:.1f}x the step's own time, so {supply.ratio:.1f} workers keep up, each using "
                 f"{supply.worker_cores:.2f} of a core; {held}{_taken_words(supply, target)}."]
        if target < supply.ratio:
            fixes.append(short_of_fed(supply, target, supply.ratio))
        elif supply.python_share is not None and supply.python_share >= PYTHON_SHARE:
            fixes.append(f"Each sample cheaper too: {cheaper_ways(supply)}.")
        if supply.workers == 0:
            fixes.append("persistent_workers=True with it, so the workers are not re-created each epoch.")
        return fixes
    return _limit_fixes(supply)


def _limit_fixes(supply: Supply) -> list[str]:
    """No worker would gain: a cheaper sample, and where others share the cores, what a worker more would get."""
    use = supply.use
    fixes = [f"The cores are the limit: making batches as fast as the step uses them takes "
             f"{supply.cpu_needed:.1f} cores, {_busy_words(supply)}. Make each sample cheaper{_gain_words(supply)}: "
             + cheaper_ways(supply) + "."]
    if use is not None and use.others >= OTHERS_BUSY and supply.workers < (supply.loading_cores or 0):
        fixes.append(f"A DataLoader worker more would share a core with the box's other programs ({use.others:.1f} "
                     "of the job's cores): it gains only the share the scheduler takes from them, and less once "
                     "they are busier.")
    return fixes


def _unfed_fixes(supply: Supply, t: Thresholds, cores: float) -> list[str]:
    """No count the cores hold can feed the step: a cheaper sample first (k times cheaper gains up to k), then
    the workers that fill the cores its loading can have beside the step, where that measures 1.2x or more
    (tests/jobs/single_core.py: 2 workers 1.51x, 1 worker 0.82x; decode_photos.py -j 2 ~1.5x, pre-resized 2.2x)."""
    use = supply.use
    more = room(supply)
    target = max(supply.workers + 1, min(supply.workers + more, int(t["loader_max_workers"])))
    if not more or unfed_gain(supply, target, cores) < MIN_GAIN:  # no worker gains: as where none is free
        return _limit_fixes(supply)
    room_cores = min(float(use.usable), use.cpus - use.others) if use is not None else cores
    cheaper = (f"The cores are the limit: making batches as fast as the step uses them takes "
               f"{supply.cpu_needed:.1f} cores, and the job has {room_cores:.1f} beside the box's other programs. "
               f"Make each sample cheaper{_gain_words(supply)}: " + cheaper_ways(supply) + ".")
    workers = (f"DataLoader(num_workers={target}) (now {supply.workers}): a batch takes one worker "
               f"{supply.ratio:.1f}x the step's own time, each using {supply.worker_cores:.2f} of a core; "
               f"{_unfed_words(supply, target)}.")
    halved = _cheaper_gain(supply, 2.0)  # the larger gain first: samples 2x cheaper, or the workers
    fixes = [workers, cheaper] if halved is not None and unfed_gain(supply, target, cores) > halved else \
        [cheaper, workers]
    if supply.workers == 0:
        fixes.append("persistent_workers=True with it, so the workers are not re-created each epoch.")
    return fixes


def _taken_words(supply: Supply, target: int) -> str:
    if supply.use is not None or supply.loading_cores is None:
        return ""
    return (f"; they take {target * supply.worker_cores:.1f} of the {supply.loading_cores} cores it has for loading "
            f"({_share(supply)})")


def _unfed_words(supply: Supply, target: int) -> str | None:
    """Where no count feeds the step: what its loading can have beside it, and what `target` workers gain."""
    unfed, use = unfed_room(supply), supply.use
    if unfed is None or use is None:
        return None
    cores = unfed + use.loaders
    return (f"no count the cores hold can feed the step, so it runs only as often as batches arrive and its "
            f"loading can have {cores:.1f} of the {min(float(use.usable), use.cpus - use.others):.1f} core(s) the "
            f"box's other programs leave; {target} use {min(target * supply.worker_cores, cores):.1f} of them: about "
            f"{unfed_gain(supply, target, cores):.1f}x as fast as now")


def _room_words(supply: Supply) -> str:
    use = supply.use
    if use is None:
        return f"the {supply.loading_cores} core(s) it has for loading ({_share(supply)})"
    return f"the {use.spare:.1f} core(s) free beside the job once its step is fed"


def _busy_words(supply: Supply) -> str:
    use = supply.use
    if use is None:
        return f"and the job has {supply.loading_cores} for loading"
    if use.others >= OTHERS_BUSY:
        return (f"and no core is free for it: the job uses {use.job:.1f} of the {use.usable} it may use, the box's "
                f"other programs {use.others:.1f}")
    step = use.step if use.step is not None else use.job
    return (f"and no core is free for it: the job's step uses {step:.1f} of the {use.usable} it may use while it "
            "runs, so a worker would take its core from the step (no faster)")


def _cheaper_gain(supply: Supply, k: float) -> float | None:
    """How much faster samples k times cheaper make a serial loader's step (num_workers=0, its wait known)."""
    if supply.workers == 0 and supply.wait is not None and 0 < supply.wait < 1:
        return 1 / (1.0 - supply.wait + supply.wait / k)
    return None


def _gain_words(supply: Supply) -> str:
    """What a cheaper sample buys: a serial loader (num_workers=0) shortens every step by its share of the wait;
    workers that keep up once each sample is k times cheaper."""
    halved, quartered = _cheaper_gain(supply, 2.0), _cheaper_gain(supply, 4.0)
    if halved is not None and quartered is not None and supply.wait is not None:
        return (f" (the step waits {100 * supply.wait:.0f}% of its time for them: samples 2x cheaper make it "
                f"{halved:.1f}x faster, 4x cheaper {quartered:.1f}x)")
    if supply.workers:
        return f" (about {supply.ratio / supply.workers:.1f}x, for its {supply.workers} worker(s) to keep up)"
    return ""


def cheaper_ways(supply: Supply) -> str:
    """How to make a sample cheaper, from where its time goes: the job's own Python lines are a loop to vectorise;
    otherwise the usual ways, with a decode on the GPU where there is one."""
    at = f" at {supply.site}" if supply.site else ""
    if supply.python_share is not None and supply.python_share >= PYTHON_SHARE:
        return (f"the samples spend {100 * supply.python_share:.0f}% of their time in the job's own Python "
                f"lines{at}: vectorise that transform (numpy or torch operations on whole arrays) or move it to a "
                "compiled op (torch.compile, numba, a C extension), many times faster than a Python loop; "
                + CHEAPER_SAMPLE)
    gpu = "; decode on the GPU (torchvision.io.decode_jpeg on CUDA, NVIDIA DALI)" if supply.gpu else ""
    return (f"smaller stored inputs (images saved pre-resized offline to the size it trains at), a cheaper decode "
            f"(PIL's Image.draft decodes a JPEG at a reduced scale; pillow-simd, turbojpeg), decoded tensors "
            f"cached once, fewer augmentation passes{gpu}" + (f"; its loading spends its time{at}" if at else ""))


def short_of_fed(supply: Supply, target: int, fed: float) -> str:
    """What a bounded count leaves undone: the share of the fed step's time it will still wait, and what is left
    to make cheaper, so a user does not take the number for the whole fix."""
    rest = ("each read must get cheaper: one request for a whole batch's samples (a Dataset's "
            "__getitems__(indices) is handed the batch's indices), a local copy or cache of the store, larger "
            "records per read" if waiting(supply) else
            f"each sample must get cheaper: {cheaper_ways(supply)}")
    return (f"{target} workers are not enough: they make batches {fed / target:.1f}x slower than the fed step uses "
            f"them, so it will still wait for data about {100 * (1 - target / fed):.0f}% of the time. Beyond them, "
            f"{rest}.")
