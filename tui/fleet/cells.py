"""The fleet screens' cells. Everything an exporter or Prometheus says (hostnames, GPU models, finding labels,
errors) is someone else's text: shown literal through `data`, and cut so the columns after it stay on screen."""

from __future__ import annotations

from rich.text import Text

from hwtop.fleet.model import HostView
from hwtop.widgets import palette
from hwtop.widgets.format import human_rate, level_style
from hwtop.widgets.safe_text import data

SEVERITY_STYLE = {"critical": palette.BADGE_CRIT, "warning": palette.BADGE_WARN, "info": palette.INFO}
SEVERITY_TEXT = {"critical": palette.CRIT_STRONG, "warning": palette.WARN, "info": palette.INFO}  # in a column
STATUS_WIDTH = 36  # of the status cell: the host screen shows all of it
LABEL_WIDTH = 40  # of an exporter's label in a cell: a 4 KB hostname must not push every column off the screen


def plain(value: object, style: str = "", width: int | None = None) -> Text:
    """Someone else's text, literal (safe_text.data), cut to `width` characters with an ellipsis."""
    text = "" if value is None else str(value)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return data(text, style)


def num(value: float | None, fmt: str = "{:.0f}") -> Text:
    return Text("N/A", style=palette.DIM) if value is None else Text(fmt.format(value))


def gib(used: float, total: float, narrow: bool = False) -> Text:
    if narrow:
        return Text(f"{used / 1024:,.0f}/{total / 1024:,.0f}G")
    return Text(f"{used / 1024:,.0f}/{total / 1024:,.0f} GiB")


def port(view: HostView) -> Text:
    """The host's busiest network port: its name, the bytes it moves (the busier direction) and its share of the
    line, coloured as the other levels are."""
    busiest = view.busiest_port
    if busiest is None:
        return Text("N/A", style=palette.DIM)
    share = None if busiest.line_ratio is None else 100 * busiest.line_ratio
    text = plain(busiest.label, "", 12)
    text.append(f" {human_rate(busiest.busiest)}")
    if share is not None:
        text.append(f" {share:.0f}%", style=level_style(share))
    return text


def finding(view: HostView, width: int = 2 * LABEL_WIDTH) -> Text:
    if not view.up:
        return Text("")
    if not view.hwtop:
        return plain("N/A (dcgm-exporter)", palette.DIM, width)
    top = view.top_finding
    if top is None:
        return plain("no problems seen", palette.OK, width)
    more = f" (+{len(view.findings) - 1})" if len(view.findings) > 1 else ""
    return plain(f"{top.severity.upper()} {top.rule}" + (f" · {top.scope}" if top.scope else "") + more,
                 SEVERITY_STYLE.get(top.severity, ""), width)


def status(view: HostView, width: int = STATUS_WIDTH) -> Text:
    """Short, so the columns after it stay on screen; the host screen shows all of it."""
    if view.error:
        return plain(view.error, palette.CRIT_STRONG, width)
    if view.notes:
        return plain("up · " + "; ".join(view.notes), palette.WARN, width)
    return Text("up", style=palette.OK)


def short_address(address: str) -> str:
    """http://node7:9400/metrics → node7:9400: the scheme and path only when they are not the usual ones."""
    if address.startswith("http://") and address.endswith("/metrics"):
        return address[len("http://"):-len("/metrics")]
    return address


def host_label(view: HostView) -> str:
    """The host's name; one that has not answered yet is named by its address, port included (two exporters on
    one box are two rows that must read apart)."""
    return view.hostname or short_address(view.address)
