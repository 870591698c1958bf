"""One line per busy network port: kind, link rate, RX and TX as % of the line rate and in B/s, NUMA node and the
nearest GPU; the quiet ports folded into one `+N quiet` line, as the disks panel folds its quiet disks."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.text import Text

from hwtop.advice.judge import port_busy
from hwtop.advice.thresholds import Thresholds
from hwtop.model.safe_text import printable
from hwtop.model.snapshot import NicSnapshot
from hwtop.widgets import palette
from hwtop.widgets.format import human_rate, level_style, pct
from hwtop.widgets.panel import TextPanel, View, Want
from hwtop.widgets.safe_text import data

ROWS_PER_PORT_LINE = 12  # a port line per 12 rows of terminal: 2 at 36 rows, 5 at 60; GPUs and disks come first
ONE_LINE_BELOW = 32  # rows: on a shorter terminal the panel is one bare line, its busiest port and the rest folded
KIND_LABEL = {"infiniband": "IB", "roce": "RoCE", "ethernet": "Eth", "virtual": "virt", "loopback": "lo"}
WIDE = 84  # from this width a line names the NUMA node and GPU in words and the port's interface
COLUMN = 84  # a wide port line with its place, and a gap: two side by side from 2 x COLUMN (a 200-column terminal)


def port_label(nic: NicSnapshot) -> str:
    """mlx5_0 for an HCA's first port, mlx5_0/2 for another; an interface by its name."""
    return nic.name if nic.port in (None, 1) else f"{nic.name}/{nic.port}"


def kind_label(nic: NicSnapshot) -> str:
    if nic.kind == "infiniband" and nic.port is None:
        return "IPoIB"  # the IP interface of an IB port (ib0)
    return KIND_LABEL.get(nic.kind, nic.kind[:5])


def line_percent(rate: float | None, speed_gbps: float | None) -> float | None:
    """A rate in bytes/s as a share of a link in Gb/s (both directions are full-duplex: each against the line)."""
    if rate is None or not speed_gbps:
        return None
    return 100.0 * rate * 8 / (speed_gbps * 1e9)


def fit_name(name: str, width: int) -> str:
    """A name cut to `width` terminal cells keeping its end, where ports of one card differ: enp225s0f1 →
    enp22…f1. Made printable first, and measured in cells, not characters: a wide character (CJK, an emoji) takes
    two. A tab (which printable keeps, and a recording may carry) would widen the cell: shown as ␉."""
    name = printable(name).replace("\t", "\N{SYMBOL FOR HORIZONTAL TABULATION}")
    if cell_len(name) <= width:
        return name
    end = name[-2:]
    return set_cell_size(name, max(0, width - 1 - cell_len(end))) + "…" + end


def link_text(speed_gbps: float | None) -> str:
    """200Gb/s, 2.5Gb/s, 100Mb/s: at most seven characters whatever a recording says."""
    if speed_gbps is None:
        return "N/A"
    if speed_gbps < 1:
        return f"{max(1.0, speed_gbps * 1000):.0f}Mb/s"
    return f"{min(speed_gbps, 9999):.4g}Gb/s"


def busy(nic: NicSnapshot, t: Thresholds) -> bool:
    """Not quiet: more than an idle fabric's own traffic (kB/s), the network rules' `network_idle_bytes_per_s`."""
    return port_busy(nic, t)


def candidates(nics: tuple[NicSnapshot, ...]) -> tuple[NicSnapshot, ...]:
    """The ports the panel is about: the physical ones; where there is none (a container's veth eth0), the virtual
    ones; loopback never."""
    physical = tuple(n for n in nics if n.physical)
    return physical or tuple(n for n in nics if n.kind == "virtual")


