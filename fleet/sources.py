"""Where a round of the fleet comes from: exporters read directly, or a Prometheus server. That is all that differs
between the two, so it is all a source does: `read(ask)` fetches one round, parses and assembles it, and returns
it whole. It blocks (each request has its own deadline) and runs on the fleet session's worker, never on the UI's
thread; the session (fleet/session.py) turns rounds into frames."""

from __future__ import annotations

import concurrent.futures
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.alerts import ALERTS, ALERTS_QUERY, AlertList, read_alerts
from hwtop.fleet.build import GPU_FIELDS
from hwtop.fleet.http import DaemonPool, FetchError, get
from hwtop.fleet.job import DEFAULT_WINDOW_S, JobView, assemble_job, job_queries, jobs_queries
from hwtop.fleet.jobs import JobList, assemble_jobs
from hwtop.fleet.model import HostView
from hwtop.fleet.prometheus import (
    GPU_QUERY,
    HOST_GPUS,
    MAX_BYTES,
    Query,
    assemble,
    parse_answers,
    queries,
    trend_step,
)
from hwtop.fleet.promjson import Vector, parse_vector, vector
from hwtop.fleet.scrape import fetch
from hwtop.model.record import Record

TREND_POINTS = 30
WAITING = "waiting for the first answer"
GRACE_S = 0.5  # past a request's own deadline, before the round stops waiting for it


class Ask(Record, frozen=True):
    """What the screen on show wants read besides the hosts: a job's ranks, the job list."""

    job: str | None = None
    jobs: bool = False
    host: str | None = None  # the host whose screen is open: its GPUs' temperature, power, tensor activity


class Round(Record, frozen=True):
    """One round as read. `hosts` None: the source itself gave no usable answer (`problem` says why) and the
    session keeps the last good hosts, marked stale. `problem` with hosts: a partial answer."""

    hosts: tuple[HostView, ...] | None
    problem: str | None = None
    warnings: tuple[str, ...] = ()
    job: JobView | None = None
    jobs: JobList | None = None
    alerts: AlertList | None = None  # Prometheus's alerts (fleet/alerts.py); None: not read from this source


class FleetSource(Protocol):
    description: str  # what is read, for the title bar
    interval: float  # seconds from the start of one round to the next
    job: str | None  # --job: the job whose ranks the screen opens on
    reads_jobs: bool  # it can list the jobs it holds and read their ranks (Prometheus)
    thresholds: Thresholds

    def read(self, ask: Ask) -> Round:
        """One round, fetched, parsed and assembled; blocks for at most about the source's timeout."""
        ...

    def close(self) -> None: ...


@dataclass(slots=True)
class _Target:
    url: str
    view: HostView
    future: Future[HostView] | None = None  # in flight, perhaps from an earlier round past its deadline
    started: float = 0.0  # when the request in flight was sent
    trend: deque[float] = field(default_factory=lambda: deque(maxlen=TREND_POINTS))


