"""When and where to ask NCCL's RAS service about the focused job, and the answers joined with it. First, do no
harm (versions.py): the job's NCCL release is learned before any STATUS, from the libnccl its ranks map (its file
name, or the nvidia_nccl_cu* dist-info beside a wheel's library) or from `SET FORMAT json` answered OK (2.28.7+,
a handshake that gathers nothing); a release whose STATUS path can crash the job, whose only format is text, or
that the table does not know is asked only when the job stops (stopped.py: no progress for the still time), twice a
stop (the second answer CONFIRM_S after the first: a hang is counts unchanged across answers), again only after
progress resumes and it stops again, or when the user asks (`polls`), and never while a
rank is inside communicator initialisation; the job view says which.

Asked only once a process of the job maps libnccl, at the address its ranks' NCCL_RAS_ADDR names (else NCCL's
default, localhost:28028), or at --nccl-ras. Queries run on a thread of their own, one at a time, at most every
interval (default 10 s, never under 5 s, NCCL issue #1718), held for INIT_HOLD_S after an answer shows a
communicator initialising; each bounded by a deadline scaled by the ranks' NCCL_RAS_TIMEOUT_FACTOR and by a cap
sized by ranks x communicators. From 2.29 a MONITOR connection brings PEER_DEAD and PEER_NEW as they happen, at no
gathering cost. The tick never waits for a query: it takes the latest view."""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec.structs

from hwtop.model.job import JobProcess, JobSnapshot
from hwtop.model.ras import NcclView, RasEvent, RasReply
from hwtop.probes.nccl_ras import client, versions
from hwtop.probes.nccl_ras.client import DEFAULT_PORT, Address, RasError, RawReply, one_line, parse_address
from hwtop.probes.nccl_ras.join import AnswerSide, Here, answer_side, foreign, named
from hwtop.probes.nccl_ras.manners import DEFAULT_INTERVAL_S, MIN_INTERVAL_S
from hwtop.probes.nccl_ras.stopped import StopSignals
from hwtop.probes.nccl_ras.track import Tracker

STOP_ANSWERS = 2  # STATUS a careful release is sent each time its job stops: the first, and one to compare it with
CONFIRM_S = 30.0  # ...sent this long after the first (ras_hang_s's default: counts unchanged over 30 s are a hang)
INIT_HOLD_S = 30.0  # after an answer with a communicator initialising: NCCL issues #1669, #2346
MAPS_RECHECK_S = 30.0  # a process not mapping libnccl is looked at again this often (torch loads it lazily)
MAPS_PER_TICK = 4  # /proc/PID/maps of a torch process is thousands of lines: a few a tick
ADDRESSES_EVERY_S = 60.0
ERRORS_KEPT = 8
EVENTS_KEPT = 32
MONITOR_TRIES = 3
LIBNCCL = b"libnccl"
DEFAULT_ADDRESS = Address("localhost", DEFAULT_PORT)


def interval_seconds(value: float) -> float:
    return max(MIN_INTERVAL_S, value)


def libnccl_path(pid: int, proc: str = "/proc") -> str | None:
    """The path of the libnccl the process maps (libnccl*.so*), or None (none, or unreadable)."""
    try:
        with open(f"{proc}/{pid}/maps", "rb") as maps:
            for line in maps:
                if LIBNCCL in line:
                    return line.split(maxsplit=5)[-1].decode("utf-8", "replace").strip()
    except (OSError, IndexError):
        return None
    return None


def maps_libnccl(pid: int, proc: str = "/proc") -> bool:
    """Whether the process has NCCL loaded (its maps name libnccl*.so*); False when unreadable."""
    return libnccl_path(pid, proc) is not None


