"""The monitor's panels a user may hide, by name: the config file's `ui.hide` takes these (session/config_file.py),
and the main screen's one list of panels (tui/panels.py) is held to them. Every panel of the main screen but the
workload's, which is drawn only while there is a workload."""

from __future__ import annotations

from typing import Literal, get_args

Panel = Literal["cpu", "memory", "disks", "gpu", "network", "advice", "processes"]
PANELS: tuple[Panel, ...] = get_args(Panel)
