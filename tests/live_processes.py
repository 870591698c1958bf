"""The tests' own view of this machine's live process tree, read from /proc apart from hwtop's probes: what a test
kills at its end (torchrun starts each rank in a session of its own) and where it finds a job's ranks."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def descendants(root: int) -> list[int]:
    """Every live process under `root`, children before their own children."""
    parent_of = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                text = Path(f"/proc/{name}/stat").read_text()
                parent_of[int(name)] = int(text[text.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, todo = [], [root]
    while todo:
        current = todo.pop()
        children = [pid for pid, parent in parent_of.items() if parent == current]
        out += children
        todo += children
    return out


def kill_tree(root: int) -> None:
    """SIGKILL to `root` and everything under it: torchrun starts each rank in a session of its own, so a process
    group is not enough."""
    for pid in [root, *descendants(root)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
