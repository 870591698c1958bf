"""The fleet through Prometheus' HTTP API: which queries are asked, and how their JSON answers become host rows.

Instant queries, asked at once: hwtop's own series (findings, CPU), each dcgm-exporter GPU field on its own with
only the labels a row reads (Prometheus writes each answer on its own thread, and its time goes mostly to writing
labels); the targets that are down (`up == 0`, not every target); node-exporter's CPU and the nodename of
`node_uname_info` for hosts that run a plain dcgm-exporter. A range query gives each host's utilisation sparkline,
asked only for the points not read yet (a new point every window/points seconds, not every round). A host is its
`Hostname` label (dcgm-exporter's and hwtop's), else the host part of `instance`. Answers are read by
fleet/promjson.py."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from hwtop.fleet.build import GPU_FIELDS, PORT_METRICS, HostBuild, gpu_key, host_of
from hwtop.fleet.http import FetchError
from hwtop.fleet.model import FindingRow, HostView
from hwtop.fleet.promjson import parse_matrix, parse_targets, parse_vector

MAX_BYTES = 64 << 20
HWTOP_METRICS = ("hwtop_finding", "hwtop_cpu_busy_percent", "hwtop_info")
GPU_QUERY = "gpu:"  # the key of each GPU field's query: gpu:DCGM_FI_DEV_GPU_UTIL


@dataclass(frozen=True, slots=True)
class Query:
    key: str  # table | up | node_cpu | uname | trend | ports | targets
    path: str  # under the server's base URL
    params: tuple[tuple[str, str], ...] = ()

    def url(self, base: str) -> str:
        return f"{base}{self.path}" + (f"?{urlencode(self.params)}" if self.params else "")

    @property
    def promql(self) -> str:
        return dict(self.params).get("query", "")


def _select(name: str, matchers: str, *extra: str) -> str:
    inner = ", ".join(m for m in (*extra, matchers) if m)
    return f"{name}{{{inner}}}" if inner else name


# The labels a GPU row reads (fleet/build.py): each GPU field's series come back with these alone, not with the
# pci_bus_id, device, driver version, container... every dcgm-exporter series carries. Prometheus's time on a
# query of 8,000 GPUs is mostly writing the answer's labels: its bytes are its cost. Utilisation brings what is said
# once per GPU (its model, who runs on it, the targets it came from); the other fields only which GPU it is.
GPU_LABELS = ("Hostname", "hostname", "instance", "UUID", "gpu")
ROW_FIELD = "DCGM_FI_DEV_GPU_UTIL"
ROW_LABELS = (*GPU_LABELS, "job", "modelName", "hpc_job", "pod", "namespace")


def trend_step(window_s: float, points: int) -> float:
    return max(1.0, window_s / points)


def queries(matchers: str, end: float, window_s: float = 600.0, points: int = 30,
            with_targets: bool = False, trend_from: float | None = None, trend: bool = True) -> list[Query]:
    """`matchers` is the inside of the user's selector (`job="train"`), added to every series selected. The trend's
    range ends at the last whole step before `end` and starts at `trend_from` (the points not yet read) or a window
    back; `trend` False leaves it out (no new point since the last round)."""
    step = trend_step(window_s, points)
    last = math.floor(end / step) * step
    first = last - window_s if trend_from is None else max(trend_from, last - window_s)
    out = [
        Query("table", "/api/v1/query",
              (("query", _select("", matchers, f'__name__=~"{"|".join(HWTOP_METRICS)}"')),)),
        *(Query(f"{GPU_QUERY}{name}", "/api/v1/query",
                (("query", f"max by ({', '.join(ROW_LABELS if name == ROW_FIELD else GPU_LABELS)}) "
                           f"({_select(name, matchers)})"),)) for name in GPU_FIELDS),
        Query("up", "/api/v1/query", (("query", _select("up", matchers) + " == 0"),)),
        Query("node_cpu", "/api/v1/query", (("query", "100 * (1 - avg by (instance, job) (rate("
                                             + _select("node_cpu_seconds_total", matchers, 'mode="idle"')
                                             + "[2m])))"),)),
        Query("uname", "/api/v1/query", (("query", "max by (instance, nodename) ("
                                           + _select("node_uname_info", matchers) + ")"),)),
        Query("ports", "/api/v1/query", (("query", _select("", matchers, f'__name__=~"{"|".join(PORT_METRICS)}"')),)),
    ]
    if trend:
        out.insert(4, Query("trend", "/api/v1/query_range",
                            (("query", "avg by (Hostname, hostname, instance, job) ("
                              + _select("DCGM_FI_DEV_GPU_UTIL", matchers) + ")"),
                             ("start", f"{first:.3f}"), ("end", f"{last:.3f}"), ("step", f"{step:g}"))))
    if with_targets:
        out.append(Query("targets", "/api/v1/targets", (("state", "active"),)))
    return out


def instance_host(instance: str) -> str:
    """`node7:9400` → `node7`, `[::1]:9400` → `::1`."""
    if not instance:
        return ""
    return urlsplit(f"//{instance}").hostname or instance


def _short(name: str) -> str:
    return name.split(".")[0].lower()


@dataclass(slots=True)
class Answers:
    """What one round of queries returned (None: that query failed, and `errors` says why)."""

    up: list[tuple[dict[str, str], float]] | None = None
    node_cpu: list[tuple[dict[str, str], float]] | None = None
    uname: list[tuple[dict[str, str], float]] | None = None
    trend: list[tuple[dict[str, str], list[tuple[float, float]]]] | None = None
    ports: list[tuple[dict[str, str], float]] | None = None  # hwtop_network_port_*: each host's busiest port
    targets: dict[tuple[str, str], str] | None = None


def parse_answers(bodies: dict[str, bytes]) -> tuple[Answers, dict[str, str]]:
    """Raw bodies by query key → parsed answers (all but the table, which `assemble` reads series by series), and
    a one-line error for each that did not parse."""
    answers, errors = Answers(), {}
    parsers = {"up": parse_vector, "node_cpu": parse_vector, "uname": parse_vector, "trend": parse_matrix,
               "ports": parse_vector, "targets": parse_targets}
    for key, body in bodies.items():
        if key in parsers:
            try:
                setattr(answers, key, parsers[key](body))
            except FetchError as error:
                errors[key] = str(error)
    return answers, errors


def assemble(table_series: Iterable[tuple[dict[str, str], float]], answers: Answers,
             instances: dict[str, str], trends: dict[str, dict[float, float]] | None = None,
             since: float | None = None,
             gpu_series: Iterable[tuple[str, Iterable[tuple[dict[str, str], float]]]] = ()
             ) -> tuple[list[HostView], list[str]]:
    """Host rows from one round (the table query's series folded one at a time as they are read), and warnings.
    `instances` maps each `instance` seen carrying a Hostname to it; it is updated here and kept by the caller,
    so a target that goes down keeps its host's name. `trends` (host → point time → mean utilisation) is kept by
    the caller too: this round's trend answer adds its new points, and those older than `since` are dropped. A
    FetchError from the table's series ends the round. `gpu_series`: each GPU field's name and its query's series
    (grouped by GPU_LABELS, so without the name); the table's own series carry theirs."""
    table = _Table(instances)
    for labels, value in table_series:
        table.add(labels, value)
    for name, series in gpu_series:
        for labels, value in series:
            table.add(labels, value, name)
    views = table.views
    by_short = {_short(h): h for h in views}
    nodenames = {labels.get("instance", ""): labels.get("nodename", "") for labels, _ in answers.uname or ()}
    for labels, value in answers.node_cpu or ():
        instance = labels.get("instance", "")
        host = by_short.get(_short(nodenames.get(instance, "") or instance_host(instance)))
        if host is not None and views[host].cpu_busy is None and math.isfinite(value):
            views[host].cpu_busy = value
    _mark_down(answers, views, instances, by_short)
    for labels, value in answers.ports or ():
        view = views.get(host_of(labels) or instances.get(labels.get("instance", ""), "")
                         or instance_host(labels.get("instance", "")))
        if view is not None:
            view.add_port_sample(labels.get("__name__", ""), labels, value)
    warnings = table.finish()
    _trends(answers, views, instances, by_short, {} if trends is None else trends, since)
    return [view.freeze() for view in views.values()], warnings


class _Table:
    """The table query's series folded into one view per host; GPUs keyed by UUID, so a GPU scraped by two
    targets is one row, and each finding once however many targets carry it."""

    def __init__(self, instances: dict[str, str]) -> None:
        self.instances = instances
        self.views: dict[str, HostBuild] = {}
        self.sources: dict[str, set[str]] = defaultdict(set)  # host → the targets its series came from
        self.gpu_sources: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.findings: set[tuple[str, str, str]] = set()

    def add(self, labels: dict[str, str], value: float, name: str = "") -> None:
        instance = labels.get("instance", "")
        host = host_of(labels) or instance_host(instance)
        if not host:
            return
        if instance and host_of(labels):
            self.instances[instance] = host
        view = self.views.setdefault(host, HostBuild("", hostname=host))
        source = f"{labels.get('job', '')}/{instance}"
        name = name or labels.get("__name__", "")
        if name in GPU_FIELDS:
            key = gpu_key(labels)
            if key is not None and math.isfinite(value) and "job" in labels:  # the series that say where it came from
                self.gpu_sources[(host, key)].add(source)
                self.sources[host].add(source)
            view.add_gpu_sample(name, labels, value)
        elif name.startswith("hwtop_"):
            view.hwtop = True
            self.sources[host].add(source)
            if name == "hwtop_finding" and value == 1:
                finding = FindingRow(labels.get("severity", ""), labels.get("rule", ""), labels.get("scope", ""))
                if (host, finding.rule, finding.scope) not in self.findings:
                    self.findings.add((host, finding.rule, finding.scope))
                    view.findings.append(finding)
            elif name == "hwtop_cpu_busy_percent" and math.isfinite(value):
                view.cpu_busy = value

    def finish(self) -> list[str]:
        """Each view's address (the instances it was read from); a warning per host whose GPUs came twice."""
        warnings = []
        doubled_by_host: dict[str, set[str]] = defaultdict(set)
        for (host, _), found in self.gpu_sources.items():
            if len(found) > 1:
                doubled_by_host[host] |= found
        for host, view in self.views.items():
            targets = sorted(self.sources.get(host, ()))
            view.address = ", ".join(t.split("/", 1)[1] or t for t in targets) or view.address or host
            doubled = sorted(doubled_by_host.get(host, ()))
            if doubled:
                warnings.append(f"{host}: the same GPUs come from {len(doubled)} targets ({', '.join(doubled)}); "
                                "counted once")
        return warnings


def _mark_down(answers: Answers, views: dict[str, HostBuild], instances: dict[str, str],
               by_short: dict[str, str]) -> None:
    """Targets with up == 0: a row of their own when nothing of their host answers (its series went stale
    with the failed scrapes), else a note on the host's row."""
    reasons: dict[str, set[str]] = defaultdict(set)
    where: dict[str, list[str]] = defaultdict(list)
    for labels, value in answers.up or ():
        if value != 0:
            continue
        instance, job = labels.get("instance", ""), labels.get("job", "")
        host = instances.get(instance) or by_short.get(_short(instance_host(instance))) or instance_host(instance)
        error = (answers.targets or {}).get((job, instance))
        # Go chains causes with ": " ('Get "...": dial tcp ...: connect: connection refused'): the last one says it.
        reasons[host].add(f"down: {error.rsplit(': ', 1)[-1]}" if error else "down")
        where[host].append(f"{job}/{instance}")
    for host, why in reasons.items():
        targets, view = ", ".join(sorted(where[host])), views.get(host)
        if view is None or not view.gpus:
            view = views[host] = view or HostBuild(targets, hostname=host)
            view.error = "; ".join(sorted(why))
        else:
            view.notes.append(f"{targets} {'; '.join(sorted(why))}")


def _trends(answers: Answers, views: dict[str, HostBuild], instances: dict[str, str],
            by_short: dict[str, str], trends: dict[str, dict[float, float]], since: float | None) -> None:
    """Each point is asked once (the range starts after the last point read), so a host's mean at a point is
    made from one answer: the points kept from earlier rounds are not asked again."""
    per_host: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for labels, points in answers.trend or ():
        instance = labels.get("instance", "")
        host = host_of(labels) or instances.get(instance) or by_short.get(_short(instance_host(instance)))
        if host in views:
            for stamp, value in points:
                if math.isfinite(value):
                    per_host[host][stamp].append(value)
    for host, stamps in per_host.items():
        kept = trends.setdefault(host, {})
        kept.update((stamp, sum(v) / len(v)) for stamp, v in stamps.items())
    for host in list(trends):
        kept = trends[host]
        if since is not None:
            for stamp in [s for s in kept if s < since]:
                del kept[stamp]
        if not kept:
            del trends[host]
        elif host in views:
            views[host].trend = tuple(v for _, v in sorted(kept.items()))
