"""The figures a finding cites checked against the same figures where a panel shows them, read off the screen as a
user reads it: a rank's wait (in collectives, for data) against the workload pane's rank lines and the job view's
rank table, a GPU's memory against the GPU panel and the process table, a port's rate against the network panel.
`contradictions(findings, screens)` lists each disagreement as one line; `compared` counts the comparisons made,
so a check that found nothing to compare cannot pass for one that agreed (issue 48: `wait 0%` on the rank line
beside "the other 7 ranks wait in collectives 55-57%")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwtop.model.finding import Finding
from tests.small_screen import rank_cells

PERCENT_SLACK = 1.0  # figures rounded to whole percent on either side
GIB_SLACK = 0.06  # GiB: `79.5 GiB` in a finding, `79.5G` on screen (one decimal)
RATE_SHARE = 0.02  # a port's rate: the finding's over its window, the panel's over the last tick


@dataclass
class Figures:
    """(what, whose) -> values: `("coll", "3")`, `("data", "0")`, `("wait", "0")` for a rank line that does not
    say which wait, `("gpu_mem", "3")` in GiB, `("pid_mem", "41003")`, `("port", "enp225s0f0")` in GB/s."""

    values: dict[tuple[str, str], list[tuple[float, str]]] = field(default_factory=dict)

    def add(self, what: str, whose: str, value: float, where: str) -> None:
        self.values.setdefault((what, whose), []).append((value, where))


# ----- what the findings cite -----

_RANK_SPENT = re.compile(r"rank (\d+) \(pid \d+[^)]*\)[^:]*: (\d+)% in collectives")
_RANK_WAITS_IN_THEM = re.compile(r"rank (\d+) \(pid \d+[^)]*\) waits in them (\d+)%")
_RANK_WAITS = re.compile(r"rank (\d+) \(pid \d+[^)]*\) waits in (?:collectives|a collective) (\d+)%")
_OTHERS = re.compile(r"the other (\d+) ranks wait in (?:collectives|a collective) (\d+)(?:-(\d+))?%")
_DATA = re.compile(r"rank (\d+) \(pid \d+\): main thread waiting for data in (\d+)%")
_RANKS_DATA = re.compile(r"\(ranks (\d+)-(\d+) (\d+)%")
_GPU_MEMORY = re.compile(r"GPU(\d+) memory (\d+(?:\.\d+)?) GiB of")
_PID_HOLDS = re.compile(r"pid (\d+) .*holds (\d+(?:\.\d+)?) GiB")
_PORT = re.compile(r"port (\S+) carries (\d+(?:\.\d+)?) GB/s")


def cited(findings: tuple[Finding, ...], ranks: list[int]) -> Figures:
    """Every figure of the kinds above that a finding's title or evidence states, with the finding's id."""
    out = Figures()
    for finding in findings:
        named: set[int] = set()
        for line in (finding.title, *finding.evidence):
            where = f"{finding.id}: {line}"
            for pattern in (_RANK_SPENT, _RANK_WAITS_IN_THEM, _RANK_WAITS):
                for rank, share in pattern.findall(line):
                    out.add("coll", rank, float(share), where)
                    named.add(int(rank))
            for rank, share in _DATA.findall(line):
                out.add("data", rank, float(share), where)
            for low, high, share in _RANKS_DATA.findall(line):
                for rank in range(int(low), int(high) + 1):
                    out.add("data", str(rank), float(share), where)
            for gpu, gib in _GPU_MEMORY.findall(line):
                out.add("gpu_mem", gpu, float(gib), where)
            for pid, gib in _PID_HOLDS.findall(line):
                out.add("pid_mem", pid, float(gib), where)
            for port, rate in _PORT.findall(line):
                out.add("port", port, float(rate), where)
        for line in finding.evidence:  # "the other 7 ranks": every rank but the one named
            for count, low, high in _OTHERS.findall(line):
                others = [r for r in ranks if r not in named]
                if len(others) == int(count):
                    for rank in others:
                        out.add("coll_range", str(rank), float(low), f"{finding.id}: {line}")
                        out.add("coll_range", str(rank), float(high or low), f"{finding.id}: {line}")
    return out


# ----- what the screen shows -----

_RANK_LINE = re.compile(r"^rank (\d+)(?:-(\d+) x\d+)? ")
_LABELLED = re.compile(r" (data|coll)(?: wait)? +(\d+)%")
_BARE_WAIT = re.compile(r"(?<!data)(?<!coll) wait +(\d+)%")
_GPU_LINE = re.compile(r"^GPU(\d+) .* (\d+(?:\.\d+)?)G/\d+(?:\.\d+)?G")
_PROCESS_ROW = re.compile(r"^(\d+)\s+\S+\s+(?:[\d.]+|N/A)\s+\S+\s+(?:\d+|N/A)\s+(\d+(?:,\d+)*)\s+(\d+(?:\.\d+)?)G\b")
_PORT_LINE = re.compile(r"(\S+)\s+(?:Eth|IB|RoCE)\s.*?rx\s+\d+%\s+(\d+(?:\.\d+)?)(kB|MB|GB)/s\s+tx\s+\d+%\s+"
                        r"(\d+(?:\.\d+)?)(kB|MB|GB)/s")
_UNIT = {"kB": 1e-6, "MB": 1e-3, "GB": 1.0}


def _inside(line: str) -> str:
    """A panel's row without its border."""
    return line.strip().strip("│").strip()


