"""Signalling a process the user chose: who owns it, whether this user may signal it, and the signal itself.
Nothing here runs without the user's confirmation (tui/signal_dialog.py asks first)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    pid: int
    start_ticks: int  # with the pid, names exactly this process (a reused pid is a different one)
    user: str
    uid: int
    command: str


def describe(pid: int, root: str = "/") -> Target | None:
    """The process as it is now, or None when it has gone."""
    from hwtop.probes.processes import parse_stat, user_name

    base = os.path.join(root, "proc", str(pid))
    try:
        with open(f"{base}/stat", encoding="utf-8", errors="replace") as handle:
            stat = parse_stat(handle.read())
        uid = os.stat(base).st_uid
        with open(f"{base}/cmdline", "rb") as handle:
            command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip() or f"[{stat.name}]"
    except (OSError, ValueError, IndexError):
        return None
    return Target(pid, stat.start_ticks, user_name(uid), uid, command)


def may_signal(target: Target) -> str | None:
    """Why this user may not signal the target, or None when it may (root, or the same user)."""
    if target.pid in (0, 1) or target.pid == os.getpid():
        return f"pid {target.pid} is {'init' if target.pid == 1 else 'hwtop itself'}: hwtop does not signal it"
    euid = os.geteuid()
    if euid != 0 and euid != target.uid:
        return f"pid {target.pid} belongs to {target.user}: only {target.user} or root may signal it"
    return None


def send(target: Target, sig: int = signal.SIGTERM, root: str = "/") -> str:
    """Signals the target if it is still the same process; says what happened, in one line."""
    current = describe(target.pid, root)
    if current is None or current.start_ticks != target.start_ticks:
        return f"pid {target.pid} has already exited: nothing was sent"
    refusal = may_signal(current)
    if refusal:
        return refusal
    try:
        os.kill(target.pid, sig)
    except ProcessLookupError:
        return f"pid {target.pid} has already exited: nothing was sent"
    except PermissionError:
        return f"not permitted to signal pid {target.pid} ({target.user})"
    return f"sent {signal.Signals(sig).name} to pid {target.pid} ({target.user}: {target.command[:60]})"
