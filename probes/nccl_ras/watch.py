"""When and where hwtop asks a focused job's RAS service, on its own thread, and the answer joined with the job.

Asked only when one of the job's processes maps libnccl (/proc/PID/maps), or when the user named an address
(`--nccl-ras HOST:PORT`). The port is the ranks' NCCL_RAS_ADDR (from their environment), else NCCL's default
localhost:28028. Manners (NCCL issues #1718, #1762, #1669, #2346): one query at a time from one thread; at most
one every `interval_s` (10 s by default, never under 5 s); the first one interval after libnccl was first seen
mapped, and none for INIT_HOLD_S after an answer showed a communicator initialising (init_state 7); each query
bounded by a deadline and its answer by a size cap. The tick never waits for a query: it takes the latest view."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec.structs

from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.model.ras import IN_PROGRESS, NcclView, RasReply
from hwtop.probes.nccl_ras.client import DEFAULT_PORT, Address, RasError, RawReply, parse_address, query
from hwtop.probes.nccl_ras.join import join_ranks, named
from hwtop.probes.nccl_ras.manners import DEFAULT_INTERVAL_S, MIN_INTERVAL_S
from hwtop.probes.nccl_ras.track import Tracker

INIT_HOLD_S = 30.0  # after an answer with a communicator initialising: NCCL issues #1669, #2346
MAPS_RECHECK_S = 30.0  # a process not mapping libnccl is looked at again this often (torch loads it lazily)
MAPS_PER_TICK = 4  # /proc/PID/maps of a torch process is thousands of lines: a few a tick
ERRORS_KEPT = 8
LIBNCCL = b"libnccl"
DEFAULT_ADDRESS = Address("localhost", DEFAULT_PORT)


def interval_seconds(value: float) -> float:
    return max(MIN_INTERVAL_S, value)


def maps_libnccl(pid: int, proc: str = "/proc") -> bool:
    """Whether the process has NCCL loaded (its maps name libnccl*.so*); False when unreadable."""
    try:
        with open(f"{proc}/{pid}/maps", "rb") as maps:
            return any(LIBNCCL in line for line in maps)
    except OSError:
        return False


def parse_reply(raw: RawReply) -> RasReply:
    from hwtop.probes.nccl_ras.parse_json import parse_json
    from hwtop.probes.nccl_ras.parse_text import parse_text

    return parse_json(raw.text) if raw.format == "json" else parse_text(raw.text)


Query = Callable[[Address, bool], RawReply]


def _query(address: Address, want_json: bool) -> RawReply:
    return query(address, want_json)


@dataclass(slots=True)
class RasWatch:
    """One per focused job. `address`: the user's --nccl-ras, which skips the libnccl check."""

    address: Address | None = None
    interval_s: float = DEFAULT_INTERVAL_S
    proc: str = "/proc"
    ask: Query = _query
    _target: Address | None = None
    _source: str = ""
    _nccl_seen_at: float | None = None  # monotonic
    _checked: dict[int, float] = field(default_factory=dict)  # pid -> when its maps were last read
    _nccl_pids: set[int] = field(default_factory=set)
    _view: NcclView | None = None
    _errors: deque[str] = field(default_factory=lambda: deque(maxlen=ERRORS_KEPT))
    _tracker: Tracker = field(default_factory=Tracker)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _closed: bool = False
    _running_job: bool = True
    _json: bool = True
    _disabled: bool = False
    _cache: tuple[object, object, tuple[RankFigures, ...], NcclView] | None = None

    def attach(self, job: JobSnapshot, now: float) -> JobSnapshot:
        """The job with NCCL's view joined in (the latest answer; never waits for one)."""
        self._running_job = job.status == "running"
        if self._target is None and not self._disabled:
            self._find_target(job)
        if self._target is None:
            return job
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name="hwtop-nccl-ras", daemon=True)
            self._thread.start()
        with self._lock:
            view = self._view
        if view is None:
            return msgspec.structs.replace(job, nccl=NcclView(str(self._target), self._source,
                                                              errors=tuple(self._errors)))
        cached = self._cache
        if cached is not None and cached[0] is view and cached[1] is job.ranks:
            ranks, view = cached[2], cached[3]
        else:
            local = {p.pid for p in job.processes if p.alive}
            ranks = join_ranks(job.ranks, view, local)
            shown = named(view, local, job.ranks[0].host if job.ranks else "")  # this node by its hostname
            self._cache = (view, job.ranks, ranks, shown)
            view = shown
        return msgspec.structs.replace(job, nccl=view, ranks=ranks)

    def _find_target(self, job: JobSnapshot) -> None:
        if self.address is not None:
            self._target, self._source = self.address, "--nccl-ras"
            self._nccl_seen_at = time.monotonic() - self.interval_s  # the user asked: ask at once
            return
        mono = time.monotonic()
        budget = MAPS_PER_TICK
        for process in job.processes:
            if not process.alive or process.pid in self._nccl_pids:
                continue
            if mono - self._checked.get(process.pid, -1e9) < MAPS_RECHECK_S or budget <= 0:
                continue
            budget -= 1
            self._checked[process.pid] = mono
            if maps_libnccl(process.pid, self.proc):
                self._nccl_pids.add(process.pid)
        mapping = [p for p in job.processes if p.pid in self._nccl_pids and p.alive]
        if not mapping:
            return
        if all(dict(p.nccl_env).get("NCCL_RAS_ENABLE") == "0" for p in mapping):
            self._disabled = True  # the job turned RAS off: nothing listens (env.rst, NCCL_RAS_ENABLE)
            return
        with_addr = next((p for p in sorted(mapping, key=lambda p: p.rank is None) if dict(p.nccl_env).get(
            "NCCL_RAS_ADDR")), None)
        if with_addr is not None:
            text = dict(with_addr.nccl_env)["NCCL_RAS_ADDR"]
            try:
                self._target, self._source = parse_address(text), f"NCCL_RAS_ADDR of pid {with_addr.pid}"
            except ValueError as error:
                self._note(f"NCCL_RAS_ADDR of pid {with_addr.pid}: {error}")
                return
        else:
            self._target, self._source = DEFAULT_ADDRESS, f"NCCL's default (pid {mapping[0].pid} maps libnccl)"
        self._nccl_seen_at = mono

    def _note(self, message: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {message}"
        with self._lock:
            if not self._errors or self._errors[-1][9:] != message:
                self._errors.append(line)

    def _run(self) -> None:
        due = (self._nccl_seen_at or time.monotonic()) + interval_seconds(self.interval_s)
        while not self._closed:
            left = due - time.monotonic()
            if left > 0:
                self._wake.wait(left)
                continue
            interval = interval_seconds(self.interval_s)
            due = time.monotonic() + interval
            if not self._running_job or self._target is None:
                continue
            holding = self._ask_once(self._target)
            if holding:
                due = time.monotonic() + max(interval, INIT_HOLD_S)

    def _ask_once(self, target: Address) -> bool:
        """One query folded into the view; True when a communicator was initialising."""
        try:
            raw = self.ask(target, self._json)
            if raw.format == "text" and self._json:
                self._json = False  # NCCL before 2.28.7: ask for text from now on
            reply = parse_reply(raw)
        except RasError as error:
            self._note(str(error))
            with self._lock:
                if self._view is not None:
                    self._view = msgspec.structs.replace(self._view, errors=tuple(self._errors))
            return False
        at = time.time()
        comms = self._tracker.update(reply, at)
        initialising = any(r.init_state == IN_PROGRESS for c in reply.comms for r in c.ranks if not r.missing)
        holding = (f"a communicator initialises (init_state {IN_PROGRESS}): not asked again for "
                   f"{INIT_HOLD_S:.0f} s") if initialising else None
        with self._lock:
            queries = (self._view.queries if self._view is not None else 0) + 1
            self._view = NcclView(str(target), self._source, comms, queries, at, reply.format, reply.nccl_version,
                                  reply.processes, tuple(self._errors), holding, reply.size_bytes)
        return initialising

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
