"""One finding per cause: the findings a rule marks with the same `cause` (and the same severity and fix) are
shown as one that names everything it covers ("GPU0-7", "GPU0,3", "ranks 0-7", "cores 12, 13, 40"), with the evidence
of its worst member and their count. Members whose condition no longer holds (waiting out their clear time) are
named as such, so the evidence never speaks for a GPU that the panels show recovered. Headless and pure."""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec.structs

from hwtop.model.finding import Finding

MAX_LABEL = 60  # characters of a covering label: the pane, the exporter's label and doctor stay bounded
_NUMBERED = re.compile(r"^(.*?)(\d+)$")
_PLURAL = {"GPU": ("GPU", "GPUs"), "rank ": ("ranks ", "ranks"), "pid ": ("pids ", "processes"),
           "core ": ("cores ", "cores")}


def _numbers(values: list[int], separator: str = ", ") -> str:
    """12, 13, 40 and 0-7: runs of three or more as a range."""
    out: list[str] = []
    run: list[int] = []
    for value in [*sorted(set(values)), None]:
        if run and (value is None or value != run[-1] + 1):
            out += [f"{run[0]}-{run[-1]}"] if len(run) >= 3 else [str(v) for v in run]
            run = []
        if value is not None:
            run.append(value)
    return separator.join(out)


def _bounded(text: str, separator: str = ", ", limit: int = MAX_LABEL) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(separator, 1)[0]
    return f"{cut}{separator}… ({text.count(separator) - cut.count(separator)} more)"


def natural(scope: str) -> tuple[str, int, str]:
    """Sort key that puts GPU2 before GPU10."""
    match = _NUMBERED.match(scope)
    return (match.group(1), int(match.group(2)), "") if match else (scope, -1, scope)


def covering(scopes: Iterable[str], gpus: Iterable[int] = ()) -> tuple[str, str]:
    """(label, noun) for the members' scopes: ("GPU0-7", "GPUs"), ("ranks 0, 3", "ranks"); scopes that are not
    one word and a number name the GPUs when they have them, else are listed as they are."""
    names = sorted(set(scopes), key=natural)
    matches = [_NUMBERED.match(name) for name in names]
    prefixes = {m.group(1) for m in matches if m}
    if len(names) == 1:
        return names[0], "places"
    if all(matches) and len(prefixes) == 1:
        prefix = prefixes.pop()
        label_prefix, noun = _PLURAL.get(prefix, (prefix, "places"))
        separator = "," if prefix == "GPU" else ", "  # GPU0,3 as CUDA_VISIBLE_DEVICES and the titles write it
        return _bounded(label_prefix + _numbers([int(m.group(2)) for m in matches if m], separator), separator), noun
    indices = sorted(set(gpus))
    if indices:
        return _bounded("GPU" + _numbers(indices, ","), ","), "GPUs"
    return _bounded(", ".join(names)), "places"


def alike(figures: dict[int, float | None], name: str = "GPU") -> dict[str, str]:
    """{"27%": "GPU0-7"}: GPUs (or ranks: name="rank ") whose percentage reads the same, named once, so eight
    waiting GPUs are one line of a finding's evidence, not eight."""
    by_figure: dict[str, list[int]] = {}
    for index, value in figures.items():
        by_figure.setdefault("N/A" if value is None else f"{value:.0f}%", []).append(index)
    return {shown: covering([f"{name}{i}" for i in indices])[0] for shown, indices in by_figure.items()}


def _merge(members: list[Finding], now: float) -> Finding:
    """One finding for the members of a cause: the worst member's, named for them all."""
    worst = _worst(members, now)
    if len(members) == 1:
        return worst
    scopes = [m.scope for m in members]
    gpus = sorted({g for m in members for g in m.gpus})
    label, noun = covering(scopes, gpus)
    title = worst.title.replace(worst.scope, label, 1) if worst.scope and worst.scope in worst.title else worst.title
    return msgspec.structs.replace(
        worst, title=title, scope=label,
        evidence=(*worst.evidence, _same_line(members, worst, label, noun), *_quiet_lines(members, now)),
        gpus=tuple(gpus), cores=tuple(sorted({c for m in members for c in m.cores})),
        pids=tuple(sorted({p for m in members for p in m.pids})),
        since=min((m.since for m in members if m.since is not None), default=None),
        covers=tuple(sorted(scopes, key=natural)), held_at=max((m.held_at or now) for m in members))


def _worst(members: list[Finding], now: float) -> Finding:
    """The member whose figures the merged finding shows: the highest measure of those that hold, or where none
    does, of those that held last."""
    holding = [m for m in members if not m.clearing(now)]
    latest = max((m.held_at or now) for m in members)
    pool = holding or [m for m in members if (m.held_at or now) == latest]
    return max(pool, key=lambda m: -float("inf") if m.measure is None else m.measure)


def _same_line(members: list[Finding], worst: Finding, label: str, noun: str) -> str:
    measured = worst.measure is not None and any(m.measure != worst.measure for m in members)
    return (f"the same on {len(members)} {noun}: {label} (the figures above: {worst.scope}"
            f"{', the worst' if measured else ''})")


def _quiet_lines(members: list[Finding], now: float) -> tuple[str, ...]:
    """Where some members hold and others only wait out their clear time: those not seen, and for how long."""
    gone = [m for m in members if m.clearing(now)]
    if not gone or len(gone) == len(members):
        return ()
    quiet, _ = covering([m.scope for m in gone], [g for m in gone for g in m.gpus])
    return (f"not seen for {now - max(m.held_at or now for m in gone):.0f} s on {quiet}",)


def group(findings: Iterable[Finding], now: float) -> tuple[Finding, ...]:
    """Members of one cause merged, others as they are; most severe first. Members of one `cause` that differ in
    severity or fix stay apart (the second named by its severity, or a number, so each keeps its own key)."""
    groups: dict[tuple[str, str, str, tuple[str, ...]], list[Finding]] = {}
    alone: list[Finding] = []
    for finding in findings:
        if finding.cause:
            groups.setdefault((finding.id, finding.cause, finding.severity, finding.fix), []).append(finding)
        else:
            alone.append(finding)
    merged: list[Finding] = []
    taken: set[tuple[str, str]] = set()
    for members in groups.values():
        finding = _merge(sorted(members, key=lambda m: natural(m.scope)), now)
        if finding.key in taken:  # one cause name, two severities or fixes: kept apart under two keys
            cause = f"{finding.cause} · {finding.severity}"
            number = 2
            while (finding.id, cause) in taken:
                cause, number = f"{finding.cause} · {number}", number + 1
            finding = msgspec.structs.replace(finding, cause=cause)
        taken.add(finding.key)
        merged.append(finding)
    return tuple(sorted([*merged, *alone], key=lambda f: (f.severity_order, f.id, natural(f.scope))))
