"""The jobs a Prometheus holds (`hwtop fleet --prometheus URL` without --job, `j`): one row per `job_name` of the
hwtop job series, with its hosts, its ranks and its verdict, each judged exactly as `--job NAME` judges it
(fleet/job.py's assemble_job over that job's share of one round's answers). Plain data, no I/O."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import msgspec

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.build import host_of
from hwtop.fleet.job import JobView, RankFold, judge_job
from hwtop.fleet.model import HostView
from hwtop.model.record import Record

MAX_JOBS = 500  # judged and listed; the rest are counted (a Prometheus naming more is not showing jobs to a person)
MAX_FOLDED = 4 * MAX_JOBS  # jobs read before the first MAX_JOBS by name are known: beyond, only counted
VERDICT_ORDER = {"hang": 0, "straggler": 1}



class JobRow(Record, frozen=True):
    """One job: the hosts its ranks or its exporters are on, and its view as `--job NAME` would give it."""

    name: str
    hosts: tuple[str, ...]
    view: JobView

    def to_dict(self, now: float) -> dict[str, object]:
        view = self.view.to_dict(now)
        return {"job": self.name, "hosts": list(self.hosts), "ranks": len(self.view.ranks),
                "verdict": view["verdict"], "message": view["message"]}


class JobList(Record, frozen=True):
    """`message` says in one line why there is no job to list (no series at the URL, a failed query)."""

    jobs: tuple[JobRow, ...] = ()
    message: str | None = None
    left_out: int = 0  # jobs beyond MAX_JOBS, by name


def assemble_jobs(url: str, now: Iterable[tuple[dict[str, str], float]],
                  increase: Iterable[tuple[dict[str, str], float]], steps: Iterable[tuple[dict[str, str], float]],
                  hosts: list[HostView], t: Thresholds) -> JobList:
    """One round's answers of the list queries (fleet/job.py's jobs_queries) → every job, hangs first, then
    stragglers, then by name. Each series is folded into its job's ranks as it is read (a list's answers are the
    biggest of a round: no list of their series is kept)."""
    folds: dict[str, RankFold] = {}
    where: dict[str, set[str]] = defaultdict(set)
    named: set[str] = set()  # jobs with a series in the now or increase answers
    for answer, what in ((now, "now"), (increase, "window"), (steps, "steps")):
        for labels, value in answer:
            name = labels.get("job_name", "")
            if not name:
                continue
            if what != "steps":
                named.add(name)
            fold = folds.get(name)
            if fold is None:
                if len(folds) >= MAX_FOLDED:
                    continue
                fold = folds[name] = RankFold()
            fold.add(labels, value, what)
            if what == "now" and (host := host_of(labels)):
                where[name].add(host)
    names = sorted(named)
    if not names:
        return JobList(message=f"no hwtop job series at {url}")
    rows = []
    for name in [n for n in names if n in folds][:MAX_JOBS]:
        view = judge_job(name, url, folds[name], hosts, t)
        if not view.ranks:  # only its exporters' hwtop_job_info: watched, no rank read yet
            view = msgspec.structs.replace(view, message="its exporters read no rank figures yet")
        rows.append(JobRow(name, tuple(sorted({r.host for r in view.ranks} | where[name])), view))
    rows.sort(key=lambda row: (VERDICT_ORDER.get(row.view.verdict.kind, 2) if row.view.verdict else 2, row.name))
    return JobList(tuple(rows), None, max(0, len(names) - len(rows)))
