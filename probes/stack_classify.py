"""Where a rank's main thread is, from one Python stack: waiting for data, computing, in a collective, copying
or syncing with a device, starting or joining DataLoader workers, writing or reading a checkpoint, or none of
these ("other": the job's own Python). Only Python frames are visible (py-spy without --native), so a bare
`.item()` or `.to(device)` shows as the line of the job's code that called it, not as a copy."""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

CATEGORIES = ("data", "compute", "collective", "copy", "workers", "checkpoint", "other", "gpu-wait")
LABELS = {"data": "waiting for data", "compute": "compute", "collective": "collective", "copy": "host<->device",
          "workers": "worker start/join", "checkpoint": "checkpoint I/O", "other": "other Python",
          "gpu-wait": "waiting for the GPU"}
# When a stack holds frames of several kinds, the first kind here names it: joining workers happens inside
# DataLoader.__next__ (data), a transform's torch ops inside the loader (data, not compute), and so on.
PRECEDENCE = ("workers", "checkpoint", "collective", "data", "gpu-wait", "copy", "compute")

_LOADER = "torch/utils/data/dataloader.py"
_FETCH = "torch/utils/data/_utils/fetch.py"
_WORKER_CALLS = ("__iter__", "_get_iterator", "__init__", "_shutdown_workers", "__del__")
_DATA_CALLS = ("__next__", "_next_data", "_get_data", "_try_get_data", "_process_data")
_COMPUTE_FILES = ("torch/nn/", "torch/autograd/", "torch/_tensor.py", "torch/optim/", "torch/functional.py",
                  "torch/_dynamo/", "torch/_inductor/", "torch/amp/", "torch/_ops.py", "torch/utils/checkpoint.py",
                  "torch/_functorch/")


@dataclass(frozen=True, slots=True)
class Frame:
    function: str
    filename: str
    line: int | None


def parse_frame(text: str) -> Frame:
    """'Queue.get (/usr/lib/python3.11/queue.py:171)' → Frame."""
    name, sep, location = text.rpartition(" (")
    if not sep or not location.endswith(")"):
        return Frame(text, "", None)
    path, _, line = location[:-1].rpartition(":")
    return Frame(name, path, int(line) if line.isdigit() else None)


def _method(function: str) -> str:
    return function.rsplit(".", 1)[-1]


def _library(path: str) -> bool:
    """Installed packages and the standard library: not the job's own code."""
    return ("site-packages/" in path or "dist-packages/" in path or path.startswith("<") or
            ("/lib/python" in path and "/site-packages" not in path))


def kind_of(frame: Frame) -> str | None:
    path, method = frame.filename.replace("\\", "/"), _method(frame.function)
    if path.endswith(_LOADER):
        if method in _WORKER_CALLS:
            return "workers"
        if method in _DATA_CALLS:
            return "data"
    if path.endswith("multiprocessing/process.py") and method in ("start", "join"):
        return "workers"
    if path.endswith("torch/utils/data/_utils/fetch.py") or path.endswith("torch/utils/data/_utils/pin_memory.py"):
        return "data"
    if path.endswith("torch/serialization.py") or "torch/distributed/checkpoint/" in path or "safetensors/" in path:
        return "checkpoint"
    if path.endswith("distributed_c10d.py") or path.endswith("torch/distributed/_functional_collectives.py"):
        return "collective"
    if gpu_wait_frame(path, method):
        return "gpu-wait"
    if (path.endswith("torch/cuda/streams.py") and method in ("wait_event", "wait_stream")) or \
            (path.endswith("torch/distributed/utils.py") and method in ("_to_kwargs", "_recursive_to")):
        return "copy"
    if any(part in path for part in _COMPUTE_FILES):
        return "compute"
    return None


