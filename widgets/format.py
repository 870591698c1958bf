"""Text helpers shared by the widgets: human units, bars and sparklines as Rich Text.

The units rule, the same in every view: memory (RAM, VRAM, swap, RSS/PSS, a cgroup's or a NUMA node's memory) is
counted in binary units, as nvidia-smi, free and htop count it, and a cell too narrow for "GiB" writes the letter
alone (`23.5G` is 23.5 GiB). Rates (disks, PCIe, NVLink, a job's reads and writes) are SI, as the PCIe and NVLink
specifications and disk makers state them, and always carry their `B/s` (`1.2GB/s` is 1.2 x 10^9 bytes a
second). A bare letter is therefore always memory, and `B/s` always decimal."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from hwtop.widgets import palette

SPARK = "▁▂▃▄▅▆▇█"
NA = "N/A"


def human_bytes(value: float | None, digits: int = 1) -> str:
    if value is None:
        return NA
    for unit in ("B", "K", "M", "G", "T", "P"):
        # rounded as it will be written, never four integer digits: 1020 KiB is 1.0M, never 1020.0K (as rates)
        if abs(round(value, digits if unit != "B" else 0)) < 1000 or unit == "P":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.{digits}f}{unit}"
        value /= 1024
    return f"{value:.1f}P"


def human_rate(value: float | None) -> str:
    """Bytes per second in SI units: 950B/s, 12.3kB/s, 1.2GB/s (see the units rule above)."""
    if value is None:
        return NA
    for unit in ("", "k", "M", "G", "T"):
        # rounded as it will be written: 999.96 kB/s is 1.0MB/s, never 1000.0kB/s
        if abs(round(value, 1 if unit else 0)) < 1000 or unit == "T":
            return f"{value:.0f}B/s" if not unit else f"{value:.1f}{unit}B/s"
        value /= 1000
    return f"{value:.1f}TB/s"


def pct(value: float | None, width: int = 4) -> str:
    return NA.rjust(width) if value is None else f"{value:.0f}%".rjust(width)


def level_style(percent: float | None) -> str:
    if percent is None:
        return palette.DIM
    if percent >= 90:
        return palette.CRIT
    if percent >= 60:
        return palette.WARN
    return palette.OK


def bar(percent: float | None, width: int, segments: Sequence[tuple[float | None, str]] | None = None,
        waiting: tuple[float | None, str] | None = None) -> Text:
    """A bar `width` cells wide; `segments` (percent, style) split it, e.g. user/system; `waiting` (percent,
    style), e.g. iowait, follows them drawn ▒: time that is not busy, shown apart from what is."""
    text = Text()
    if width <= 0:
        return text
    if percent is None:
        return Text("·" * width, style=palette.DIM)
    parts = list(segments) if segments else [(percent, level_style(percent))]
    used = 0
    for value, style in parts:
        if not value:
            continue
        cells = min(width - used, round(width * max(0.0, value) / 100.0))
        if cells > 0:
            text.append("█" * cells, style=style)
            used += cells
    if waiting is not None and waiting[0]:
        cells = min(width - used, round(width * max(0.0, waiting[0]) / 100.0))
        if cells > 0:
            text.append("▒" * cells, style=waiting[1])
            used += cells
    if used < width:
        text.append("░" * (width - used), style=palette.EMPTY)
    return text


def sparkline(values: Sequence[float], width: int, high: float = 100.0) -> Text:
    if width <= 0:
        return Text()
    recent = list(values)[-width:]
    if not high > 0:  # an all-zero series scaled by its own maximum: draw it flat, never divide by zero
        high = 1.0
    top = len(SPARK) - 1
    cells = "".join(SPARK[int(min(1.0, max(0.0, v / high)) * top + 0.5)] for v in recent)
    return Text(cells.rjust(width), style=palette.TREND)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return NA
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    return f"{days}d {hours:02d}:{minutes:02d}" if days else f"{hours:02d}:{minutes:02d}"