def shown_ports(nics: tuple[NicSnapshot, ...], rows: int, t: Thresholds,
                per_line: int = 1) -> tuple[tuple[NicSnapshot, ...], int]:
    """The busy ports that fit `rows` lines of `per_line` ports, one line left for saying how many more there are
    when they do not all fit (the busiest kept, in their own order), and how many are folded."""
    ports = candidates(nics)
    busy_ports = [i for i, n in enumerate(ports) if busy(n, t)]
    cells = rows * per_line
    keep = max(1, (rows - 1) * per_line) if len(busy_ports) >= cells else len(busy_ports)
    kept = sorted(busy_ports, key=lambda i: -max(ports[i].rx_bytes_per_s or 0.0, ports[i].tx_bytes_per_s or 0.0))
    shown = tuple(ports[i] for i in sorted(kept[:keep]))
    return shown, len(ports) - len(shown)


def port_line(nic: NicSnapshot, width: int) -> Text:
    name_width = 11 if width >= WIDE else 8
    line = data(f"{set_cell_size(fit_name(port_label(nic), name_width), name_width)} ", "bold")  # untrusted name
    line.append(f"{kind_label(nic):<5}", style=palette.DIM)
    line.append(f"{link_text(nic.speed_gbps):>9}")
    for arrow, rate in (("rx", nic.rx_bytes_per_s), ("tx", nic.tx_bytes_per_s)):
        share = line_percent(rate, nic.speed_gbps)
        share = None if share is None else min(share, 999.0)  # a link that misreports its speed: no wide cell
        line.append(f" {arrow}")
        line.append(pct(share, 5), style=level_style(share))
        line.append(f" {human_rate(rate):>9}")
    if nic.state not in (None, "up", "active", "unknown") and line.cell_len + 9 <= width:
        line.append_text(data(f" {fit_name(nic.state, 8)}", palette.CRIT))  # down, init, polling…
    place = []
    if width >= WIDE:
        place.append(f"node {nic.numa_node}" if nic.numa_node is not None else "node N/A")
        place.append(f"near GPU{nic.nearest_gpu}" if nic.nearest_gpu is not None else "")
        if nic.netdev:
            place.append(f"({fit_name(nic.netdev, 16)})")
    else:
        place.append(f"N{nic.numa_node}" if nic.numa_node is not None else "")
        place.append(f"G{nic.nearest_gpu}" if nic.nearest_gpu is not None else "")
    tail = data(" " + " ".join(p for p in place if p), palette.DIM)  # netdev is an interface name too
    if tail.plain.strip() and line.cell_len + tail.cell_len <= width:
        line.append_text(tail)
    return line


