"""The advice pane: findings, most severe first, one line each; a finding expands (click it, or select it and
press enter) to the numbers that raised it and the fix. Empty, it says what it watches, or, on the monitor's first
frame (drawn before any rule ran), that the advice starts with the next tick. A finding whose condition no longer
holds (waiting out its clear time) is drawn dimmed, "not seen for 8 s", its evidence marked with the time it is
from, so the pane never contradicts the panels beside it. Given few rows (`rows`), it draws one headline per cause,
its rule id kept whole."""

from __future__ import annotations

import textwrap

import msgspec
from rich.text import Text
from textual import events
from textual.message import Message

from hwtop.advice.timeline import clock, describe
from hwtop.model.finding import Change, Finding
from hwtop.widgets import keys, palette
from hwtop.widgets.panel import FRAME, TextPanel, View, Want
from hwtop.widgets.safe_text import data

BADGE = {"critical": ("✖ CRIT", palette.BADGE_CRIT), "warning": ("▲ WARN", palette.BADGE_WARN),
         "info": ("● INFO", palette.BADGE_INFO)}
_Row = tuple[tuple[str, str] | None, Text]  # a finding's key (None: no finding's) and its line
UNKNOWN_BADGE = ("? ----", "bold reverse")  # a severity hwtop does not know, read from someone's recording
NOT_YET = "no rule has run yet: the advice starts with the next tick"  # the monitor's first frame
SHORT_TERMINAL = 32  # rows: below this the pane is one line a cause, and an open finding gets its own screen
ROOMY = 50  # rows: from this on the pane also shows the latest of what changed when
TIMELINE_ROWS = 4  # its heading and three changes


def _badge(severity: str) -> tuple[str, str]:
    return BADGE.get(severity, UNKNOWN_BADGE)


