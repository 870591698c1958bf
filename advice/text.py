"""Numbers as the evidence lines print them (headless: no Rich, no widgets)."""

from __future__ import annotations

from hwtop.probes.sysfs import format_cpulist


def gib(value: float | None) -> str:
    return "N/A" if value is None else f"{value / (1 << 30):.1f} GiB"


def rate(value: float | None) -> str:
    if value is None:
        return "N/A"
    return f"{value / 1e9:.2f} GB/s" if value >= 1e9 else f"{value / 1e6:.0f} MB/s"


def percent(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.0f}%"


def cpus(values: tuple[int, ...] | list[int]) -> str:
    return format_cpulist(sorted(values)) or "none"


def command(name: str, cmdline: str | None, width: int = 48) -> str:
    text = cmdline or name
    return text if len(text) <= width else text[: width - 1] + "…"
