"""Samples the Python stacks of a job's ranks in the background, so the rules can say where each rank's time
goes. One `py-spy record` child per rank at a time, for a bounded chunk (3 s first, then 10 s) at a low rate,
`--nonblocking` (the rank is never paused), `--idle` (a thread blocked on a queue is a sample too). One
`py-spy dump` per sample costs more CPU than a whole chunk of `record` (benchmarks/README.md), so chunks
it is. The thread ends when nobody has asked for stacks for IDLE_STOP_S.

DDP's hidden wait. A CPU rank waiting for the gradient all-reduce is blocked inside `loss.backward()`: the wait
happens in the autograd engine and c10d, below the Python frames, so the stack alone reads "compute". The signal
chosen to see it is the main thread's own CPU time (/proc/PID/task/PID/schedstat, read at each chunk's start and
end: two small reads per 10 s), set against its stack samples: a thread computing is on a CPU or queued for one;
a thread waiting for its peers is neither. The share of the chunk it spent blocked, beyond what every other
category could explain, must have been spent inside the "compute" frames: that much is moved to `collective`
(stack_waits.py). It is a lower bound, never a guess. Measured on tests/jobs/ddp_straggler.py, py-spy's own idle
flag agreed (rank 0: 28 of 29 samples inside backward idle), but py-spy does not write that flag into `record`'s
output, so keeping it would take a second py-spy per rank. Not chosen: `--native` frames (c10d/gloo symbols)
cannot be read with `--nonblocking` (py-spy refuses: each sample would pause the rank); `--gil` does not tell a
wait from compute (both run without the GIL). Only CPU ranks: on a GPU the main thread blocks in backward while
the engine's device threads launch kernels, and NCCL waits on the GPU, not the CPU, so a GPU rank's blocked time
is not moved (the demo's and the rules' GPU evidence is utilisation and power). A GPU rank is one NVML lists on a
GPU, or one that has loaded libcuda (NVML cannot list processes from inside some containers)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from hwtop.model.job import RankStacks, Stillness, WorkerStacks
from hwtop.probes.stack import MISSING, explain, find_py_spy
from hwtop.probes.stack_classify import (
    CATEGORIES,
    Frame,
    Tally,
    classify,
    fetching,
    frame_text,
    parse_raw,
    site_of,
)
from hwtop.probes.stack_waits import busy_site, main_thread_times, move_hidden_wait, uses_cuda

RATE_HZ = 10.0  # 10 samples a second per rank: benchmarks/stack_overhead.py measures its cost on a job
FIRST_CHUNK_S = 3.0  # the first numbers come quickly...
CHUNK_S = 10.0  # ...then one py-spy start-up per 10 s
WINDOW_S = 30.0  # fractions cover the chunks that ended within this much of the past
IDLE_STOP_S = 30.0
MAX_TARGETS = 8  # py-spy children at once; more ranks than this are sampled in turn
GRACE_S = 10.0  # a chunk that has not ended this long after its duration is killed
RETRY_S = 60.0  # after ptrace is refused, ask again this much later
POLL_S = 0.2


@dataclass(slots=True)
class _Chunk:
    start: float
    end: float
    tally: Tally
    running: float | None = None  # the main thread's share of the chunk on a CPU or queued for one
    cpu: float | None = None  # ...on a CPU only (a CPU rank's): its own work, queued time apart


@dataclass(slots=True)
class _Running:
    process: subprocess.Popen[bytes]
    path: str
    started: float
    duration: float
    times: tuple[float, float] | None = None  # the main thread's (on-CPU, queued) seconds at the start


@dataclass(slots=True)
class _Target:
    rank: int | None
    chunks: deque[_Chunk] = field(default_factory=lambda: deque(maxlen=64))
    message: str | None = None
    refused_at: float | None = None
    finished: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # cumulative seconds per category since first sampled
    updated_at: float | None = None  # wall-clock time of the last chunk read
    on_gpu: bool = False
    parent: int | None = None  # a DataLoader worker's parent: sampled only in the slots the ranks leave
    worker: bool = False
    still_stack: tuple[Frame, ...] | None = None  # the one stack of its last chunks, while they all showed one
    still_since: float | None = None
    still_until: float = 0.0
    still_samples: int = 0

    def track_stillness(self, tally: Tally, start: float, end: float) -> None:
        """A chunk whose samples all show one stack extends the stillness of that stack; any other ends it."""
        if tally.only is not None and tally.samples:
            if tally.only != self.still_stack or self.still_since is None:
                self.still_stack, self.still_since, self.still_samples = tally.only, start, 0
            self.still_samples += tally.samples
            self.still_until = end
        else:
            self.still_stack, self.still_since, self.still_samples = None, None, 0

    def stillness(self, now: float, window_s: float) -> Stillness | None:
        if self.still_stack is None or self.still_since is None or self.still_until < now - window_s:
            return None
        frames = list(self.still_stack)
        return Stillness(round(self.still_until - self.still_since, 1), self.still_samples,
                         frame_text(frames[-1]) if frames else None, site_of(frames), classify(frames),
                         fetching(frames))


class StackSampler:
    """`want({pid: rank})` each tick; `results()` gives what is known. Thread-safe; one worker thread."""

    def __init__(self, py_spy: str | None = None, rate_hz: float = RATE_HZ, chunk_s: float = CHUNK_S,
                 first_chunk_s: float = FIRST_CHUNK_S, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.py_spy = py_spy
        self.rate_hz, self.chunk_s, self.first_chunk_s, self.window_s = rate_hz, chunk_s, first_chunk_s, window_s
        self.clock = clock
        self.message: str | None = None  # for the whole job: py-spy missing
        self._lock = threading.Lock()
        self._targets: dict[int, _Target] = {}
        self._asked_at = clock()
        self._running: dict[int, _Running] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._keep_partial = False  # set by finish(): the running chunks are interrupted and read, not killed
        self._directory: str | None = None
        self._turn = 0
        self._worker_turn = 0

    # ----- the monitor's side -----

    def want(self, targets: dict[int, int | None], on_gpu: frozenset[int] = frozenset(),
             workers: dict[int, int | None] | None = None) -> None:
        """The processes to sample now (pid → rank); others are dropped. Starts the worker if needed. `on_gpu`:
        those that hold a GPU (their blocked time is not read as a collective wait). `workers` (pid → parent):
        DataLoader workers, sampled in the slots the ranks leave free, in turn."""
        workers = {pid: parent for pid, parent in (workers or {}).items() if pid not in targets}
        with self._lock:
            self._asked_at = self.clock()
            for pid in [p for p in self._targets if p not in targets and p not in workers]:
                del self._targets[pid]
            for pid, rank in targets.items():
                target = self._targets.setdefault(pid, _Target(rank))
                target.rank, target.worker, target.parent = rank, False, None
                target.on_gpu = pid in on_gpu
            for pid, parent in workers.items():
                target = self._targets.setdefault(pid, _Target(None))
                target.rank, target.worker, target.parent = None, True, parent
            if self.py_spy is None:
                self.py_spy = find_py_spy()
                if self.py_spy is None:
                    self.message = MISSING
                    return
            if (targets or workers) and (self._thread is None or not self._thread.is_alive()) and \
                    not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="hwtop-stacks", daemon=True)
                self._thread.start()

    def results(self) -> tuple[tuple[RankStacks, ...], str | None]:
        now = self.clock()
        with self._lock:
            out = tuple(self._rank_stacks(pid, target, now) for pid, target in
                        sorted(self._targets.items(), key=lambda kv: (kv[1].rank is None, kv[1].rank, kv[0]))
                        if not target.worker)
        sampled = sum(1 for t in self._targets.values() if not t.worker)
        note = self.message
        if note is None and sampled > MAX_TARGETS:
            note = f"sampling {MAX_TARGETS} of {sampled} ranks at a time, in turn"
        return out, note

    def worker_results(self) -> tuple[WorkerStacks, ...]:
        """What the DataLoader workers' samples say: how busy each is making batches, and whether it moves."""
        now = self.clock()
        out = []
        with self._lock:
            for pid, target in sorted(self._targets.items()):
                if not target.worker:
                    continue
                recent, tally = self._recent(target, now)
                if not tally.samples:
                    continue
                span = round(sum(c.end - c.start for c in recent), 1)
                site = tally.fetch_sites.most_common(1)[0][0] if tally.fetch_sites else None
                out.append(WorkerStacks(pid, target.parent, tally.samples, span,
                                        round(tally.fetches / tally.samples, 3), site,
                                        target.stillness(now, self.window_s), _share(tally.python, tally.fetches)))
        return tuple(out)

    def _recent(self, target: _Target, now: float) -> tuple[list[_Chunk], Tally]:
        """The target's chunks that ended within the window, and their samples together."""
        recent = [c for c in target.chunks if c.end >= now - self.window_s]
        tally = Tally()
        for chunk in recent:
            tally.merge(chunk.tally)
        return recent, tally

    def _rank_stacks(self, pid: int, target: _Target, now: float) -> RankStacks:
        """What a rank's samples in the window say (under the lock)."""
        recent, tally = self._recent(target, now)
        samples = tally.samples
        fractions = tuple((name, tally.counts[name] / samples) for name in CATEGORIES
                          if samples and tally.counts[name])
        sites = tuple((name, tally.sites[name].most_common(1)[0][0]) for name in CATEGORIES if tally.sites.get(name))
        loader = tally.loaders.most_common(1)[0][0] if tally.loaders else None
        message = target.message
        if message is None and not samples:
            message = self.message or ("sampling its stack…" if target.finished == 0 else "no Python samples yet")
        phase_seconds = tuple((name, round(target.seconds[name], 2)) for name in CATEGORIES
                              if target.seconds.get(name, 0.0) > 0)
        return RankStacks(pid, target.rank, samples, round(sum(c.end - c.start for c in recent), 1), fractions,
                          sites, loader, message, phase_seconds=phase_seconds, busy_site=busy_site(tally),
                          main_running=_main_running(recent), main_cpu=_least_cpu([c for c in recent
                                                                                   if c.cpu is not None]),
                          updated_at=target.updated_at,
                          handover=round(tally.handovers / samples, 3) if samples else 0.0,
                          data_python=_share(tally.python, tally.counts["data"]),
                          still=target.stillness(now, self.window_s))

    def finish(self, timeout: float = 5.0) -> None:
        """Stops sampling but keeps what the running chunks have sampled so far (py-spy writes its samples when
        interrupted): a report made at the end of a short watch covers the whole watch, not only the chunks that
        happened to end inside it. `results()` stays readable; `close()` still releases the rest."""
        self._keep_partial = True
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=timeout + GRACE_S)

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
        self._kill_all()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    # ----- the worker thread -----

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                now = self.clock()
                with self._lock:
                    idle = now - self._asked_at > IDLE_STOP_S
                    wanted = {pid: t for pid, t in self._targets.items()}
                if idle:
                    break
                self._collect(now)
                self._start_due(now, wanted)
                self._stop.wait(POLL_S)
        finally:
            if self._keep_partial:
                self._interrupt_all()
            self._kill_all()
            if self._directory is not None:
                shutil.rmtree(self._directory, ignore_errors=True)
                self._directory = None

    def _start_due(self, now: float, wanted: dict[int, _Target]) -> None:
        due = [pid for pid, t in wanted.items() if pid not in self._running and
               (t.refused_at is None or now - t.refused_at >= RETRY_S)]
        room = MAX_TARGETS - len(self._running)
        if room <= 0 or not due:
            return
        ranks = [pid for pid in due if not wanted[pid].worker]
        if len(ranks) > room:  # more ranks than children: take turns
            self._turn = (self._turn + room) % len(ranks)
            ranks = (ranks[self._turn:] + ranks[:self._turn])[:room]
        room -= len(ranks)
        ranks_sampled = len(ranks) + sum(1 for pid in self._running if pid in wanted and not wanted[pid].worker)
        workers = [pid for pid in due if wanted[pid].worker]
        if ranks_sampled < sum(1 for t in wanted.values() if not t.worker):
            workers = []  # a rank still waits for a slot: workers only take what the ranks leave
        if len(workers) > room > 0:
            self._worker_turn = (self._worker_turn + room) % len(workers)
            workers = workers[self._worker_turn:] + workers[:self._worker_turn]
        for pid in ranks + workers[:max(0, room)]:
            self._start(pid, wanted[pid], now)

    def _start(self, pid: int, target: _Target, now: float) -> None:
        if self.py_spy is None:
            return
        if self._directory is None:
            self._directory = tempfile.mkdtemp(prefix="hwtop-stacks-")  # 0700: only this user reads the samples
        duration = self.first_chunk_s if target.finished == 0 else self.chunk_s
        path = os.path.join(self._directory, f"{pid}-{target.finished}.txt")
        command = [self.py_spy, "record", "--pid", str(pid), "--rate", f"{self.rate_hz:g}",
                   "--duration", f"{max(1, round(duration))}", "--format", "raw", "--idle", "--threads",
                   "--nonblocking", "--full-filenames", "--output", path]
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
        except OSError as error:
            with self._lock:
                target.message = f"py-spy could not run: {error.strerror}"
                target.refused_at = now
            return
        self._running[pid] = _Running(process, path, now, max(1, round(duration)), main_thread_times(pid))

    def _collect(self, now: float) -> None:
        for pid, running in list(self._running.items()):
            code = running.process.poll()
            if code is None:
                if now - running.started > running.duration + GRACE_S:
                    running.process.kill()
                    running.process.wait()
                    self._finish(pid, running, None, f"py-spy did not finish a {running.duration:g} s sample "
                                                     f"within {GRACE_S:g} s more")
                continue
            stderr = running.process.stderr.read().decode("utf-8", "replace") if running.process.stderr else ""
            text = _samples(running)
            message = None if text is not None else explain(pid, code, stderr)
            self._finish(pid, running, text, message, now)

    def _finish(self, pid: int, running: _Running, text: str | None, message: str | None,
                now: float | None = None) -> None:
        del self._running[pid]
        _release(running)
        end = self.clock() if now is None else now
        with self._lock:
            target = self._targets.get(pid)
            if target is None:
                return
            target.finished += 1
            if text is not None:
                self._read_chunk(pid, target, running, text, end)
                return
            target.message = message
            if message is not None and ("ptrace not permitted" in message or "could not run" in message):
                target.refused_at = end
            elif message is not None and "is gone" in message:
                del self._targets[pid]

    def _read_chunk(self, pid: int, target: _Target, running: _Running, text: str, end: float) -> None:
        """A chunk's samples, with the main thread's CPU over it, added to its target (under the lock)."""
        tally = parse_raw(text, pid)
        start = max(running.started, end - running.duration)
        after = main_thread_times(pid)
        share = cpu = None
        if running.times is not None and after is not None and end > running.started:
            spent = (after[0] - running.times[0]) + (after[1] - running.times[1])
            share = max(0.0, min(1.0, spent / (end - running.started)))
            if not target.worker and not target.on_gpu and not uses_cuda(pid):
                cpu = max(0.0, min(1.0, (after[0] - running.times[0]) / (end - running.started)))
                if target.rank is not None:
                    move_hidden_wait(tally, 1.0 - share)
        target.chunks.append(_Chunk(start, end, tally, share, cpu))
        target.track_stillness(tally, start, end)
        if tally.samples:
            for name, count in tally.counts.items():
                target.seconds[name] = target.seconds.get(name, 0.0) + (end - start) * count / tally.samples
        target.updated_at = time.time()
        target.message = None
        target.refused_at = None

    def _interrupt_all(self, timeout: float = 5.0) -> None:
        """SIGINT to each running py-spy (it then writes what it has sampled), and the chunks read. A child that
        writes nothing in time (interrupted before it attached) is left to `_kill_all`, without a message."""
        for running in self._running.values():
            if running.process.poll() is None:
                running.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + timeout
        for running in self._running.values():
            try:
                running.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        now = self.clock()
        for pid, running in list(self._running.items()):
            if running.process.poll() is None:
                continue
            text = _samples(running)
            if text is None:
                del self._running[pid]
                _release(running)
            else:
                self._finish(pid, running, text, None, now)

    def _kill_all(self) -> None:
        for pid, running in list(self._running.items()):
            if running.process.poll() is None:
                running.process.kill()
            try:
                running.process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass
            self._running.pop(pid, None)
            _release(running)


