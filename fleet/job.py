"""One training job across hosts (`hwtop fleet --prometheus URL --job NAME`): its ranks' figures rebuilt from the
`hwtop_job_rank_*` series every host's `hwtop export --job` writes, judged by the same function as the one-node
rule (advice/ranks.py), and the named rank's host's own top finding offered as the likely cause.

Shares are the increase of each phase's seconds over the last `window_s`, over all its phases: what the rank's
main thread did in that window. The samples behind them are those seconds at the stack sampler's rate. Plain
data and parsing, no I/O."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from hwtop.advice.ranks import Look, RankVerdict, judge, missing_figure, worst_first
from hwtop.advice.rules.collective import collective_hang
from hwtop.advice.rules.health import gpu_errors, gpu_throttled
from hwtop.advice.rules.straggler import rank_straggler
from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.build import host_of
from hwtop.fleet.model import SEVERITY_ORDER, FindingRow, HostView
from hwtop.fleet.prometheus import Query, promql_string
from hwtop.model.job import RankFigures
from hwtop.model.record import Record
from hwtop.model.verdict import GpuFault, Verdicts
from hwtop.probes.stack_sampler import RATE_HZ

SECONDS = "hwtop_job_rank_seconds_total"
STEPS = "hwtop_job_rank_steps_total"
SEEN = "hwtop_job_rank_last_seen_timestamp_seconds"
INFO = "hwtop_job_rank_info"
# NCCL RAS (exporter/job_metrics.py nccl_families): every node's ranks as NCCL reports them
NCCL_COUNTS, NCCL_STATE, NCCL_LAG = "hwtop_nccl_rank_collectives_total", "hwtop_nccl_rank_state", "hwtop_nccl_rank_lag"
JOB_INFO = "hwtop_job_info"  # one per exporter watching a job: its job_name, Hostname, status
DEFAULT_WINDOW_S = 60.0
MAX_RANKS = 16384  # a Prometheus answer naming more is not one job's
# Findings that restate the symptom rather than a cause on the host: never offered as the likely cause.
SYMPTOMS = (rank_straggler.id, collective_hang.id)


def _select(name: str, job: str | None, matchers: str, *extra: str) -> str:
    """`job` None: every job's series (`job_name!=""`)."""
    which = 'job_name!=""' if job is None else f"job_name={promql_string(job)}"
    inner = ", ".join(m for m in (*extra, which, matchers) if m)
    return f"{name}{{{inner}}}"


def _rank_queries(prefix: str, job: str | None, matchers: str, window_s: float, *names: str) -> list[Query]:
    """`names`: the series asked as they are now (the rank seconds' window comes from `increase`)."""
    window = f"{max(1, round(window_s))}s"
    wanted = "|".join(names)
    return [
        Query(f"{prefix}now", "/api/v1/query", (("query", _select("", job, matchers, f'__name__=~"{wanted}"')),)),
        Query(f"{prefix}increase", "/api/v1/query",
              (("query", f"increase({_select(SECONDS, job, matchers)}[{window}])"),)),
        Query(f"{prefix}steps", "/api/v1/query", (("query", f"rate({_select(STEPS, job, matchers)}[{window}])"),)),
    ]


def jobs_queries(matchers: str, window_s: float) -> list[Query]:
    """Every job's rank series and the `hwtop_job_info` of every exporter watching one: the jobs Prometheus holds
    now. Instant queries, not /api/v1/label/job_name/values: that lists every name in the stored history (jobs
    that ended days ago) and says nothing of hosts, ranks or who waits for whom. Not each rank's seconds since it
    began (a series per phase: most of the answer), which only the open job's screen shows."""
    return _rank_queries("jobs_", None, matchers, window_s, STEPS, SEEN, INFO, JOB_INFO)


def job_queries(job: str, matchers: str, window_s: float) -> list[Query]:
    """`matchers` is the inside of the user's --selector, as for the host table."""
    return [
        *_rank_queries("job_", job, matchers, window_s, SECONDS, STEPS, SEEN, INFO, NCCL_COUNTS, NCCL_STATE, NCCL_LAG),
        Query("job_names", "/api/v1/query",
              (("query", "group by (job_name) (" + (f"hwtop_job_info{{{matchers}}}" if matchers else "hwtop_job_info")
                + ")"),)),
    ]


@dataclass(slots=True)
class _Rank:
    phase_seconds: dict[str, float] = field(default_factory=dict)
    window: dict[str, float] = field(default_factory=dict)
    steps: float | None = None
    steps_per_s: float | None = None
    seen_at: float | None = None
    pid: int | None = None
    site: str | None = None
    collectives: dict[str, int] = field(default_factory=dict)  # NCCL RAS
    nccl_state: str | None = None
    lag: int | None = None
    gpu: int | None = None
    stacks: bool = False  # its own host's hwtop exports its stack figures


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() and len(text) < 10 else None