class DirectSource:
    """Each exporter scraped once a round, at most one request in flight per exporter: one that outlives its
    deadline (a name lookup that hangs) is a row saying so, and is not asked again until it ends."""

    def __init__(self, urls: list[str], interval: float = 2.0, timeout: float = 3.0,
                 warnings: list[str] | None = None, fetcher: Callable[[str, float], HostView] = fetch,
                 thresholds: Thresholds | None = None) -> None:
        self.interval, self.timeout = interval, timeout
        self.job: str | None = None  # a job's ranks are read through Prometheus only
        self.reads_jobs = False
        self.thresholds = thresholds or Thresholds()
        self.description = f"{len(urls)} exporter{'s' if len(urls) != 1 else ''}"
        self._warnings = tuple(warnings or ())
        self._fetch = fetcher
        self._targets = [_Target(url, HostView(url, error=WAITING)) for url in urls]
        self._pool = DaemonPool(min(32, max(1, len(urls))))

    def read(self, ask: Ask) -> Round:
        """Waits for the exporters at most one interval: a slow one keeps its last row (or "waiting") while its
        request runs on, and says it is late once past its deadline; the others are not held for it."""
        now = time.monotonic()
        for target in self._targets:
            if target.future is None:
                url, timeout = target.url, self.timeout
                target.future = self._pool.submit(lambda u=url, t=timeout: self._fetch(u, t))
                target.started = now
        pending = [t.future for t in self._targets if t.future is not None]
        concurrent.futures.wait(pending, timeout=min(self.timeout + GRACE_S, self.interval))
        now = time.monotonic()
        for target in self._targets:
            future = target.future
            if future is None:
                continue
            if not future.done():
                if now - target.started >= self.timeout + GRACE_S:
                    target.view = HostView(target.url, target.view.hostname,
                                           error=f"no answer within {self.timeout:g} s")
                continue
            try:
                view = future.result()
            except Exception as error:  # noqa: BLE001 - a bug in one fetch marks that host, nothing else
                view = HostView(target.url, error=f"{type(error).__name__}: {error}"[:200])
            target.future = None
            self._fold(target, view)
        views, warnings = merge_same_host([t.view for t in self._targets])
        return Round(tuple(views), None, (*self._warnings, *warnings))

    @staticmethod
    def _fold(target: _Target, view: HostView) -> None:
        if view.up:
            if view.util_mean is not None:
                target.trend.append(view.util_mean)
            view = msgspec.structs.replace(view, trend=tuple(target.trend))
        else:
            view = msgspec.structs.replace(view, hostname=view.hostname or target.view.hostname)
        target.view = view

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
    """One round of queries, asked at once and read as they answer; the table query's answer is folded series by
    series (fleet/promjson.py). A round whose table query fails has no hosts: the session keeps the last ones."""

    def __init__(self, base_url: str, matchers: str = "", interval: float = 2.0, timeout: float = 3.0,
                 window_s: float = 600.0, getter: Callable[[str, float, int], bytes] | None = None,
                 wall: Callable[[], float] = time.time, job: str | None = None,
                 job_window_s: float = DEFAULT_WINDOW_S, thresholds: Thresholds | None = None) -> None:
        self.base, self.matchers = base_url, matchers
        self.job: str | None = job
        self.reads_jobs = True
        self.job_window_s = job_window_s
        self.thresholds = thresholds or Thresholds()
        self.interval, self.timeout, self.window_s = interval, timeout, window_s
        self.description = f"Prometheus {base_url}" + (f" {{{matchers}}}" if matchers else "")
        self._get = getter or (lambda url, timeout, limit: get(url, timeout, limit, "application/json"))
        self._wall = wall
        self._pool = DaemonPool(6, "hwtop-prometheus")
        self._instances: dict[str, str] = {}  # worker-only: kept across rounds so a down target keeps its name
        self._want_targets = False
        self._trends: dict[str, dict[float, float]] = {}  # worker-only: each host's trend points read so far
        self._trend_end: float | None = None  # the last trend point read
        # The job list's queries (the slowest of a round, by far) run on their own cadence: a hosts round does not
        # wait for them, and joins the list they make once they have all answered (worker-only).
        self._listing: dict[Future[bytes], str] = {}
        self._listing_since = 0.0  # when they were sent (monotonic)
        self._listed: JobList | None = None  # the last list made

    def read(self, ask: Ask) -> Round:
        now = self._wall()
        last = self._trend_window(now)
        bodies, errors = self._answers({self._submit(query.url(self.base)): query.key
                                        for query in self._queries(ask, now, last)})
        table = next((key for key in errors if key == "table" or key.startswith(GPU_QUERY)), None)
        if table is not None:  # a host table without some of its columns is not shown as if it were whole
            return Round(None, errors[table])
        answers, parse_errors = parse_answers(bodies)
        errors.update(parse_errors)
        try:
            views, warnings = assemble(vector(bodies["table"]), answers, self._instances, self._trends,
                                       last - self.window_s, _gpu_vectors(bodies))
        except FetchError as error:
            return Round(None, str(error))
        if "trend" in bodies and "trend" not in errors:
            self._trend_end = last
        job = self._judge(ask.job, bodies, errors, views) if ask.job is not None else None
        jobs = self._join_list(views) if ask.jobs else None
        self._want_targets = any(v == 0 for _, v in answers.up or ())
        return Round(tuple(views), _partial(errors), tuple(warnings), job, jobs, read_alerts(bodies, errors))

    def _trend_window(self, now: float) -> float:
        """The trend's last point at `now`; when the clock went back, the window is read again."""
        step = trend_step(self.window_s, TREND_POINTS)
        last = math.floor(now / step) * step
        if self._trend_end is not None and last < self._trend_end:
            self._trend_end = None
            self._trends.clear()
        return last

    def _queries(self, ask: Ask, now: float, last: float) -> list[Query]:
        """This round's queries (the trend's only from its last point read); the job list's sent on their own."""
        step = trend_step(self.window_s, TREND_POINTS)
        fresh = self._trend_end is None or last > self._trend_end  # a point was added since the last round
        asked = queries(self.matchers, now, self.window_s, TREND_POINTS, self._want_targets,
                        None if self._trend_end is None else self._trend_end + step, fresh, ask.host)
        if ask.job is not None:
            asked += job_queries(ask.job, self.matchers, self.job_window_s)
        asked.append(ALERTS_QUERY)
        self._send_list(ask.jobs)
        return asked

    def _answers(self, futures: dict[Future[bytes], str]) -> tuple[dict[str, bytes], dict[str, str]]:
        """Each query's body, or what went wrong with it (one bad answer is a message, never a crash), by key;
        those that have not answered within the timeout say so."""
        bodies: dict[str, bytes] = {}
        errors: dict[str, str] = {}
        try:
            for future in concurrent.futures.as_completed(futures, timeout=self.timeout + GRACE_S):
                try:
                    bodies[futures[future]] = future.result()
                except FetchError as error:
                    errors[futures[future]] = str(error)
                except Exception as error:  # noqa: BLE001 - one bad answer is a message, never a crash
                    errors[futures[future]] = f"{type(error).__name__}: {error}"[:200]
        except TimeoutError:
            for key in futures.values():
                if key not in bodies and key not in errors:
                    errors[key] = f"no answer within {self.timeout:g} s"
        return bodies, errors

    def _send_list(self, wanted: bool) -> None:
        """The job list's queries, sent when none are in flight and one interval after the last were sent."""
        if not wanted:  # the list was closed: what is in flight is not read, the next list is made afresh
            self._listing, self._listed = {}, None
        elif not self._listing and time.monotonic() - self._listing_since >= self.interval:
            self._listing_since = time.monotonic()
            self._listing = {self._submit(query.url(self.base)): query.key
                             for query in jobs_queries(self.matchers, self.job_window_s)}

    def _join_list(self, views: list[HostView]) -> JobList | None:
        """The list, made with this round's hosts once its queries have all answered; until then the last one.
        The first list of all is waited for (within the timeout): it is what the screen just opened shows."""
        if not self._listing:
            return self._listed
        left = self.timeout + GRACE_S - (time.monotonic() - self._listing_since)
        done, _ = concurrent.futures.wait(self._listing, timeout=max(0.0, left) if self._listed is None else 0)
        if len(done) < len(self._listing) and left > 0:
            return self._listed
        bodies, errors = {}, {}
        for future, key in self._listing.items():
            if future not in done:
                errors[key] = f"no answer within {self.timeout:g} s"
                continue
            try:
                bodies[key] = future.result()
            except FetchError as error:
                errors[key] = str(error)
            except Exception as error:  # noqa: BLE001 - one bad answer is a message, never a crash
                errors[key] = f"{type(error).__name__}: {error}"[:200]
        self._listing = {}
        self._listed = self._list(bodies, errors, views)
        return self._listed

    def _submit(self, url: str) -> Future[bytes]:
        return self._pool.submit(lambda: self._get(url, self.timeout, MAX_BYTES))

    def _list(self, bodies: dict[str, bytes], errors: dict[str, str], views: list[HostView]) -> JobList:
        """Every job from this round's list answers, read series by series (the biggest answers of a round: no
        list of them all is made); one that failed is the list's message."""
        keys = ("jobs_now", "jobs_increase", "jobs_steps")
        missing = next((key for key in keys if key not in bodies), None)
        if missing is not None:
            return JobList(message=f"Prometheus: {missing}: {errors.get(missing, 'no answer')}")
        try:
            now, increase, steps = (_named(key, bodies.pop(key)) for key in keys)
            return assemble_jobs(self.base, now, increase, steps, views, self.thresholds)
        except FetchError as error:
            return JobList(message=f"Prometheus: {error}")

    def _judge(self, job: str, bodies: dict[str, bytes], errors: dict[str, str], views: list[HostView]) -> JobView:
        """The job's view from this round's answers; one that failed is the view's message."""
        names = None
        if "job_names" in bodies:
            try:
                names = parse_vector(bodies["job_names"])
            except FetchError:
                names = None  # only a hint: the view goes on without it
        vectors = _vectors(("job_now", "job_increase", "job_steps"), bodies, errors)
        failed = [key for key, found in vectors.items() if found is None]
        if failed:
            return JobView(job, (), {}, None, f"Prometheus: {failed[0]}: {errors.get(failed[0], 'no answer')}")
        return assemble_job(job, self.base, vectors["job_now"] or [], vectors["job_increase"] or [],
                            vectors["job_steps"] or [], views, self.thresholds, names)

    def close(self) -> None:
        self._pool.close()


def _partial(errors: dict[str, str]) -> str | None:
    """What did not answer (the targets' list aside: it is only asked to name the hosts that are down; the alert list
    says its own)."""
    partial = sorted(k for k in errors if k not in ("targets", ALERTS))
    return f"partial answer ({', '.join(f'{k}: {errors[k]}' for k in partial)})" if partial else None


def _gpu_vectors(bodies: dict[str, bytes]) -> list[tuple[str, Iterator[tuple[dict[str, str], float]]]]:
    """The GPU columns answered, by DCGM field name; then the hosts' GPUs (their series carry their names: "")."""
    gpus = [(name, vector(bodies[f"{GPU_QUERY}{name}"])) for name in GPU_FIELDS if f"{GPU_QUERY}{name}" in bodies]
    if HOST_GPUS in bodies:
        gpus.append(("", vector(bodies[HOST_GPUS])))
    return gpus


def _named(key: str, body: bytes) -> Iterator[tuple[dict[str, str], float]]:
    """The answer's series; an unreadable one says which query it answered."""
    try:
        yield from vector(body)
    except FetchError as error:
        raise FetchError(f"{key}: {error}") from None


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