def _main_running(recent: list[_Chunk]) -> float | None:
    """The main thread's share of the timed chunks on a CPU or queued for one, weighted by their length."""
    timed = [c for c in recent if c.running is not None]
    timed_span = sum(c.end - c.start for c in timed)
    if timed_span <= 0:
        return None
    return round(sum((c.running or 0.0) * (c.end - c.start) for c in timed) / timed_span, 3)


CPU_CHUNK_S = 2.0  # a chunk cut shorter (the end of a watch) holds too few steps to read its CPU from


def _least_cpu(chunks: list[_Chunk]) -> float | None:
    """The main thread's CPU share in its quietest chunk: its own work as the box leaves it alone. Others' load
    only adds to it (torch's intra-op threads spin while a partner waits for a CPU: 2-6% of a starved loop's
    time in 3 s windows on a busy 2-core box, 2% when quiet), never takes from it. Chunks too short to hold
    steps count only when there is nothing else."""
    whole = [c for c in chunks if c.end - c.start >= CPU_CHUNK_S] or chunks
    shares = [c.cpu for c in whole if c.cpu is not None]
    return round(min(shares), 4) if shares else None


def _samples(running: _Running) -> str | None:
    """What a finished py-spy wrote (raw stacks), or None when it wrote nothing."""
    try:
        with open(running.path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _release(running: _Running) -> None:
    """What a py-spy child leaves behind, finished or killed: its stderr pipe and its raw output file."""
    if running.process.stderr is not None:
        running.process.stderr.close()
    try:
        os.unlink(running.path)
    except OSError:
        pass


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None