class JobView(Record, frozen=True):
    """`message` says in one line why there is nothing to judge (no series at the URL, too few samples). A value:
    its dicts are built once and never changed."""

    job: str
    ranks: tuple[RankFigures, ...]
    steps_per_s: dict[tuple[str, int], float]
    verdict: RankVerdict | None
    message: str | None
    cause: FindingRow | None = None  # the named rank's host's top finding other than the symptom itself
    hosts: dict[str, HostView] = msgspec.field(default_factory=dict)
    verdicts: Verdicts = Verdicts()  # every rank's, as doctor and the job view judge it (advice/ranks.py judge)

    def to_dict(self, now: float) -> dict[str, object]:
        verdict = self.verdict
        named = verdict.rank if verdict is not None else None
        return {
            "job": self.job,
            "message": self.message,
            "verdict": None if verdict is None else {
                "kind": verdict.kind, "rule": collective_hang.id if verdict.kind == "hang" else rank_straggler.id,
                "rank": None if named is None else named.rank,
                "host": None if named is None else named.host, "named": verdict.named,
                "evidence": list(verdict.evidence),
                "likely_cause": None if self.cause is None else
                {"rule": self.cause.rule, "severity": self.cause.severity, "scope": self.cause.scope}},
            "ranks": [{"rank": r.rank, "host": r.host, "pid": r.pid, "site": r.site, "shares": dict(r.shares),
                       "collective_share": r.collective_share if r.samples else None,  # no samples: unknown
                       "phase_seconds": dict(r.phase_seconds), "samples": r.samples, "steps": r.steps,
                       "steps_per_s": self.steps_per_s.get((r.host, r.rank)),
                       "seen_s_ago": None if r.seen_at is None else round(now - r.seen_at, 1),
                       "nccl_state": r.nccl_state, "lag": r.lag, **_state(self.verdicts, r)} for r in self.ranks],
        }


def _state(verdicts: Verdicts, rank: RankFigures) -> dict[str, object]:
    v = verdicts.of(rank.rank, rank.host)
    return {} if v is None else {"state": v.state, "words": v.words, "blamed": v.blamed}


def _rank_of(labels: dict[str, str]) -> tuple[str, int] | None:
    host = host_of(labels) or ""
    text = labels.get("rank", "")
    return (host, int(text)) if text.isascii() and text.isdigit() and len(text) < 9 else None


class RankFold:
    """One job's ranks as its series are read, one series at a time (no list of the series is kept)."""

    def __init__(self) -> None:
        self.ranks: dict[tuple[str, int], _Rank] = {}
        self.advanced = False  # the increase answer held a series: the window spans two scrapes

    def add(self, labels: dict[str, str], value: float, what: str) -> None:
        """`what`: now (the series as they are), window (increase of the seconds), steps (rate of the steps)."""
        key = _rank_of(labels)
        if key is None or not math.isfinite(value):
            return
        rank = self.ranks.get(key)
        if rank is None:
            if len(self.ranks) >= MAX_RANKS:
                return
            rank = self.ranks[key] = _Rank()
        name = labels.get("__name__", "")
        if what == "window":
            self.advanced = True
            rank.window[labels.get("phase", "")] = max(0.0, value)
        elif what == "steps":
            rank.steps_per_s = value
        elif name == SECONDS:
            rank.phase_seconds[labels.get("phase", "")] = value
        elif name == STEPS:
            rank.steps = value
        elif name == SEEN:
            rank.seen_at = value
        elif name == INFO:
            rank.pid, rank.site = _number(labels.get("pid")), labels.get("site") or None
        elif name == NCCL_COUNTS:  # NCCL RAS
            rank.collectives[labels.get("op", "")[:40]] = int(value)
        elif name == NCCL_STATE:
            rank.nccl_state, rank.gpu = labels.get("state", "")[:20], _number(labels.get("gpu"))
            rank.pid = rank.pid if rank.pid is not None else _number(labels.get("pid"))
        elif name == NCCL_LAG:
            rank.lag = int(value)
        rank.stacks = rank.stacks or name in (SECONDS, INFO, SEEN, STEPS) or what != "now"


Series = Iterable[tuple[dict[str, str], float]]


def assemble_job(job: str, url: str, now: Series, increase: Series, steps: Series, hosts: list[HostView],
                 t: Thresholds, names: Series | None = None) -> JobView:
    """The job answers of one round (each an instant vector) and that round's host rows → the job's view;
    `names` (the job_name of every watched job there) only says which jobs there are when this one is not."""
    fold = RankFold()
    for answer, what in ((now, "now"), (increase, "window"), (steps, "steps")):
        for labels, value in answer:
            fold.add(labels, value, what)
    return judge_job(job, url, fold, hosts, t, names)