def _age(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def evidence_lines(finding: Finding, now: float | None) -> tuple[str, ...]:
    """The evidence as the pane shows it: a clearing finding's marked with the time it last held."""
    if not finding.clearing(now) or finding.held_at is None or not finding.evidence:
        return finding.evidence
    return (f"at {clock(finding.held_at)}: {finding.evidence[0]}", *finding.evidence[1:])


def _quiet(finding: Finding, now: float | None) -> str:
    """ · not seen for 8 s (a clearing finding), else its age ( · 12 s), else nothing."""
    if finding.clearing(now) and finding.held_at is not None and now is not None:
        return f" · not seen for {_age(now - finding.held_at)}"
    if finding.since is not None and now is not None:
        return f" · {_age(now - finding.since)}"
    return ""


class AdvicePanel(TextPanel):
    can_focus = True
    BINDINGS = keys.bindings(keys.ADVICE_PANEL)

    class DetailsWanted(Message):
        """Posted instead of opening a finding in place when the pane is told there is no room (`inline`)."""

    class Opened(Message):
        """A finding was opened in place: the screen shares its rows out again and, where the open finding still
        does not fit (`folded`), closes it and asks for the details screen: one press opens it either way."""

        def __init__(self, key: tuple[str, str]) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.inline = True
        self.rows: int | None = None  # content rows the layout gives the pane; None: as many as it needs
        self.timeline: tuple[Change, ...] = ()  # what changed when: its latest lines fill rows the findings leave
        self.timeline_rows = 0  # without a budget (rows), at most this many lines of it (its heading included)
        self.findings: tuple[Finding, ...] = ()
        self.now: float | None = None
        self.watching: tuple[str, ...] | None = ()  # None: the rules have not run yet
        self.rule_errors: dict[str, str] = {}
        self.expanded: set[tuple[str, str]] = set()
        self.cursor = 0
        self._rows: list[_Row] = []
        self.asked: int | None = None  # rows the pane asks the budget for (a short terminal's headlines); None: all
        self._built: tuple[tuple[object, ...], tuple[list[_Row], bool]] | None = None  # the asked-for build
        self._headline = False  # the last lines were headlines only: a finding opens on the advice screen
        self._natural = 0  # the lines the last `want` counted
        self.border_title = "Advice"

    def take(self, view: View) -> None:
        """The findings, what the rules watch (None before they first ran) and what changed when; and what the
        terminal's height leaves room for: a short one asks for a headline per cause (three at most) and opens a
        finding on a screen of its own, a tall one adds the latest lines of what changed when."""
        frame = view.frame
        short = view.height < SHORT_TERMINAL
        self.inline = not short
        self.asked = min(3, max(1, len(frame.findings))) if short else None
        self.timeline_rows = TIMELINE_ROWS if view.height >= ROOMY else 0
        self.keep(frame.findings, frame.time, view.watching, dict(frame.rule_errors), frame.timeline)

    def want(self, width: int) -> Want:
        """What the pane would draw with all it asks for (most), a headline per cause (folded), one line (least);
        counted on the build that `draw` then draws from, folded to the rows it is given."""
        natural = self._natural = self.natural(width)
        findings = self.findings
        headlines = min(natural, len(findings)) if findings else 1
        return Want(natural, headlines, 1, frame=FRAME if findings and self.inline else 0)

    def draw(self, rows: int) -> None:
        self.rows = rows if rows < self._natural else self.asked  # fewer than it would fill: headlines
        self.show(self.findings, self.now, self.watching, self.rule_errors, self.timeline)

    def show(self, findings: tuple[Finding, ...], now: float | None, watching: tuple[str, ...] | None,
             rule_errors: dict[str, str] | None = None, timeline: tuple[Change, ...] = ()) -> None:
        self.keep(findings, now, watching, rule_errors, timeline)
        worst = findings[0].severity if findings else None
        self.set_title("Advice" if not findings else
                       f"Advice · {len(findings)} finding{'s' if len(findings) != 1 else ''} · enter/click expands")
        self.set_class(worst == "critical", "critical")
        # One borderless line when there is nothing to show, or no room (a short terminal): panels keep their rows.
        self.set_class(not findings or not self.inline, "empty")
        # Ages (`· 12s`) move with `now` only while there are findings: an empty pane is the same line each tick.
        told = timeline if self.rows or self.timeline_rows else None  # drawn only with rows to spare
        if not self.same_as_shown((findings, now if findings else None, watching, self.rule_errors, self.inline,
                                   self.rows, self.timeline_rows, told)):
            self.changed()

    def keep(self, findings: tuple[Finding, ...], now: float | None, watching: tuple[str, ...] | None,
             rule_errors: dict[str, str] | None = None, timeline: tuple[Change, ...] = ()) -> None:
        """This tick's data, not drawn yet: `natural` then says how many lines it makes, before `show`."""
        self.findings, self.now, self.watching = findings, now, watching
        self.timeline = timeline
        self.rule_errors = dict(rule_errors or {})
        keys = {f.key for f in findings}
        self.expanded &= keys  # a cleared finding forgets it was open
        self.cursor = min(self.cursor, max(0, len(findings) - 1))

    def toggle(self, key: tuple[str, str]) -> None:
        if not self.inline or self._headline:
            self.post_message(self.DetailsWanted())
            return
        self.expanded ^= {key}
        self.changed()
        if key in self.expanded:
            self.post_message(self.Opened(key))

    def close(self, key: tuple[str, str]) -> None:
        self.expanded.discard(key)
        self.changed()

    @property
    def folded(self) -> bool:
        """The rows the budget gave do not hold the open findings: the pane draws headlines only."""
        return bool(self.expanded) and self.rows is not None and self.needed() > self.rows

    def action_move(self, step: int) -> None:
        if self.findings:
            self.cursor = (self.cursor + step) % len(self.findings)
            self.changed()

    def action_toggle_finding(self) -> None:  # not action_toggle: DOMNode has one (toggle an attribute)
        if self.findings:
            self.toggle(self.findings[self.cursor].key)

    def on_click(self, event: events.Click) -> None:
        if not self.inline and self.findings:  # one line, no room: anywhere on it opens the details
            self.post_message(self.DetailsWanted())
            return
        offset = event.get_content_offset(self)
        if offset is None:
            return
        width = max(1, self.content_size.width)
        row = 0
        for key, line in self._rows:
            row += max(1, -(-line.cell_len // width))
            if offset.y < row:
                if key is not None:
                    self.cursor = next(i for i, f in enumerate(self.findings) if f.key == key)
                    self.toggle(key)
                elif self._headline:  # "+3 more"
                    self.post_message(self.DetailsWanted())
                return

    def lines(self, width: int) -> list[Text]:
        rows, self._headline = self._drawn(width)
        self._rows = rows
        return [line for _, line in rows]

    def natural(self, width: int) -> int:
        """Lines the pane draws given the rows it asks for (`asked`), for the row budget to weigh: counted on the
        build that `lines` then draws from (folded to the rows the budget gives), so a tick builds the pane once."""
        return len(self._asked_build(width)[0])

    def _asked_build(self, width: int) -> tuple[list[_Row], bool]:
        key = (width, self.asked, self.findings, self.now if self.findings else None, self.watching,
               self.rule_errors, self.inline, self.timeline_rows, self.timeline, frozenset(self.expanded),
               self.cursor, self.has_focus)
        if self._built is None or self._built[0] != key:
            self._built = (key, self._build(width, self.asked))
        return self._built[1]

    def _drawn(self, width: int) -> tuple[list[_Row], bool]:
        """The rows for the budget's `rows`: the asked-for build itself, or folded from it where the fold draws what
        a build at `rows` would (a short terminal's headlines cut to fewer, or to one line); else built anew."""
        asked, headline = self._asked_build(width)
        if self.rows == self.asked:
            return asked, headline
        if self.inline or self.asked is None or self.asked < 2 or self.rows is None:
            return self._build(width, self.rows)
        if len(self.findings) < 2:  # none or one: the same line(s) at any rows
            return asked, headline
        errors = len(self.rule_errors)
        tail = asked[len(asked) - errors:] if errors else []  # the rule errors' lines, after the findings'
        if self.rows <= 1:
            return [self._one_line(width), *tail], True
        heads = [row for row in asked if row[0] is not None]
        if len(self.findings) <= self.rows or self.rows - 1 > len(heads):
            return self._build(width, self.rows)
        more = len(self.findings) - (self.rows - 1)
        return [*heads[:self.rows - 1], (None, _more_line(more)), *tail], True

    def _build(self, width: int, budget: int | None) -> tuple[list[_Row], bool]:
        """The pane's rows given `budget` rows (None: as many as it needs), and whether they are headlines only."""
        rows: list[_Row] = []
        if not self.findings:
            rows.append((None, self._nothing_line(width)))
        elif not self.inline and (budget or 1) == 1 and len(self.findings) > 1:  # the first, and how many more
            rows.append(self._one_line(width))
        elif not self.inline or (budget is not None and self.needed() > budget):
            rows += self._headlines(width, budget or len(self.findings))
        headline = bool(self.findings) and bool(rows)  # a single line or headlines: no room to open one
        for index, finding in enumerate(self.findings if self.inline and rows == [] else ()):
            rows += self._finding_rows(finding, width, selected=self.has_focus and index == self.cursor)
        for rule, message in sorted(self.rule_errors.items()):
            rows.append((None, data(f"rule {rule} failed: {message}"[:width], palette.WARN)))
        spare = self.timeline_rows if budget is None else budget - len(rows)
        if self.inline and self.timeline and spare >= 2:  # a tall box: the latest of what changed when
            rows += self._timeline_rows(width, spare)
        return rows, headline

    def _nothing_line(self, width: int) -> Text:
        """No finding: what the rules watch, or on the first frame that they have not looked yet."""
        line = Text("Advice ", style="bold")
        if self.watching is None:  # the monitor's first frame: no rule has looked yet
            line.append(_clip(f"· {NOT_YET}", width - line.cell_len), style=palette.DIM)
        else:
            line.append("✓ no problems seen", style=palette.OK_STRONG)
            watching = f" · watching {', '.join(self.watching)}"
            line.append(_clip(watching, width - line.cell_len), style=palette.DIM)
        return line

    def _timeline_rows(self, width: int, spare: int) -> list[_Row]:
        """`what changed` and the latest changes under it, in `spare` rows."""
        rows: list[_Row] = [(None, Text("what changed", style=palette.DIM))]
        titles = {f.key: f.title for f in self.findings}  # a finding still shown: its one title, as the pane's
        for change in self.timeline[-(spare - 1):]:
            title = titles.get(change.key, change.title)
            line = data(f"  {describe(msgspec.structs.replace(change, title=title))}", palette.DIM)
            line.truncate(max(1, width), overflow="ellipsis")
            rows.append((None, line))
        return rows

    def _one_line(self, width: int) -> _Row:
        """`Advice ▲ WARN title · where +2 more · a opens  evidence`: the first finding, and how many more."""
        first = self.findings[0]
        badge, style = _badge(first.severity)
        clearing = first.clearing(self.now)
        line = Text("Advice ", style="bold")
        line.append(badge, style=style)
        line.append_text(data(f" {first.title}" + (f" · {first.scope}" if first.scope else ""),
                              palette.DIM if clearing else "bold"))
        more = len(self.findings) - 1
        line.append((_quiet(first, self.now) if clearing else "") + (f" +{more} more" if more else "")
                    + " · a opens", style=palette.DIM)
        evidence = evidence_lines(first, self.now)
        if evidence:
            line.append_text(data(f"  {evidence[0]}", "italic"))
        line.truncate(max(1, width), overflow="ellipsis")
        return first.key, line

    def needed(self) -> int:
        """Rows the findings take drawn in full: one each, an open one its evidence and fix too (a guess at
        wrapping: one row a line)."""
        return sum(1 + (len(f.evidence) + len(f.fix) if f.key in self.expanded else 0) for f in self.findings)

    def _headlines(self, width: int, rows: int) -> list[tuple[tuple[str, str] | None, Text]]:
        """One line per cause, as many as `rows` hold (the last says how many more): the badge, the title cut
        to fit, where, and the rule id whole."""
        shown = self.findings if len(self.findings) <= rows else self.findings[:max(0, rows - 1)]
        out: list[tuple[tuple[str, str] | None, Text]] = []
        for index, finding in enumerate(shown):
            out.append((finding.key, self._head(finding, width, "▸ ", self.has_focus and index == self.cursor)))
        more = len(self.findings) - len(shown)
        if more:
            out.append((None, _more_line(more)))
        return out

    def _head(self, finding: Finding, width: int, marker: str, selected: bool) -> Text:
        """`▸ ▲ WARN title · where · 12 s [rule-id]`: the title is cut to fit, the rule id is kept whole."""
        badge, style = _badge(finding.severity)
        clearing = finding.clearing(self.now)
        head = Text(marker, style="reverse" if selected else "")
        head.append(badge, style=style)
        tail = data(f" · {finding.scope}", palette.DIM if clearing else "") if finding.scope else Text()
        tail.append(_quiet(finding, self.now), style=palette.DIM)
        tail.append_text(data(f" [{finding.id}]", palette.DIM))  # a recording's finding names its own id
        title = data(f" {finding.title}", palette.DIM if clearing else "bold")
        title.truncate(max(1, width - head.cell_len - tail.cell_len), overflow="ellipsis")
        head.append_text(title)
        head.append_text(tail)
        head.truncate(max(1, width), overflow="ellipsis")
        return head

    def _finding_rows(self, finding: Finding, width: int, selected: bool) -> list[tuple[tuple[str, str], Text]]:
        open_ = finding.key in self.expanded
        head = self._head(finding, width, "▾ " if open_ else "▸ ", selected)
        evidence = evidence_lines(finding, self.now)
        room = width - head.cell_len
        if not open_ and evidence and room > 3:  # what is left of the line, never the rule id's cells
            seen = data(f"  {evidence[0]}", "dim italic" if finding.clearing(self.now) else "italic")
            seen.truncate(room, overflow="ellipsis")
            head.append_text(seen)
        rows = [(finding.key, head)]
        if open_:
            for label, style, lines in (("seen", palette.INFO_STRONG, evidence),
                                        ("fix", palette.OK_STRONG, finding.fix)):
                for line in lines:
                    rows += [(finding.key, row) for row in _hanging(label, style, line, width)]
        return rows


def _more_line(more: int) -> Text:
    return Text(f"  +{more} more · a opens them all", style=palette.DIM)


def _hanging(label: str, style: str, text: str, width: int) -> list[Text]:
    """`   seen  text…` wrapped so continuation lines start under the text, not under the label."""
    indent = 9
    parts = textwrap.wrap(text, max(10, width - indent)) or [""]
    out = [Text.assemble((f"   {label:<6}", style), data(parts[0]))]
    out += [Text(" " * indent).append_text(data(part)) for part in parts[1:]]
    return out


def _clip(text: str, cells: int) -> str:
    """`text` within `cells`, an ellipsis where it was cut. Sliced to cells + 1 characters first (a character takes
    at least one cell, bar zero-width marks the rules' names do not have): Text.truncate then measures a few dozen
    cells, not the ~600 of every rule's name, each tick."""
    if cells <= 0:
        return ""
    clipped = Text(text[:cells + 1])
    clipped.truncate(cells, overflow="ellipsis")
    return clipped.plain
