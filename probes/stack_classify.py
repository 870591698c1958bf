"""Where a rank's main thread is, from one Python stack: waiting for data, computing, in a collective, copying
or syncing with a device, starting or joining DataLoader workers, writing or reading a checkpoint, or none of
these ("other": the job's own Python). Only Python frames are visible (py-spy without --native), so a bare
`.item()` or `.to(device)` shows as the line of the job's code that called it, not as a copy."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

CATEGORIES = ("data", "compute", "collective", "copy", "workers", "checkpoint", "other")
LABELS = {"data": "waiting for data", "compute": "compute", "collective": "collective", "copy": "host<->device",
          "workers": "worker start/join", "checkpoint": "checkpoint I/O", "other": "other Python"}
# When a stack holds frames of several kinds, the first kind here names it: joining workers happens inside
# DataLoader.__next__ (data), a transform's torch ops inside the loader (data, not compute), and so on.
PRECEDENCE = ("workers", "checkpoint", "collective", "data", "copy", "compute")

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
    if (path.endswith("torch/cuda/__init__.py") and method == "synchronize") or \
            (path.endswith("torch/cuda/streams.py") and method in ("synchronize", "wait_event", "wait_stream")) or \
            (path.endswith("torch/distributed/utils.py") and method in ("_to_kwargs", "_recursive_to")):
        return "copy"
    if any(part in path for part in _COMPUTE_FILES):
        return "compute"
    return None


def classify(frames: list[Frame]) -> str:
    """The category of one stack (outermost frame first)."""
    kinds = {kind for kind in map(kind_of, frames) if kind is not None}
    return next((kind for kind in PRECEDENCE if kind in kinds), "other")


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
    only: tuple[Frame, ...] | None = None
    mixed: bool = False

    @property
    def samples(self) -> int:
        return sum(self.counts.values())

    def add(self, frames: list[Frame], count: int) -> None:
        if not self.mixed:
            stack = tuple(frames)
            if self.only is None and not self.samples:
                self.only = stack
            elif stack != self.only:
                self.only, self.mixed = None, True
        category = classify(frames)
        self.counts[category] += count
        site = site_of(frames)
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
        self.only, self.mixed = None, True  # the stack of one span, not of several


def parse_raw(text: str, pid: int) -> Tally:
    """py-spy `record --format raw --threads` output → the main thread's tally. Lines read
    'thread (TID): NAME;frame;frame;... COUNT' (outermost frame first); the main thread's TID is the pid."""
    tally = Tally()
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
        tally.add(frames, int(count_text))
    return tally
