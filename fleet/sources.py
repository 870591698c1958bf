"""Where the fleet view's rows come from: exporters polled directly, or a Prometheus server. Both are driven the
same way by the UI's timer: `poll()` folds in the answers that have arrived and starts the requests that are due,
and returns at once; `hosts()` is the current state. Requests run on a DaemonPool, each with a deadline; the UI
never waits on one, so a dead or slow endpoint shows as such and `q` quits at once."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.http import DaemonPool, FetchError, get
from hwtop.fleet.job import DEFAULT_WINDOW_S, JobView, assemble_job, job_queries, jobs_queries
from hwtop.fleet.jobs import JobList, assemble_jobs
from hwtop.fleet.model import HostView
from hwtop.fleet.prometheus import MAX_BYTES, assemble, parse_answers, parse_vector, queries
from hwtop.fleet.scrape import fetch

Vector = list[tuple[dict[str, str], float]]  # parse_vector's answer: (labels, value) a series

TREND_POINTS = 30
# Seconds between two asks of the job list: it costs as many series as every job's ranks together (parsing and
# judging 20 jobs of 256 ranks took 0.6 s of the UI's thread here), so it is asked once on opening, then this often.
LIST_EVERY_S = 5.0
WAITING = "waiting for the first answer"


class FleetSource(Protocol):
    description: str  # what is read, for the title bar
    interval: float
    warnings: list[str]  # merged duplicates and the like, each said once
    job: str | None  # the job whose ranks are read (--job, or the one opened from the list), if any
    reads_jobs: bool  # it can list the jobs it holds (Prometheus)

    def poll(self) -> bool:
        """Folds in finished requests and starts due ones, without blocking; True when something changed."""
        ...

    def hosts(self) -> list[HostView]: ...

    def problem(self) -> str | None:
        """What is wrong with the source itself (Prometheus not answering), or None."""
        ...

    def close(self) -> None: ...

    def job_view(self) -> JobView | None:
        """The job of --job across hosts, as of the last round; None when no job was asked for."""
        ...

    def select_job(self, job: str | None) -> None:
        """Read this job's ranks from the next round on (None: no job's)."""
        ...

    def list_jobs(self, wanted: bool) -> None:
        """Ask the jobs it holds in each round from the next on, or stop asking."""
        ...

    def jobs(self) -> JobList | None:
        """The jobs it holds, as of the last round that asked; None before that."""
        ...


@dataclass(slots=True)
class _Target:
    url: str
    view: HostView
    future: Future[HostView] | None = None
    started: float = 0.0
    due: float = 0.0
    late: bool = False  # the view already says the request is overdue
    trend: deque[float] = field(default_factory=lambda: deque(maxlen=TREND_POINTS))


class DirectSource:
    """Each exporter scraped every `interval`, at most one request in flight per exporter."""

    def __init__(self, urls: list[str], interval: float = 2.0, timeout: float = 3.0,
                 warnings: list[str] | None = None, fetcher: Callable[[str, float], HostView] = fetch,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval, self.timeout = interval, timeout
        self.job: str | None = None  # a job's ranks are read through Prometheus only
        self.reads_jobs = False
        self.description = f"{len(urls)} exporter{'s' if len(urls) != 1 else ''}"
        self.warnings = list(warnings or ())
        self._fetch, self._clock = fetcher, clock
        self._targets = [_Target(url, HostView(url, error=WAITING)) for url in urls]
        self._pool = DaemonPool(min(32, max(1, len(urls))))
        self._said: set[str] = set()

    def poll(self) -> bool:
        now, changed = self._clock(), False
        for target in self._targets:
            if target.future is not None and target.future.done():
                try:
                    view = target.future.result()
                except Exception as error:  # noqa: BLE001 - a bug in one fetch marks that host, nothing else
                    view = HostView(target.url, error=f"{type(error).__name__}: {error}"[:200])
                self._fold(target, view)
                target.future, target.due = None, target.started + self.interval
                changed = True
            elif target.future is not None and not target.late and now - target.started > self.timeout + 0.5:
                # The request outlives its deadline (a name lookup that hangs): say so; it ends on its own.
                target.view = HostView(target.url, target.view.hostname, error=f"no answer within {self.timeout:g} s")
                target.late = changed = True
            if target.future is None and now >= target.due:
                url, timeout = target.url, self.timeout
                target.future = self._pool.submit(lambda u=url, t=timeout: self._fetch(u, t))
                target.started, target.late = now, False
        return changed

    def _fold(self, target: _Target, view: HostView) -> None:
        if view.up:
            if view.util_mean is not None:
                target.trend.append(view.util_mean)
            view = msgspec.structs.replace(view, trend=tuple(target.trend))
        else:
            view = msgspec.structs.replace(view, hostname=view.hostname or target.view.hostname)
        target.view = view

    def hosts(self) -> list[HostView]:
        views, warnings = merge_same_host([t.view for t in self._targets])
        for warning in warnings:
            if warning not in self._said:
                self._said.add(warning)
                self.warnings.append(warning)
        return views

    def problem(self) -> str | None:
        return None

    def job_view(self) -> JobView | None:
        return None

    def select_job(self, job: str | None) -> None:
        return None

    def list_jobs(self, wanted: bool) -> None:
        return None

    def jobs(self) -> JobList | None:
        return None

    def close(self) -> None:
        self._pool.close()


def merge_same_host(views: list[HostView]) -> tuple[list[HostView], list[str]]:
    """Two exporters that report the same GPUs (by UUID) are one host seen twice: one row, counted once. The
    rows given are left as they are: the merged row is a new one."""
    out: list[HostView] = []
    by_uuid: dict[str, int] = {}  # → its row's place in `out`
    warnings = []
    for view in views:
        uuids = {g.uuid for g in view.gpus if g.uuid}
        place = next((by_uuid[u] for u in uuids if u in by_uuid), None) if view.up else None
        if place is None:
            for uuid in uuids:
                by_uuid[uuid] = len(out)
            out.append(view)
            continue
        twin = out[place]
        warnings.append(f"{view.address} and {twin.address} report the same GPUs ({twin.name}): shown once")
        out[place] = msgspec.structs.replace(
            twin, notes=(*twin.notes, f"also read from {view.address}"), hwtop=twin.hwtop or view.hwtop,
            findings=twin.findings or view.findings,
            cpu_busy=view.cpu_busy if twin.cpu_busy is None else twin.cpu_busy, ports=twin.ports or view.ports)
    return out, warnings


class PrometheusSource:
    """One round of queries every `interval`; the rows are replaced when the round's table query answers,
    and kept (marked stale in `problem`) when it does not."""

    def __init__(self, base_url: str, matchers: str = "", interval: float = 2.0, timeout: float = 3.0,
                 window_s: float = 600.0, getter: Callable[[str, float, int], bytes] | None = None,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 job: str | None = None, job_window_s: float = DEFAULT_WINDOW_S,
                 thresholds: Thresholds | None = None) -> None:
        self.base, self.matchers = base_url, matchers
        self.job: str | None = job
        self.reads_jobs = True
        self._list_jobs = False
        self._jobs: JobList | None = None
        self._round_job: str | None = None  # the job and the list asked for by the round in flight
        self._round_lists = False
        self._listed_at: float | None = None  # when the last round that asked the list began
        self.job_window_s = job_window_s
        self.thresholds = thresholds or Thresholds()
        self._job_view: JobView | None = None
        self.interval, self.timeout, self.window_s = interval, timeout, window_s
        self.description = f"Prometheus {base_url}" + (f" {{{matchers}}}" if matchers else "")
        self.warnings: list[str] = []
        self._get = getter or (lambda url, timeout, limit: get(url, timeout, limit, "application/json"))
        self._clock, self._wall = clock, wall
        self._pool = DaemonPool(6, "hwtop-prometheus")
        self._round: dict[str, Future[bytes]] = {}
        self._started = 0.0
        self._due = 0.0
        self._views: list[HostView] = []
        self._instances: dict[str, str] = {}
        self._problem: str | None = WAITING
        self._answered_at: float | None = None
        self._want_targets = False
        self._said: set[str] = set()

    def poll(self) -> bool:
        now = self._clock()
        if self._round:
            finished = all(f.done() for f in self._round.values())
            if not finished and now - self._started <= self.timeout + 0.5:
                return False
            self._finish()
            self._due = self._started + self.interval
            return True
        if now >= self._due:
            self._started = now
            asked = queries(self.matchers, self._wall(), self.window_s, TREND_POINTS, self._want_targets)
            self._round_job = self.job
            self._round_lists = self._list_jobs and (self._listed_at is None or now - self._listed_at >= LIST_EVERY_S)
            if self._round_lists:
                self._listed_at = now
            if self.job is not None:
                asked += job_queries(self.job, self.matchers, self.job_window_s)
            if self._round_lists:
                asked += jobs_queries(self.matchers, self.job_window_s)
            for query in asked:
                url = query.url(self.base)
                self._round[query.key] = self._pool.submit(
                    lambda u=url: self._get(u, self.timeout, MAX_BYTES))
        return False

    def _finish(self) -> None:
        bodies: dict[str, bytes] = {}
        errors: dict[str, str] = {}
        for key, future in self._round.items():
            if not future.done():
                errors[key] = f"no answer within {self.timeout:g} s"
                continue
            try:
                bodies[key] = future.result()
            except FetchError as error:
                errors[key] = str(error)
            except Exception as error:  # noqa: BLE001 - one bad answer is a message, never a crash
                errors[key] = f"{type(error).__name__}: {error}"[:200]
        self._round = {}
        job_bodies = {key: bodies.pop(key) for key in list(bodies) if key.startswith("job_")}
        list_bodies = {key: bodies.pop(key) for key in list(bodies) if key.startswith("jobs_")}
        answers, parse_errors = parse_answers(bodies)
        errors.update(parse_errors)
        if "table" in errors:
            age = "" if self._answered_at is None else \
                f"; showing what it said {self._clock() - self._answered_at:.0f} s ago"
            self._problem = f"{errors['table']}{age}"
            return
        self._views, warnings = assemble(answers, self._instances)
        self._answered_at = self._clock()
        if self._round_job is not None and self._round_job == self.job:
            self._job_view = self._judge(self._round_job, job_bodies, errors)
        if self._round_lists:
            self._jobs = self._list(list_bodies, errors)
        self._want_targets = any(v == 0 for _, v in answers.up or ())
        partial = sorted(k for k in errors if k != "targets")
        self._problem = f"partial answer ({', '.join(f'{k}: {errors[k]}' for k in partial)})" if partial else None
        for warning in warnings:
            if warning not in self._said:
                self._said.add(warning)
                self.warnings.append(warning)

    def _list(self, bodies: dict[str, bytes], errors: dict[str, str]) -> JobList:
        """Every job from this round's list answers; one that failed is the list's message."""
        vectors = _vectors(("jobs_now", "jobs_increase", "jobs_steps"), bodies, errors)
        failed = [key for key, vector in vectors.items() if vector is None]
        if failed:
            return JobList(message=f"Prometheus: {failed[0]}: {errors.get(failed[0], 'no answer')}")
        return assemble_jobs(self.base, vectors["jobs_now"] or [], vectors["jobs_increase"] or [],
                             vectors["jobs_steps"] or [], self._views, self.thresholds)

    def _judge(self, job: str, bodies: dict[str, bytes], errors: dict[str, str]) -> JobView:
        """The job's view from this round's answers; one that failed is the view's message."""
        names = None
        if "job_names" in bodies:
            try:
                names = parse_vector(bodies["job_names"])
            except FetchError:
                names = None  # only a hint: the view goes on without it
        vectors = _vectors(("job_now", "job_increase", "job_steps"), bodies, errors)
        failed = [key for key, vector in vectors.items() if vector is None]
        if failed:
            return JobView(job, [], {}, None, f"Prometheus: {failed[0]}: {errors.get(failed[0], 'no answer')}")
        return assemble_job(job, self.base, vectors["job_now"] or [], vectors["job_increase"] or [],
                            vectors["job_steps"] or [], self._views, self.thresholds, names)

    def hosts(self) -> list[HostView]:
        return list(self._views)

    def problem(self) -> str | None:
        return self._problem

    def job_view(self) -> JobView | None:
        return self._job_view

    def select_job(self, job: str | None) -> None:
        if job != self.job:
            self.job, self._job_view = job, None
            self._due = min(self._due, self._clock())  # the next round at once, not an interval later

    def list_jobs(self, wanted: bool) -> None:
        if wanted and not self._list_jobs:  # opened: asked at once
            self._due, self._listed_at = min(self._due, self._clock()), None
        self._list_jobs = wanted

    def jobs(self) -> JobList | None:
        return self._jobs

    def close(self) -> None:
        self._pool.close()


def _vectors(keys: tuple[str, ...], bodies: dict[str, bytes], errors: dict[str, str]) -> dict[str, Vector | None]:
    """Each query's parsed answer, None where it gave none or an unreadable one (its reason added to `errors`)."""
    vectors: dict[str, Vector | None] = {}
    for key in keys:
        try:
            vectors[key] = parse_vector(bodies[key]) if key in bodies else None
        except FetchError as error:
            errors[key] = str(error)
            vectors[key] = None
    return vectors
