"""The main screen's panels, in one list: the screen composes them from it (where each sits: the top row's left
column, beside it, or the full width), hands each the frame and asks each for its rows (widgets/panel.py's
shape), the row budget (tui/layout.py) shares the rows out by the same names, the stylesheet draws every one
with the `panel` class's border, and the config file's `ui.hide` takes the same names (model/panels.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from hwtop.model.frame import Frame
from hwtop.model.panels import PANELS
from hwtop.widgets.advice import AdvicePanel
from hwtop.widgets.cpu import CpuPanel
from hwtop.widgets.disks import DisksPanel
from hwtop.widgets.gpu import GpuPanel
from hwtop.widgets.memory import MemoryPanel
from hwtop.widgets.network import NetworkPanel
from hwtop.widgets.panel import TextPanel
from hwtop.widgets.processes import ProcessTable

MainPanel = TextPanel | ProcessTable  # each takes a frame, wants rows at a width and draws in its share
Place = Literal["left", "right", "full"]  # the top row's left column, the top row's right, the full width


class Slot(msgspec.Struct, frozen=True):
    name: str
    make: Callable[[], MainPanel]  # the panel, with its id (its name) and the classes its first frame finds
    place: Place = "full"
    needed: Callable[[Frame], bool] | None = None  # made with the first frame this says needs it; None: at start
    fills: bool = False  # takes the rows the others leave (the process table)

    @property
    def hideable(self) -> bool:
        return self.name in PANELS


def _workload() -> MainPanel:
    """Made on the first frame with a workload (the embedded job, a demo's story): a box without one never
    imports, composes or styles it."""
    from hwtop.widgets.workload import WorkloadPanel

    return WorkloadPanel(id="workload", classes="panel")


def _has_workload(frame: Frame) -> bool:
    return frame.snapshot.workload is not None


SLOTS = (
    Slot("cpu", lambda: CpuPanel(id="cpu", classes="panel"), "left"),
    Slot("memory", lambda: MemoryPanel(id="memory", classes="panel"), "right"),
    Slot("disks", lambda: DisksPanel(id="disks", classes="panel"), "left"),
    Slot("gpu", lambda: GpuPanel(id="gpu", classes="panel")),
    # quiet, empty: as the first frame finds them, mostly (no restyle before it is drawn)
    Slot("network", lambda: NetworkPanel(id="network", classes="panel quiet")),
    Slot("workload", _workload, needed=_has_workload),
    Slot("advice", lambda: AdvicePanel(id="advice", classes="panel empty")),
    Slot("processes", lambda: ProcessTable(id="processes"), fills=True),
)
NAMES = tuple(slot.name for slot in SLOTS)
