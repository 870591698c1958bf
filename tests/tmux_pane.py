"""This checkout's `hwtop` in a tmux pane, for what a user sees in a real terminal (the slow tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tmux(*args: str) -> str:
    """tmux's answer on stdout ('' where the command failed, as for a session already gone)."""
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def hwtop_command(args: str, config_home: Path, then: str = "") -> str:
    """The pane's shell line: `hwtop ARGS` from this checkout with its own config home, then `then`, then a pause
    that keeps the pane (and its last screen) for capture-pane. `-u COLUMNS -u LINES`: a tmux server started under
    pytest hands its panes COLUMNS=80, which Textual believes."""
    return (f"env -u COLUMNS -u LINES PYTHONPATH={ROOT} XDG_CONFIG_HOME={config_home} {sys.executable} -m hwtop "
            f"{args}; {then}sleep 30")
