"""The config file (~/.config/hwtop/config.toml, or --config FILE): the refresh interval, the theme, panels to
hide, and the advice thresholds. Unknown keys are refused by name; the command line wins over the file.

    [ui]
    interval = 0.5
    theme = "light"            # dark | light | mono (mono also when NO_COLOR is set)
    hide = ["disks"]           # any of: cpu memory disks gpu advice processes

    [advice.thresholds]
    data_wait_fraction = 0.4
    [advice.hold_s]
    gpu-starved = 10
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hwtop.advice.thresholds import Thresholds, tomllib
from hwtop.advice.thresholds import load as load_thresholds

THEMES = {"dark": "textual-dark", "light": "textual-light", "mono": "textual-dark"}
PANELS = ("cpu", "memory", "disks", "gpu", "advice", "processes")


@dataclass(slots=True)
class Config:
    thresholds: Thresholds = field(default_factory=Thresholds)
    interval: float | None = None
    theme: str | None = None
    hide: tuple[str, ...] = ()
    path: str | None = None


def default_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "hwtop", "config.toml")


def load(path: str | None) -> Config:
    """The config of `path` (which must exist), or of the default path when it exists. ValueError names the file
    and what is wrong."""
    if path is not None and not os.path.isfile(path):
        raise ValueError(f"config file not found: {path}")
    path = path or default_path()
    if not os.path.isfile(path):
        return Config()
    if os.geteuid() == 0 and os.stat(path).st_mode & 0o022:
        # Anyone who can write it could steer a root process: refuse it, say so, run with the defaults.
        print(f"hwtop: warning: {path} is group- or world-writable and hwtop runs as root: ignored "
              f"(chmod go-w {path})", file=sys.stderr)
        return Config()
    thresholds = load_thresholds(path)
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{path}: {error}") from None
    unknown = set(data) - {"ui", "advice"}
    if unknown:
        raise ValueError(f"{path}: unknown table(s) {', '.join(sorted(unknown))} (known: ui, advice)")
    ui = data.get("ui", {})
    if not isinstance(ui, dict):
        raise ValueError(f"{path}: [ui] must be a table")
    extra = set(ui) - {"interval", "theme", "hide"}
    if extra:
        raise ValueError(f"{path}: unknown [ui] key(s) {', '.join(sorted(extra))} (known: interval, theme, hide)")
    interval = ui.get("interval")
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int | float)
                                 or not 0 < interval <= 3600):
        raise ValueError(f"{path}: [ui] interval must be a number of seconds in (0, 3600]")
    theme = ui.get("theme")
    if theme is not None and theme not in THEMES:
        raise ValueError(f"{path}: [ui] theme must be one of {', '.join(THEMES)}")
    hide = ui.get("hide", [])
    if not isinstance(hide, list) or any(name not in PANELS for name in hide):
        raise ValueError(f"{path}: [ui] hide takes a list of: {', '.join(PANELS)}")
    return Config(thresholds, None if interval is None else float(interval), theme, tuple(hide), path)
