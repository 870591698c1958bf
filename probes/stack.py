"""The Python stack of a process, on demand, through py-spy (`py-spy dump --pid`). Never per tick: attaching
stops the target for a moment. When it cannot be read, the message says exactly what is missing."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class StackDump:
    pid: int
    text: str | None
    message: str | None  # why there is no text


def _ptrace_scope(root: str = "/") -> str | None:
    try:
        with open(f"{root.rstrip('/')}/proc/sys/kernel/yama/ptrace_scope") as handle:
            return handle.read().strip()
    except OSError:
        return None


def find_py_spy() -> str | None:
    """py-spy on PATH, or beside this interpreter (a virtualenv's bin/ that is not on PATH)."""
    import os
    import sys

    found = shutil.which("py-spy")
    if found is None:
        beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
        found = beside if os.access(beside, os.X_OK) else None
    return found


MISSING = "py-spy is not installed: pip install py-spy (or pip install 'hwtop[stack]')"


def explain(pid: int, returncode: int, output: str) -> str:
    """One line saying why py-spy read no stack: ptrace refused (and what to run to allow it), the process gone,
    or py-spy's own first line."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith("py-spy> ")]
    first = lines[0] if lines else f"exit {returncode}"
    cause = next((line.split(":", 1)[-1].strip() for line in lines if "denied" in line.lower() or
                  "not permitted" in line.lower()), None)
    if cause and cause not in first:
        first = f"{first} ({cause})"
    lowered = output.lower()
    if "permission denied" in lowered or "operation not permitted" in lowered or "ptrace" in lowered:
        scope = _ptrace_scope()
        allow = ("; or allow it for this user: sudo sysctl kernel.yama.ptrace_scope=0" if scope not in (None, "0")
                 else "")
        return (f"ptrace not permitted for pid {pid}: run hwtop as root or as the job's user; in a container start "
                f"it with --cap-add SYS_PTRACE{allow}"
                + (f" (kernel.yama.ptrace_scope = {scope})" if scope is not None else "")
                + f" — py-spy said: {first}")
    if "no such process" in lowered or "failed to open process" in lowered:
        return f"pid {pid} is gone — py-spy said: {first}"
    return f"no Python stack for pid {pid} — py-spy said: {first}"


def dump(pid: int, py_spy: str | None = None) -> StackDump:
    import os

    if not os.path.exists(f"/proc/{pid}"):
        return StackDump(pid, None, f"pid {pid} is gone (no such process)")
    tool = py_spy or find_py_spy()
    if tool is None:
        return StackDump(pid, None, MISSING)
    try:
        done = subprocess.run([tool, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return StackDump(pid, None, f"py-spy did not answer within {TIMEOUT_S:.0f} s")
    except OSError as error:
        return StackDump(pid, None, f"py-spy could not run: {error.strerror}")
    if done.returncode == 0 and done.stdout.strip():
        return StackDump(pid, done.stdout.rstrip(), None)
    return StackDump(pid, None, explain(pid, done.returncode, (done.stderr or done.stdout).strip()))
