"""doctor's report as text (one printable line each: evidence quoting a command line cannot forge a line) and as
JSON, from the typed facts and the settled findings; and what a crashed workload left to say."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from hwtop.advice.rules.straggler import rank_straggler  # its finding names the rank the others wait for
from hwtop.advice.timeline import clock, describe
from hwtop.cli.doctor.facts import BoxFacts, JobFacts, NcclFacts, RankFacts, StackFacts, WorkloadFacts
from hwtop.cli.doctor.findings import Reported
from hwtop.model.finding import Change
from hwtop.model.safe_text import printable, printable_lines
from hwtop.model.verdict import SHORT

RANK_LINES = 24  # of a large job, the worst ranks are listed; the JSON has them all
# a rank's verdict in a few words, as the job view's STATE column says it
STATE_WORDS: dict[str, str] = {state: words for state, words in SHORT.items()}
STATE_WIDTH = max(len(words) for words in SHORT.values())
_RANK_EXIT = re.compile(r"rank (\d+) \(pid (\d+)\) terminated with exit code (-?\d+)")


@dataclass(frozen=True, slots=True)
class Report:
    """A finished watch: how long it was asked to sample, what it saw, and what the rules found."""

    seconds: float
    facts: BoxFacts
    findings: tuple[Reported, ...]  # worst first

    @property
    def warns(self) -> bool:
        """Something at warning or above was shown (exit 1)."""
        return any(r.finding.severity in ("warning", "critical") for r in self.findings)


def report(seconds: float, facts: BoxFacts, findings: Iterable[Reported]) -> Report:
    return Report(seconds, facts, tuple(sorted(findings, key=Reported.order)))


# The text -------------------------------------------------------------------------------------------------------


def text(report: Report) -> str:
    facts = report.facts
    head = f"hwtop doctor: {facts.ticks} samples over {report.seconds:g} s on {facts.host or 'this host'}, " \
           f"{facts.gpus} GPU(s)"
    if facts.workload is not None:
        head += f", workload {facts.workload.kind} ({facts.workload.status})"
    out = [head]
    if facts.gpu_message:
        out.append(f"  GPUs: {facts.gpu_message}")
    if facts.job is not None:
        straggler = next((r.finding.pids[0] for r in report.findings if r.finding.id == rank_straggler.id and r.active
                          and r.finding.pids), None)
        out += job_lines(facts.job, straggler)
    if facts.fr_dump is not None:
        out += ["", "Flight Recorder (--fr-dump: each rank asked for its dump through its dump pipe):",
                *(f"  {line}" for line in facts.fr_dump)]
    if not report.findings:
        out.append("No problems seen.")
    for entry in report.findings:
        out += _finding_lines(entry)
    out += [f"rule {rule} failed: {message}" for rule, message in sorted(facts.rule_errors.items())]
    out += timeline_lines(facts.timeline)
    return printable_lines(out)


def _finding_lines(entry: Reported) -> list[str]:
    f = entry.finding
    state = "active" if entry.active else f"cleared (seen for {entry.last - entry.first:.0f} s)"
    if entry.active and f.clearing(entry.last) and f.held_at is not None:  # shown, but no longer holding
        state = f"clearing: not seen for {entry.last - f.held_at:.0f} s, its figures as of {clock(f.held_at)}"
    return ["", f"[{f.severity.upper()}] {f.title}" + (f" · {f.scope}" if f.scope else "") + f"  ({f.id}, {state})",
            *(f"  seen: {line}" for line in f.evidence), *(f"  fix:  {line}" for line in f.fix)]


def job_lines(job: JobFacts, straggler: int | None = None) -> list[str]:
    out = [f"  watching {job.label}: {job.status}, {job.processes} process(es), {job.ranks} rank(s), "
           f"watched {job.watched_s:.0f} s; {job.workers_exited_last_minute} DataLoader workers exited in the "
           "last minute"]
    if job.message:
        out.append(f"  job: {job.message}")
    if job.stack_message:
        out.append(f"  stacks: {job.stack_message}")
    if job.nccl_watch_s:
        out.append(f"  watched {job.nccl_watch_s:.0f} s: NCCL's RAS answers come 10 s apart by default, and a "
                   "hang needs answers spanning 30 s")
    if job.nccl_env:
        out.append("  NCCL: " + " ".join(f"{k}={v}" for k, v in job.nccl_env.items()))
    out += [line for stacks in job.stacks for line in _stack_line(stacks)]
    return out + _nccl_lines(job.nccl) + rank_lines(job.rank_figures, straggler)


def _stack_line(stacks: StackFacts) -> list[str]:
    who = f"rank {stacks.rank} (pid {stacks.pid})" if stacks.rank is not None else f"pid {stacks.pid}"
    if stacks.samples:
        parts = sorted(stacks.fractions.items(), key=lambda kv: -kv[1])
        return [f"  where {who} spends its time ({stacks.samples} samples over {stacks.window_s:.0f} s): "
                + ", ".join(f"{name} {100 * value:.0f}%" for name, value in parts)]
    return [f"  where {who} spends its time: {stacks.message}"] if stacks.message else []


def _nccl_lines(nccl: NcclFacts | None) -> list[str]:
    if nccl is None:
        return []
    version = f", NCCL {nccl.nccl_version}" if nccl.nccl_version else ""
    out = [f"  NCCL RAS at {nccl.address} ({nccl.source}): {nccl.queries} answer(s)"
           + (f" in {nccl.format}" if nccl.format else "") + version]
    if nccl.holding:
        out.append(f"  NCCL RAS: {nccl.holding}")
    return out + [f"  NCCL RAS error: {line}" for line in nccl.errors[-3:]]


def rank_lines(ranks: Sequence[RankFacts], straggler: int | None) -> list[str]:
    """The ranks side by side: how much of its time each waits for the others, and what it does otherwise; with
    NCCL's RAS, every node's ranks with their state and how many collectives they lag, the worst first."""
    if len(ranks) < 2:
        return []
    nccl = any(r.nccl is not None for r in ranks)
    judged = any(r.state is not None for r in ranks)  # in their verdicts' order, worst first (job_facts)
    if nccl and not judged:  # worst first: dead or unresponsive, then the most behind
        ranks = sorted(ranks, key=lambda r: (r.nccl is None or r.nccl.nccl_state == "RUNNING",
                                             -((r.nccl.lag if r.nccl else None) or 0), r.rank))
    shown = ranks[:RANK_LINES]
    hosts = [printable(r.host) for r in shown]  # a remote label: control characters made visible first
    width = max(4, *(len(host) for host in hosts))
    extra = f"  {'NCCL':<12}  {'lag':>5}" if nccl else ""
    state = f"  {'state':<{STATE_WIDTH}}" if judged else ""
    out = [f"  ranks: {'rank':>4}  {'host':<{width}}  {'pid':>7}{state}{extra}  {'waits in collectives':<20}  busy at"]
    out += [_rank_row(r, host, width, nccl, straggler, judged) for r, host in zip(shown, hosts, strict=True)]
    if len(ranks) > len(shown):
        out.append(f"         ... and {len(ranks) - len(shown)} more ranks (--json lists them all)")
    return out


def _rank_row(r: RankFacts, host: str, width: int, nccl: bool, straggler: int | None, judged: bool) -> str:
    wait = f"{100 * r.collective:.0f}%" if r.samples else "N/A"
    mark = " <- straggler" if straggler is not None and r.pid == straggler else ""
    cells = ""
    if judged:
        cells += f"  {STATE_WORDS.get(r.state or '', r.state or '-'):<{STATE_WIDTH}}"
    if nccl:
        state, lag = (r.nccl.nccl_state, r.nccl.lag) if r.nccl is not None else (None, None)
        cells += f"  {state or '-':<12}  {'' if lag is None else lag:>5}"
    return f"         {r.rank:>4}  {host:<{width}}  {r.pid or '':>7}{cells}  {wait + mark:<20}  {r.site or ''}".rstrip()


def timeline_lines(changes: Sequence[Change]) -> list[str]:
    """What was raised and cleared while doctor watched, with times: the story behind the findings above."""
    if not changes:
        return ["", "What changed: nothing was raised or cleared."]
    return ["", "What changed:", *(f"  {describe(change)}" for change in changes)]


def crash_lines(workload: WorkloadFacts) -> list[str]:
    """What a crashed workload left to say: which rank failed with which exit code, then its last stderr lines.
    Empty when it did not crash."""
    if workload.status != "crashed":
        return []
    tail = [line for line in workload.stderr_tail if line.strip()]
    failed = next((m for m in map(_RANK_EXIT.search, reversed(tail)) if m), None)
    if failed is not None:
        rank, pid, code = failed.groups()
        head = f"hwtop doctor: the workload crashed: rank {rank} (pid {pid}) exited with code {code}"
    else:
        head = f"hwtop doctor: the workload crashed: exit code {workload.exit_code}"
    if not tail:
        return [head, "  (it wrote nothing to stderr)"]
    return [head, "  its last stderr lines:", *(f"    {line}" for line in tail)]


# The JSON -------------------------------------------------------------------------------------------------------


def as_json(report: Report) -> dict[str, object]:
    """The report as `doctor --json` prints it: the facts' fields in order (a rank's NCCL figures beside its
    others, none where NCCL was not asked; no job where none was watched), then the findings."""
    facts = msgspec.to_builtins(report.facts)
    if report.facts.fr_dump is None:  # only where --fr-dump asked: "fr_dump", a line per rank
        del facts["fr_dump"]
    if report.facts.job is None:
        del facts["job"]
    else:
        facts["job"]["rank_figures"] = [_rank_json(r) for r in report.facts.job.rank_figures]
    findings = [{**r.finding.to_dict(), "active": r.active, "first_seen": r.first, "last_seen": r.last}
                for r in report.findings]
    return {"seconds": report.seconds, **facts, "findings": findings}


def _rank_json(rank: RankFacts) -> dict[str, object]:
    out = msgspec.to_builtins(rank)
    nccl = out.pop("nccl")
    return {**out, **(nccl or {})}