def classify(frames: list[Frame], source: SourceLine | None = None) -> str:
    """The category of one stack (outermost frame first). `source` reads a line of the job's code: a CUDA sync
    called from it has no Python frame of its own (see the block below)."""
    kinds = {kind for kind in map(kind_of, frames) if kind is not None}
    if source is not None and frames and syncs_on_its_line(frames[-1], source):
        kinds.add("gpu-wait")
    return next((kind for kind in PRECEDENCE if kind in kinds), "other")


# ----- A GPU rank's own wait: the main thread blocked until the GPU has finished -----------------
# torch.cuda.synchronize and Event/Stream.synchronize are Python functions (a frame of their own); .item(),
# .cpu(), .tolist(), .numpy() and a copy without non_blocking=True are C methods: py-spy (no --native) shows only
# the job's line that calls them, innermost. So that line is read, as py-spy's own `dump` prints it. On a CPU
# build the same lines wait for nothing but a copy, and a CPU rank seldom sits in them.
SourceLine = Callable[[str, int], "str | None"]
_SYNC_CALL = re.compile(r"\.(?:item|cpu|tolist|numpy)\(\s*\)|\bsynchronize\(|"
                        r"\.(?:to|copy_)\((?![^)]*non_blocking\s*=\s*True)")


def gpu_wait_frame(path: str, method: str) -> bool:
    return (path.endswith("torch/cuda/__init__.py") and method == "synchronize") or \
        (path.endswith("torch/cuda/streams.py") and method == "synchronize")


def syncs_on_its_line(frame: Frame, source: SourceLine) -> bool:
    """The innermost frame is the job's own and its line calls a CUDA sync."""
    if frame.line is None or not frame.filename or _library(frame.filename):
        return False
    text = source(frame.filename, frame.line)
    return text is not None and _SYNC_CALL.search(text.split("#", 1)[0]) is not None


def source_of(pid: int) -> SourceLine:
    """Reads the job's lines as the job sees its files (its mount namespace, through /proc/PID/root)."""
    def line(path: str, number: int) -> str | None:
        for candidate in (f"/proc/{pid}/root{path}", path):
            lines = _lines(candidate)
            if lines is not None:
                return lines[number - 1] if 0 < number <= len(lines) else None
        return None
    return line


@functools.lru_cache(maxsize=64)
def _lines(path: str) -> tuple[str, ...] | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError:
        return None
    return tuple(data.decode("utf-8", "replace").splitlines())
# ----- end of a GPU rank's own wait --------------------------------------------------------------------------


def loader_kind(frames: list[Frame]) -> str | None:
    for frame in frames:
        if frame.function.startswith("_SingleProcessDataLoaderIter") or \
                frame.filename.endswith("torch/utils/data/_utils/fetch.py"):
            return "single-process"
        if frame.function.startswith("_MultiProcessingDataLoaderIter") or \
                (frame.filename.endswith(_LOADER) and _method(frame.function) == "_try_get_data"):
            return "multi-process"
    return None


def site_of(frames: list[Frame]) -> str | None:
    """The innermost frame of the job's own code: where in the training script this sample was."""
    for frame in reversed(frames):
        if frame.filename and not _library(frame.filename):
            where = os.path.basename(frame.filename) + (f":{frame.line}" if frame.line is not None else "")
            return f"{where} {frame.function}"
    return None


def fetching(frames: list[Frame]) -> bool:
    """A DataLoader worker making a batch (its Dataset's __getitem__, collate), not waiting for an index. Its
    stack also holds the parent's frames up to the fork (DataLoader.__iter__), so `classify` cannot tell."""
    return any(frame.filename.replace("\\", "/").endswith(_FETCH) for frame in frames)


_HANDOVER_FILES = ("torch/multiprocessing/reductions.py", "multiprocessing/resource_sharer.py",
                   "multiprocessing/reduction.py")


def handing_over(frames: list[Frame]) -> bool:
    """The main thread receiving a batch a worker has made (its tensors rebuilt from shared memory, the file
    descriptors fetched from the worker), not waiting for one to be made: more workers would not shorten it."""
    return any(frame.filename.replace("\\", "/").endswith(_HANDOVER_FILES) for frame in frames)