def shown(lines: list[str], where: str) -> Figures:
    """The figures of the kinds above that these screen lines show."""
    out = Figures()
    columns: list[str] = []  # the job view's rank table, while its rows are read: its header's column names
    for raw in lines:
        line = _inside(raw)
        if line.startswith("RANK ") and "WAIT" in line.split():
            columns = line.replace("BUSY AT", "BUSY_AT").split()
            continue
        if columns:
            cells = rank_cells(line)
            if cells[:1] == ["◀"]:  # a rank a finding names
                cells = cells[1:]
            width = columns.index("BUSY_AT") if "BUSY_AT" in columns else len(columns)
            if not cells or not cells[0].isdigit() or len(cells) < width:
                columns = []
            else:
                row = dict(zip(columns[:width], cells, strict=False))
                for what, name in (("coll", "WAIT"), ("data", "DATA")):
                    value = row.get(name, "")
                    if value.endswith("%"):
                        out.add(what, row["RANK"], float(value[:-1]), f"{where} job view: {line}")
                    elif value == "·":  # the job view's zero
                        out.add(what, row["RANK"], 0.0, f"{where} job view: {line}")
                continue
        rank_line = _RANK_LINE.match(line)
        if rank_line:
            first = int(rank_line.group(1))
            last = int(rank_line.group(2) or first)
            for rank in range(first, last + 1):
                for what, value in _LABELLED.findall(line):
                    out.add(what, str(rank), float(value), f"{where} workload: {line}")
                for value in _BARE_WAIT.findall(line):
                    out.add("wait", str(rank), float(value), f"{where} workload: {line}")
            continue
        gpu = _GPU_LINE.match(line)
        if gpu:
            out.add("gpu_mem", gpu.group(1), float(gpu.group(2)), f"{where} GPU panel: {line}")
        process = _PROCESS_ROW.match(line)
        if process and "," not in process.group(2):
            out.add("pid_mem", process.group(1), float(process.group(3)), f"{where} processes: {line}")
        for port, rx, rx_unit, tx, tx_unit in _PORT_LINE.findall(line):
            out.add("port", port, max(float(rx) * _UNIT[rx_unit], float(tx) * _UNIT[tx_unit]),
                    f"{where} network: {line}")
    return out


# ----- the two against each other -----

def _same(screen: Figures, what: str, whose: str) -> list[tuple[float, str]]:
    """The screen's figures of this kind for this one: a port's name may be cut in its middle (`enp22…f0`)."""
    out = list(screen.values.get((what, whose), []))
    for (kind, name), values in screen.values.items():
        if kind == what == "port" and "…" in name:
            head, _, tail = name.partition("…")
            if name != whose and whose.startswith(head) and whose.endswith(tail):
                out += values
    return out


@dataclass
class Verdict:
    contradictions: list[str] = field(default_factory=list)
    compared: int = 0


def compare(said: Figures, screen: Figures) -> Verdict:
    verdict = Verdict()
    for (what, whose), claims in said.values.items():
        if what == "coll_range":
            low, high = min(v for v, _ in claims), max(v for v, _ in claims)
            for value, where in screen.values.get(("coll", whose), []):
                verdict.compared += 1
                if not low - PERCENT_SLACK <= value <= high + PERCENT_SLACK:
                    verdict.contradictions.append(f"rank {whose}: {where} against {claims[0][1]}")
            for value, where in screen.values.get(("wait", whose), []):
                verdict.compared += 1
                if value + PERCENT_SLACK < low:
                    verdict.contradictions.append(f"rank {whose}: {where} against {claims[0][1]}")
            continue
        for claim, source in claims:
            for value, where in _same(screen, what, whose):
                verdict.compared += 1
                if what == "port":
                    agree = abs(value - claim) <= RATE_SHARE * claim + 0.05
                elif what in ("gpu_mem", "pid_mem"):
                    agree = abs(value - claim) <= GIB_SLACK
                else:
                    agree = abs(value - claim) <= PERCENT_SLACK
                if not agree:
                    verdict.contradictions.append(f"{what} {whose}: {where} against {source}")
            if what in ("coll", "data"):  # a rank line that says `wait N%` without saying which: at least as much
                for value, where in screen.values.get(("wait", whose), []):
                    verdict.compared += 1
                    if value + PERCENT_SLACK < claim:
                        verdict.contradictions.append(f"rank {whose}: {where} against {source}")
    return verdict
