"""Prometheus text exposition (format 0.0.4), written as dcgm-exporter writes it.

prometheus-client's writer renames every counter to `<name>_total`, so `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`
could not be typed `counter` under its own name; this writer keeps names, label order and types as given. Label
values are escaped (backslash, quote, newline), so text from the machine cannot forge a line."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Kind = Literal["gauge", "counter"]


@dataclass(slots=True)
class Family:
    """One metric: its HELP and TYPE lines and its samples, each a tuple of label values in `labels` order."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    kind: Kind = "gauge"
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)

    def add(self, values: Sequence[str], value: float) -> None:
        if len(values) != len(self.labels):
            raise ValueError(f"{self.name}: {len(values)} label values for {len(self.labels)} labels")
        self.samples.append((tuple(values), float(value)))


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def number(value: float) -> str:
    """Whole numbers without a fraction (FB_USED 40960, as dcgm-exporter prints it), the rest to 15 significant
    digits, all a double holds exactly: a ratio computed as 72.44 / 100 reads 0.7244, not 0.7243999999999999."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    rounded = float(f"{value:.15g}")
    return repr(rounded if not math.isinf(rounded) else value)  # the largest doubles would round past the range


def render(families: Iterable[Family]) -> bytes:
    lines: list[str] = []
    for family in families:
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for values, value in family.samples:
            labels = ",".join(f'{k}="{_escape_label(v)}"' for k, v in zip(family.labels, values, strict=True))
            lines.append(f"{family.name}{{{labels}}} {number(value)}" if labels else f"{family.name} {number(value)}")
    return ("\n".join(lines) + "\n").encode() if lines else b""