def own_line(frames: list[Frame]) -> bool:
    """The innermost frame is the job's own code: the interpreter runs its Python lines (a loop over a sample's
    values), or a C function they call directly, not a library's Python (PIL's decode, numpy's wrappers)."""
    return bool(frames) and bool(frames[-1].filename) and not _library(frames[-1].filename)


def frame_text(frame: Frame) -> str:
    """'queues.py:113 Queue.get': a frame as the evidence prints it."""
    where = os.path.basename(frame.filename) + (f":{frame.line}" if frame.line is not None else "")
    return f"{where} {frame.function}" if frame.filename else frame.function


@dataclass(slots=True)
class Tally:
    """Main-thread samples of one process, by category, with the commonest site in each; how many were inside a
    DataLoader worker's fetch; and `only`, the stack every sample showed where they all showed the same one."""

    counts: Counter[str] = field(default_factory=Counter)
    sites: dict[str, Counter[str]] = field(default_factory=dict)
    loaders: Counter[str] = field(default_factory=Counter)
    fetches: int = 0
    fetch_sites: Counter[str] = field(default_factory=Counter)  # where the job's own code was, inside them
    handovers: int = 0  # data samples receiving a batch already made (see handing_over)
    python: int = 0  # loading samples (data, or a worker's fetch) whose innermost frame is the job's own line
    only: tuple[Frame, ...] | None = None
    mixed: bool = False

    @property
    def samples(self) -> int:
        return sum(self.counts.values())

    def add(self, frames: list[Frame], count: int, source: SourceLine | None = None) -> None:
        if not self.mixed:
            stack = tuple(frames)
            if self.only is None and not self.samples:
                self.only = stack
            elif stack != self.only:
                self.only, self.mixed = None, True
        category = classify(frames, source)
        self.counts[category] += count
        if category == "data" and handing_over(frames):
            self.handovers += count
        site = site_of(frames)
        if (category == "data" or fetching(frames)) and own_line(frames):
            self.python += count
        if fetching(frames):
            self.fetches += count
            if site is not None:
                self.fetch_sites[site] += count
        if site is not None:
            self.sites.setdefault(category, Counter())[site] += count
        loader = loader_kind(frames)
        if loader is not None:
            self.loaders[loader] += count

    def merge(self, other: Tally) -> None:
        self.counts.update(other.counts)
        for category, sites in other.sites.items():
            self.sites.setdefault(category, Counter()).update(sites)
        self.loaders.update(other.loaders)
        self.fetches += other.fetches
        self.fetch_sites.update(other.fetch_sites)
        self.handovers += other.handovers
        self.python += other.python
        self.only, self.mixed = None, True  # the stack of one span, not of several


def parse_raw(text: str, pid: int, source: SourceLine | None = None) -> Tally:
    """py-spy `record --format raw --threads` output → the main thread's tally. Lines read
    'thread (TID): NAME;frame;frame;... COUNT' (outermost frame first); the main thread's TID is the pid.
    `source` reads the job's lines (default: through /proc/PID/root), for the CUDA syncs called from them."""
    tally = Tally()
    source = source_of(pid) if source is None else source
    for line in text.splitlines():
        stack, _, count_text = line.rstrip().rpartition(" ")
        if not count_text.isdigit() or not stack.startswith("thread ("):
            continue
        head, _, rest = stack.partition(";")
        tid_text = head[len("thread ("):].split(")", 1)[0]
        try:
            tid = int(tid_text, 16) if tid_text.startswith("0x") else int(tid_text)
        except ValueError:
            continue
        if tid != pid and not head.endswith(": MainThread"):
            continue
        frames = [parse_frame(part) for part in rest.split(";") if part] if rest else []
        tally.add(frames, int(count_text), source)
    return tally