class NetworkPanel(TextPanel):
    """With a busy port, a bordered panel of port lines; with every port quiet, one bare line (class `quiet`, as
    the advice pane's `empty`), so an idle network costs the screen one row."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.nics: tuple[NicSnapshot, ...] = ()
        self.rows: int | None = None
        self.quiet = True
        self.thresholds = Thresholds()  # the session's (a config file's), given with each frame
        self.border_title = "Network"

    def show(self, nics: tuple[NicSnapshot, ...], rows: int | None = None,
             thresholds: Thresholds | None = None) -> None:
        """`rows`: port lines the screen's row budget allows, 0 for the one bare line (None: the terminal's height
        decides); `thresholds`: those the network rules judge a port idle by."""
        self.nics = nics
        self.thresholds = thresholds or self.thresholds
        self.rows = rows if rows is not None else self._rows()
        quiet = self.rows == 0 or not any(busy(n, self.thresholds) for n in candidates(nics))
        if quiet != self.quiet:
            self.quiet = quiet
            self.set_class(quiet, "quiet")
        if not self.same_as_shown((nics, self.rows)):
            self.changed()

    def take(self, view: View) -> None:
        self.nics, self.thresholds = view.frame.snapshot.nics, view.thresholds

    def want(self, width: int) -> Want | None:
        """Every busy port (two a line where wide) and the quiet ones folded (most); the busiest and `+N` (folded);
        one bare line naming the busiest (least). Every port quiet: that one bare line. No port known (a recording
        from before the network): not on the screen."""
        t = self.thresholds
        ports = candidates(self.nics)
        if not ports:
            return None
        if not any(busy(n, t) for n in ports):
            return Want.fixed(1, frame=0)
        per_line = 2 if width >= 2 * COLUMN else 1
        shown, folded = shown_ports(self.nics, len(ports) + 1, t, per_line)
        most = -(-len(shown) // per_line) + (1 if folded or not shown else 0)
        return Want(most, min(most, 2), 1, bare_line=True)

    def draw(self, rows: int) -> None:
        self.show(self.nics, rows if rows > 1 else 0, self.thresholds)  # 0: one bare line

    def _rows(self) -> int | None:
        try:
            height = self.app.size.height
        except Exception:  # noqa: BLE001 - no app
            return None
        return 0 if height < ONE_LINE_BELOW else max(1, height // ROWS_PER_PORT_LINE)

    def lines(self, width: int) -> list[Text]:
        ports = candidates(self.nics)
        if not ports:
            return [Text.assemble(("Network ", "bold"), ("no network ports", palette.DIM))]
        rows = len(ports) if self.rows is None else self.rows
        if rows == 0:
            return [one_line(self.nics, width, self.thresholds)]
        per_line = 2 if width >= 2 * COLUMN else 1
        shown, folded = shown_ports(self.nics, rows, self.thresholds, per_line)
        if per_line == 1:
            out = [port_line(nic, width) for nic in shown]
        else:
            half = (width - 2) // 2
            out = []
            for i in range(0, len(shown), 2):
                line = port_line(shown[i], half)
                if i + 1 < len(shown):
                    line.pad_right(half + 2 - line.cell_len)
                    line.append_text(port_line(shown[i + 1], half))
                out.append(line)
        if folded or not shown:
            out.append(quiet_line(self.nics, shown, folded, width, self.thresholds))
        if not shown:  # one bare line, no border: it names itself
            out[0] = Text.assemble(("Network ", "bold"), out[0])
        return out


def quiet_line(nics: tuple[NicSnapshot, ...], shown: tuple[NicSnapshot, ...], folded: int, width: int,
               t: Thresholds) -> Text:
    """`+N quiet` (every port quiet: `N ports quiet`), with the kinds folded and, where it fits, their names."""
    ports = [n for n in candidates(nics) if n not in shown]
    kinds: dict[str, int] = {}
    for nic in ports:
        kinds[kind_label(nic)] = kinds.get(kind_label(nic), 0) + 1
    quieter = any(busy(n, t) for n in ports)  # busy ports the room could not hold are folded too
    head = (f"+{folded} {'quieter' if quieter else 'quiet'}" if shown
            else f"{folded} port{'s' if folded != 1 else ''} quiet")
    line = Text(head, style=palette.DIM)
    if kinds:
        line.append(" (" + ", ".join(f"{count} {kind}" for kind, count in kinds.items()) + ")", style=palette.DIM)
    down = sum(1 for n in ports if n.state in ("down", "lowerlayerdown"))
    if down:
        line.append(f" {down} down", style=palette.WARN)
    names = " ".join(fit_name(port_label(n), 24) for n in ports)
    if width >= WIDE and line.cell_len + cell_len(names) + 2 <= width:
        line.append_text(data(": " + names, palette.DIM))
    return line


def one_line(nics: tuple[NicSnapshot, ...], width: int, t: Thresholds) -> Text:
    """The whole network in one line for a short terminal: its busiest port, if any is busy, and the rest folded
    (`+N quiet (…)` where it fits, else `+N`)."""
    shown, folded = shown_ports(nics, 1, t)
    line = Text("Network ", style="bold")
    if not shown:
        return line.append_text(quiet_line(nics, (), folded, width - line.cell_len, t))
    port = port_line(shown[0], width - line.cell_len)
    rest = quiet_line(nics, shown, folded, 0, t) if folded else Text()
    if rest.cell_len and line.cell_len + port.cell_len + 1 + rest.cell_len > width:
        rest = Text(f"+{folded}", style=palette.DIM)
        port = port_line(shown[0], width - line.cell_len - rest.cell_len - 1)
    line.append_text(port)
    if rest.cell_len:
        line.append(" ")
        line.append_text(rest)
    line.truncate(width, overflow="ellipsis")  # one row it is: under 67 columns the TX figure gives way
    return line