def namespace_pid(pid: int, proc: str = "/proc") -> int:
    """The pid the process has in its own (innermost) pid namespace: NSpid's last figure (Linux 4.1+), which is
    what a rank in a container reports to RAS as its pid; its pid here where NSpid is absent or unreadable."""
    try:
        with open(f"{proc}/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return pid


def node_addresses() -> frozenset[str]:
    """This node's addresses as inet_ntop prints them (how RAS names a rank's host)."""
    import psutil

    out = set()
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                out.add(entry.address.split("%")[0])
    return frozenset(out)


def parse_reply(raw: RawReply) -> RasReply:
    from hwtop.probes.nccl_ras.parse_json import parse_json
    from hwtop.probes.nccl_ras.parse_text import parse_text

    return parse_json(raw.text) if raw.format == "json" else parse_text(raw.text)


Query = Callable[[Address, bool, float, int], RawReply]


def _query(address: Address, want_json: bool, factor: float, cap: int) -> RawReply:
    return client.query(address, want_json, factor, cap)


def _env(processes: list[JobProcess], name: str) -> str | None:
    return next((v for p in processes for k, v in p.nccl_env if k == name), None)


def _factor(processes: list[JobProcess]) -> float:
    try:
        return max(1.0, float(_env(processes, "NCCL_RAS_TIMEOUT_FACTOR") or 1))
    except ValueError:
        return 1.0


@dataclass(slots=True)
class RasWatch:
    """One per focused job. `address`: the user's --nccl-ras, which skips the libnccl check; `polls`: the user asks
    for STATUS every interval whatever the release (--nccl-ras-poll, through session/sampler.py)."""

    address: Address | None = None
    interval_s: float = DEFAULT_INTERVAL_S
    proc: str = "/proc"
    ask: Query = _query
    polls: bool = False
    addresses: Callable[[], frozenset[str]] = node_addresses
    answers_json: Callable[[Address], bool] = client.answers_json
    monitor: Callable[[Address], tuple[socket.socket, bytes]] = client.monitor
    _target: Address | None = None
    _source: str = ""
    _nccl_seen_at: float | None = None  # monotonic
    _checked: dict[int, float] = field(default_factory=dict)  # live pid -> when its maps were last read
    _nccl_pids: dict[int, str] = field(default_factory=dict)  # live pid -> the libnccl it maps
    _version: versions.Version | None = None
    _version_source: str | None = None
    _json: bool | None = None  # SET FORMAT json answered OK
    _factor: float = 1.0
    _ranks: int = 1
    _comms: int = 8
    _here: Here = field(default_factory=lambda: Here(frozenset()))
    _here_at: float = -1e9
    _ns: dict[int, int] = field(default_factory=dict)  # host pid -> namespace pid
    _signals: StopSignals = field(default_factory=StopSignals)
    _stopped: str | None = None  # why the job looks stopped (the tick's), None while it makes progress
    _stops: int = 0  # stop episodes begun: one more each time progress gives way to a stop (the tick's)
    _stop_asked: int = 0  # the episode a STATUS went out in (the query thread's)
    _stop_answers: int = 0  # STATUS sent in that episode: at most STOP_ANSWERS
    _stop_asked_at: float = 0.0  # the job's clock (the tick's `now`) at the episode's first STATUS
    _now: float = 0.0  # the job's clock at the latest tick
    _asked: str | None = None  # when and why, while that episode lasts
    _initialising: str | None = None
    _steps: int | None = None
    _steps_asked: int | None = None
    _view: NcclView | None = None
    _errors: deque[str] = field(default_factory=lambda: deque(maxlen=ERRORS_KEPT))
    _events: deque[RasEvent] = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))
    _tracker: Tracker = field(default_factory=Tracker)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _watcher: threading.Thread | None = None
    _watch_sock: socket.socket | None = None
    _closed: bool = False
    _running_job: bool = True
    _disabled: bool = False
    _answer: tuple[NcclView, Here, str, AnswerSide | None, NcclView] | None = None  # the answer's side, made once

    # ---- the tick's side: never waits ----
    def attach(self, job: JobSnapshot, now: float, spinning: bool | None = None) -> JobSnapshot:
        """The job with NCCL's view joined in (the latest answer; never waits for one). `spinning`: whether the
        job's GPUs are busy at idle power, where the caller knows (a stop signal)."""
        self._running_job = job.status == "running"
        if self._target is None and not self._disabled:
            self._find_target(job)
        if self._target is None:
            return job
        self._read_job(job, now, spinning)
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name="hwtop-nccl-ras", daemon=True)
            self._thread.start()
        with self._lock:
            view = self._view
            if view is not None and len(self._events) and view.events[-1:] != (self._events[-1],):
                view = self._view = msgspec.structs.replace(view, events=tuple(self._events))  # MONITOR: at once
        if view is None or not view.queries:
            return msgspec.structs.replace(job, nccl=self._bare_view(view))
        if view.foreign:
            return msgspec.structs.replace(job, nccl=view)
        side, shown = self._answer_side(view, job.ranks[0].host if job.ranks else "")
        ranks = job.ranks if side is None else side.join(job.ranks)  # the tick's own figures, new each tick
        return msgspec.structs.replace(job, nccl=shown, ranks=ranks)

    def _answer_side(self, view: NcclView, hostname: str) -> tuple[AnswerSide | None, NcclView]:
        """The answer's half of the join (join.answer_side) and the view with this node's ranks by its hostname
        (join.named), made again only for a new answer, a change in this node's job processes or its name: both walk
        every rank of the answer."""
        here, cached = self._here, self._answer
        if cached is not None and cached[0] is view and cached[1] == here and cached[2] == hostname:
            return cached[3], cached[4]
        side, shown = answer_side(view, here), named(view, here.addresses, hostname)
        self._answer = (view, here, hostname, side, shown)
        return side, shown

    def _bare_view(self, view: NcclView | None) -> NcclView:
        """The view before any answer: where hwtop would ask, the release learned and the policy it gives."""
        said = self._policy()
        words = self._words(said)
        with self._lock:
            errors, events = tuple(self._errors), tuple(self._events)
        version = ".".join(map(str, self._version)) if self._version else None
        if view is not None:
            return msgspec.structs.replace(view, policy=words, errors=errors, events=events, polled=said.poll,
                                           nccl_version=view.nccl_version or version)
        return NcclView(str(self._target), self._source, nccl_version=version, errors=errors, policy=words,
                        version_source=self._version_source, events=events, polled=said.poll)

    def _read_job(self, job: JobSnapshot, now: float, spinning: bool | None) -> None:
        mapping = [p for p in job.processes if p.alive and p.pid in self._nccl_pids] or \
            [p for p in job.processes if p.alive]
        self._factor = _factor(mapping)
        self._ranks = max([p.world_size or 0 for p in job.processes] + [len(job.ranks), 1])
        stopped = self._signals.stopped(job, now, spinning)
        with self._lock:
            if stopped is not None and self._stopped is None:
                self._stops += 1
            self._stopped, self._now = stopped, now
        self._initialising = self._signals.initialising(job)
        steps = [r.steps for r in job.ranks if r.steps is not None and not r.nccl_only]
        self._steps = sum(steps) if steps else None
        self._read_here(job)

    def _read_here(self, job: JobSnapshot) -> None:
        """This node's addresses (every minute) and each job process's namespace pid (once)."""
        mono = time.monotonic()
        addresses = self._here.addresses
        if mono - self._here_at >= ADDRESSES_EVERY_S:
            self._here_at = mono
            try:
                addresses = self.addresses()
            except OSError:
                pass
        alive = self._prune(job)
        for pid in alive - self._ns.keys():
            self._ns[pid] = namespace_pid(pid, self.proc)
        self._here = Here(addresses, {ns: pid for pid, ns in self._ns.items()})

    def _prune(self, job: JobSnapshot) -> set[int]:
        """What is kept per pid, for the job's live processes only (DataLoader workers come and go each epoch, and
        map libnccl as their rank does); the live pids."""
        alive = {p.pid for p in job.processes if p.alive}
        self._checked = {pid: at for pid, at in self._checked.items() if pid in alive}
        self._nccl_pids = {pid: path for pid, path in self._nccl_pids.items() if pid in alive}
        self._ns = {pid: ns for pid, ns in self._ns.items() if pid in alive}
        return alive

    def _find_target(self, job: JobSnapshot) -> None:
        if self.address is not None:
            self._target, self._source = self.address, "--nccl-ras"
            self._nccl_seen_at = time.monotonic() - self.interval_s  # the user asked: ask at once
            self._learn_from_maps(job)
            return
        self._learn_from_maps(job)
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
        self._nccl_seen_at = time.monotonic()

    def _learn_from_maps(self, job: JobSnapshot) -> None:
        self._prune(job)
        mono = time.monotonic()
        budget = MAPS_PER_TICK
        for process in job.processes:
            if not process.alive or process.pid in self._nccl_pids:
                continue
            if mono - self._checked.get(process.pid, -1e9) < MAPS_RECHECK_S or budget <= 0:
                continue
            budget -= 1
            self._checked[process.pid] = mono
            path = libnccl_path(process.pid, self.proc)
            if path is not None:
                self._nccl_pids[process.pid] = path
                self._learn_version(process.pid, path)

    def _learn_version(self, pid: int, path: str) -> None:
        if self._version is not None:
            return
        found = versions.version_of_library(path, f"{self.proc}/{pid}/root")
        if found is not None:
            self._version, how = found
            self._version_source = f"{how} of pid {pid}"

    def _note(self, message: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {message}"
        with self._lock:
            if not self._errors or self._errors[-1][9:] != message:
                self._errors.append(line)

    def _unexpected(self, where: str, error: Exception) -> None:
        """An error no part of the watch foresaw (hwtop's bug, not NCCL's answer): one line in the job view; the
        thread it ended a round of goes on."""
        self._tell(f"{where}: unexpected {type(error).__name__} ({one_line(error)}); going on")

    def _tell(self, message: str) -> None:
        """A line in the job view's errors now, not at the next answer."""
        self._note(message)
        with self._lock:
            if self._view is not None:
                self._view = msgspec.structs.replace(self._view, errors=tuple(self._errors))

    def _policy(self) -> versions.Policy:
        return versions.policy(self._version, self._json, self.polls)

    # ---- the query thread ----
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
            try:
                if self._ask_once(self._target):
                    due = time.monotonic() + max(interval, INIT_HOLD_S)
            except Exception as error:  # noqa: BLE001 - the thread outlives a bug of one round: said, not fatal
                self._unexpected("RAS query", error)

    def _why_not(self, policy: versions.Policy) -> str | None:
        """Why no STATUS goes out now, or None to ask. A careful release is asked twice per stop: the episode is
        marked asked here, before the query, whatever comes of it."""
        if self._initialising is not None:
            return f"not asked: {self._initialising} (NCCL issues #1669, #2346)"
        if policy.poll:
            return None
        with self._lock:
            stopped, episode, now = self._stopped, self._stops, self._now
        if stopped is None:
            self._asked = None
            return ""  # the policy's words say it
        if episode != self._stop_asked:  # a new stop: its first answer
            self._stop_asked, self._stop_answers, self._stop_asked_at = episode, 1, now
            self._asked = f"asked at {time.strftime('%H:%M:%S')}: {stopped}"
            return None
        if self._stop_answers < STOP_ANSWERS and now - self._stop_asked_at >= CONFIRM_S:  # counts unchanged since?
            self._stop_answers += 1
            self._asked = (f"asked at {time.strftime('%H:%M:%S')} once more, {now - self._stop_asked_at:.0f} s after "
                           f"the first (a hang is counts unchanged across answers): {stopped}; not again until the "
                           "job moves")
            return None
        return ""  # asked in this stop already: the words say when

    def _words(self, policy: versions.Policy) -> str:
        return policy.words + (f"; {self._asked}" if self._asked and not policy.poll else "")

    def _learn_format(self, target: Address) -> bool:
        if self._json is not None or (versions.release(self._version) is not None):
            return True
        try:
            self._json = self.answers_json(target)
        except RasError as error:
            self._note(str(error))
            return False
        return True

    def _ask_once(self, target: Address) -> bool:
        """One round: learn the format, maybe one STATUS folded into the view; True to hold (initialising)."""
        if not self._learn_format(target):
            return False
        policy = self._policy()
        self._start_monitor(target, policy)
        why = self._why_not(policy)
        if why is not None:
            self._hold(why or None, policy)
            return False
        try:
            raw = self.ask(target, policy.json, self._factor, client.reply_cap(self._ranks, self._comms))
            reply = parse_reply(raw)
        except RasError as error:
            self._note(str(error))
            self._hold(None, policy)
            return False
        return self._fold(target, reply, policy)

    def _hold(self, holding: str | None, policy: versions.Policy) -> None:
        with self._lock:
            if self._view is not None:
                self._view = msgspec.structs.replace(self._view, errors=tuple(self._errors), holding=holding,
                                                     policy=self._words(policy), events=tuple(self._events),
                                                     polled=policy.poll)
            else:
                self._view = NcclView(str(self._target), self._source, errors=tuple(self._errors), holding=holding,
                                      policy=self._words(policy), version_source=self._version_source,
                                      events=tuple(self._events), polled=policy.poll)

    def _fold(self, target: Address, reply: RasReply, policy: versions.Policy) -> bool:
        at = time.time()
        if self._version is None and reply.nccl_version:
            self._version = versions.parse_version(reply.nccl_version)
            self._version_source = "its own answer"
            policy = self._policy()
        stepped = None if self._steps is None or self._steps_asked is None else self._steps != self._steps_asked
        self._steps_asked = self._steps
        comms = self._tracker.update(reply, at, stepped)
        self._comms = max(1, len(reply.comms))
        initialising = any(c.initialising() for c in reply.comms)
        holding = (f"a communicator initialises (init_state 7): not asked again for {INIT_HOLD_S:.0f} s"
                   if initialising else None)
        words = self._words(policy)
        with self._lock:
            queries = (self._view.queries if self._view is not None else 0) + 1
            view = NcclView(str(target), self._source, comms, queries, at, reply.format, reply.nccl_version,
                            reply.processes, tuple(self._errors), holding, reply.size_bytes, words,
                            self._version_source, self._tracker.main, None, tuple(self._events), reply.notes)
            self._view = msgspec.structs.replace(view, foreign=foreign(view, self._here), polled=policy.poll)
        return initialising

    # ---- MONITOR (2.29+) ----
    def _start_monitor(self, target: Address, policy: versions.Policy) -> None:
        if self._watcher is None and policy.monitor and not self._closed:
            self._watcher = threading.Thread(target=self._watch_events, args=(target,), name="hwtop-nccl-monitor",
                                             daemon=True)
            self._watcher.start()

    def _watch_events(self, target: Address) -> None:
        failures = 0
        while not self._closed and failures < MONITOR_TRIES:
            try:
                sock, data = self.monitor(target)
            except RasError as error:
                failures += 1
                self._note(f"MONITOR: {error}")
                self._wake.wait(interval_seconds(self.interval_s))
                continue
            except Exception as error:  # noqa: BLE001 - the thread outlives a bug of one try: said, not fatal
                failures += 1
                self._unexpected("MONITOR", error)
                self._wake.wait(interval_seconds(self.interval_s))
                continue
            self._watch_sock, failures = sock, 0
            with sock:
                self._read_events(sock, data)
            if not self._closed:
                self._note("MONITOR connection closed (the rank holding it ended?)")
                self._wake.wait(interval_seconds(self.interval_s))

    def _read_events(self, sock: socket.socket, data: bytes) -> None:
        """Events as they come, until the connection ends; what cannot be read is said and left behind."""
        from hwtop.probes.nccl_ras.parse_json import parse_events

        while not self._closed:
            try:
                events, data, lost = parse_events(data)
            except RasError as error:
                events, data, lost = [], b"", [str(error)]
            except Exception as error:  # noqa: BLE001 - a bug of one read: said, the bytes left, the stream read on
                events, data, lost = [], b"", []
                self._unexpected("MONITOR", error)
            for line in lost:
                self._tell(f"MONITOR: {line}")
            if events:
                with self._lock:
                    self._events.extend(events)
            try:
                chunk = sock.recv(1 << 16)
            except OSError:
                break
            if not chunk:
                break
            data = (data + chunk)[-(1 << 20):]

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        sock = self._watch_sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in (self._thread, self._watcher):
            if thread is not None:
                thread.join(timeout=1.0)