def judge_job(job: str, url: str, fold: RankFold, hosts: list[HostView], t: Thresholds,
              names: Series | None = None) -> JobView:
    """A job's folded ranks → its figures, every rank's verdict, the likely cause and a message."""
    figures = _figures(fold)
    by_host = {h.name: h for h in hosts}
    if not figures:
        there = sorted({labels.get("job_name", "") for labels, _ in names or ()} - {""})
        listed = f" (jobs there: {', '.join(there[:8])}{', …' if len(there) > 8 else ''})" if there else ""
        return JobView(job, (), {}, None, f"no hwtop job series at {url} for job_name={promql_string(job)}{listed}",
                       hosts=by_host)
    now = Look(figures, max((r.seen_at for r in figures if r.seen_at is not None), default=None))
    verdicts = judge(now, None, t, host_faults(hosts))
    verdict = _named(verdicts, figures)
    steps_per_s = {key: r.steps_per_s for key, r in fold.ranks.items() if r.steps_per_s is not None}
    return JobView(job, tuple(worst_first(now, None, verdicts)), steps_per_s, verdict,
                   _message(verdict, figures, fold, hosts, t), _cause(verdict, by_host), by_host, verdicts)


def _cause(verdict: RankVerdict | None, by_host: dict[str, HostView]) -> FindingRow | None:
    """The named rank's host's top finding other than the symptom itself: the likely cause."""
    if verdict is None or verdict.rank is None:
        return None
    host = by_host.get(verdict.rank.host)
    causes = [f for f in host.findings if f.rule not in SYMPTOMS] if host is not None else []
    return min(causes, key=lambda f: SEVERITY_ORDER.get(f.severity, 9)) if causes else None


def _message(verdict: RankVerdict | None, figures: list[RankFigures], fold: RankFold, hosts: list[HostView],
             t: Thresholds) -> str | None:
    """Why nothing is named, in one line, or the hosts not answering whose ranks a hang may wait for."""
    message = None if verdict is not None else missing_figure(figures, t)
    if not fold.advanced and verdict is None:
        message = ("the ranks' counters did not advance within the window: it must span at least two scrapes "
                   "(--rank-window)")
    down = [h for h in hosts if not h.up]
    if verdict is not None and verdict.rank is None and down:  # its ranks' series went stale with its scrapes
        message = "not answering, their ranks unseen: " + "; ".join(f"{h.name} ({h.error})" for h in down)
    return message


def _figures(fold: RankFold) -> list[RankFigures]:
    """Each rank's figures from its series; a rank NCCL names by its address, where its own host exports it under
    its host name, is that host's."""
    with_stacks = {number for (_, number), rank in fold.ranks.items() if rank.stacks}
    figures = []
    for (host, number), rank in sorted(fold.ranks.items()):
        if not rank.stacks and number in with_stacks:  # the same rank, named by its address in NCCL's series
            continue
        observed = sum(rank.window.values())
        shares = tuple(sorted(((p, s / observed) for p, s in rank.window.items()), key=lambda i: -i[1])) \
            if observed > 0 else ()
        figures.append(RankFigures(number, host, phase_seconds=tuple(sorted(rank.phase_seconds.items())),
                                   shares=shares, steps=None if rank.steps is None else int(rank.steps),
                                   samples=round(observed * RATE_HZ), seen_at=rank.seen_at, pid=rank.pid,
                                   site=rank.site, gpu=rank.gpu, collectives=tuple(sorted(rank.collectives.items())),
                                   lag=rank.lag, nccl_state=rank.nccl_state, nccl_only=not rank.stacks))
    return figures


def host_faults(hosts: list[HostView]) -> dict[tuple[str, int], list[GpuFault]]:
    """The GPU faults each host's own findings name (gpu-errors, gpu-throttled, scope `GPU<n>`), by host and GPU:
    the same faults the host's doctor folds into its ranks' verdicts, in the host's words."""
    out: dict[tuple[str, int], list[GpuFault]] = {}
    for host in hosts:
        for f in host.findings:
            index = f.scope[3:] if f.scope.startswith("GPU") else ""
            if f.rule in (gpu_errors.id, gpu_throttled.id) and index.isdigit() and len(index) < 4:
                severe = f.rule == gpu_errors.id
                what = f"an error its host reports ({f.rule}, {f.severity})" if severe else f"throttled ({f.rule})"
                out.setdefault((host.name, int(index)), []).append(GpuFault(int(index), what, severe))
    return out


def _named(verdicts: Verdicts, figures: list[RankFigures]) -> RankVerdict | None:
    """The job's verdict as the fleet's screens head it: the first blamed rank (a hang before a straggler), in
    the verdict's own words; every rank waiting for one no exporter watches is a hang without a rank."""
    blamed = sorted(verdicts.blamed, key=lambda v: v.state == "slow")
    by_key = {(r.host, r.rank): r for r in figures}
    if blamed:
        v = blamed[0]
        held = tuple(r for r in figures if (r.host, r.rank) != (v.host, v.rank))
        return RankVerdict("straggler" if v.state == "slow" else "hang", by_key.get((v.host, v.rank)), held,
                           (f"{v.who} {v.words}", *v.agree))
    waiting = [v for v in verdicts.ranks if v.state == "inside-collective" and not v.held_by]
    if waiting and len(waiting) == len([v for v in verdicts.ranks if by_key.get((v.host, v.rank)) is not None and
                                        not by_key[(v.host, v.rank)].nccl_only]):
        return RankVerdict("hang", None, tuple(by_key[(v.host, v.rank)] for v in waiting), waiting[0].agree)
    return None
