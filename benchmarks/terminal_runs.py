"""Shared by overhead.py and bandwidth.py: run a monitor in a real terminal (a tmux pane), let it settle, then
measure its own CPU time, its peak RSS and the bytes it writes to the terminal over a steady-state window."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from functools import cache

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# this checkout's hwtop, not whichever one is installed (an editable install may point at another checkout)
HWTOP = ["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "hwtop"]


@dataclass(frozen=True, slots=True)
class Measurement:
    name: str
    cpu_percent: float  # of one core, the monitor's process and the helpers it reaped
    peak_rss_mib: float
    bytes_per_s: float  # written to the terminal
    main_thread_percent: float | None = None  # of one core, the process's first thread (Textual's event loop, for a
    # Textual app: where it renders); the rest is its other threads (a sampler, Textual's input and output threads)


def compile_checkout() -> None:
    """Byte-compiles this checkout first, as `pip install` does for a user: with PYTHONDONTWRITEBYTECODE set (as on
    this box) or a fresh clone, every start would otherwise compile hwtop's sources again (~0.1 s of first frame)."""
    import compileall
    import re

    compileall.compile_dir(ROOT, quiet=1, rx=re.compile(r"/(\.git|build|\.venv)/"))


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True).stdout


def _cpu_ticks(pid: int, children_only: bool = False) -> int:
    """utime + stime, and cutime + cstime: a helper process the monitor ran and reaped (py-cpuinfo's used to
    cost 1.3 s) is the monitor's cost too."""
    with open(f"/proc/{pid}/stat") as handle:
        rest = handle.read().rsplit(")", 1)[1].split()
    return int(rest[13]) + int(rest[14]) + (0 if children_only else int(rest[11]) + int(rest[12]))


class _Timespec(ctypes.Structure):
    _fields_ = [("seconds", ctypes.c_long), ("nanoseconds", ctypes.c_long)]


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def process_cpu_clock(pid: int) -> float | None:
    """Seconds of CPU the process has used, all its threads, from the kernel's per-process CPU clock
    (clock_getcpuclockid + clock_gettime): nanoseconds, where /proc's utime + stime come in 10 ms ticks (over
    60 s at ~0.8 % CPU, ~48 ticks: a ±2 % step). None where the clock cannot be read. On this box the two
    agree over the same 30 s windows (0.212 s against 0.22 s), and with perf stat's task-clock (252.09 ms
    against 0.247 s): ctypes to libc rather than perf, which needs a binary and a permissive
    perf_event_paranoid."""
    libc = _libc()
    if libc is None:
        return None
    clock, spec = ctypes.c_int(), _Timespec()
    if libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0 or \
            libc.clock_gettime(clock, ctypes.byref(spec)) != 0:
        return None
    return spec.seconds + spec.nanoseconds / 1e9


def thread_run_seconds(pid: int, tid: int) -> float | None:
    """Seconds one thread has run, from the scheduler's own account (/proc/PID/task/TID/schedstat, ns): where the
    process's CPU goes by thread, e.g. a Textual app's event loop against its input thread."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
            return int(handle.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _cpu_seconds(pid: int, seconds: float) -> tuple[float, float]:
    """(CPU seconds the monitor used, wall seconds) over a window of `seconds`: its CPU clock where it can be
    read, else /proc's ticks; helpers it ran and reaped are added from /proc either way."""
    start, children, clock = time.monotonic(), _cpu_ticks(pid, children_only=True), process_cpu_clock(pid)
    ticks = _cpu_ticks(pid)
    time.sleep(seconds)
    elapsed = time.monotonic() - start
    now = process_cpu_clock(pid)
    if clock is not None and now is not None:
        return now - clock + (_cpu_ticks(pid, children_only=True) - children) / CLOCK_TICKS, elapsed
    return (_cpu_ticks(pid) - ticks) / CLOCK_TICKS, elapsed


def cpu_method() -> str:
    """How CPU time is measured on this machine, for the benchmark's header."""
    if process_cpu_clock(os.getpid()) is not None:
        return "the kernel's per-process CPU clock (ns), plus reaped helpers from /proc"
    return "/proc utime + stime in 10 ms ticks"


def _peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peers(refresh: float = 1.0) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The monitors to compare, each at the same refresh, as installed here (name → argv, extra env)."""
    found: dict[str, tuple[list[str], dict[str, str]]] = {}
    if shutil.which("btop"):
        config = tempfile.mkdtemp(prefix="bench-btop-")
        os.makedirs(os.path.join(config, "btop"))
        with open(os.path.join(config, "btop", "btop.conf"), "w") as handle:
            handle.write(f"update_ms = {int(refresh * 1000)}\n")
        found["btop"] = (["btop"], {"XDG_CONFIG_HOME": config})
    if shutil.which("htop"):
        found["htop"] = (["htop", "-d", str(int(refresh * 10))], {})
    if shutil.which("glances"):
        found["glances"] = (["glances", "-t", f"{refresh:g}", "--disable-webui"], {})
    if shutil.which("top"):
        found["top"] = (["top", "-d", f"{refresh:g}"], {})
    found["hwtop"] = ([*HWTOP, "--interval", f"{refresh:g}"], {})
    return found


# The floor under any Textual monitor: a bare Textual app that redraws one line a second.
FLOOR_APP = """
from textual.app import App
from textual.widgets import Static
class Floor(App):
    ticks = 0
    def compose(self):
        yield Static("FLOOR 0")
    def on_mount(self):
        self.set_interval(1.0, self.tick)
    def tick(self):
        self.ticks += 1
        self.query_one(Static).update(f"FLOOR {self.ticks}")
Floor().run()
"""


def floor_app() -> list[str]:
    """argv of the floor app (its script is written once per process, left for the OS's /tmp cleaning)."""
    path = os.path.join(tempfile.gettempdir(), f"bench-floor-{os.getpid()}.py")
    if not os.path.exists(path):
        with open(path, "w") as handle:
            handle.write(FLOOR_APP)
    return [sys.executable, path]


def measure(name: str, argv: list[str], env: dict[str, str], seconds: float, warmup: float = 6.0,
            size: tuple[int, int] = (200, 50), keys: str | None = None) -> Measurement:
    """`keys`: typed into the pane half-way through the warm-up (`j` opens the job view)."""
    session = f"bench-{uuid.uuid4().hex[:8]}"
    capture = tempfile.NamedTemporaryFile(prefix="bench-pane-", delete=False)
    capture.close()
    environment = " ".join(f"{k}={v}" for k, v in env.items())
    command = (f"env {environment} " if environment else "") + " ".join(argv)
    pane = ""
    for _ in range(5):  # a tmux server that was just killed refuses a new session for a moment
        tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]), command)
        pane = tmux("display", "-p", "-t", session, "#{pane_pid}").strip()
        if pane:
            break
        time.sleep(1.0)
    if not pane:
        raise RuntimeError(f"tmux did not start {name}")
    try:
        pid = int(pane)
        if environment:  # `env` execs the monitor: same pid, once it has
            time.sleep(0.2)
        if keys:
            time.sleep(warmup / 2)
            tmux("send-keys", "-t", session, keys)
            time.sleep(warmup / 2)
        else:
            time.sleep(warmup)
        tmux("pipe-pane", "-t", session, "-o", f"cat >> {capture.name}")
        size_before = os.path.getsize(capture.name)
        main_before = thread_run_seconds(pid, pid)
        cpu, elapsed = _cpu_seconds(pid, seconds)
        main_after = thread_run_seconds(pid, pid)
        written = os.path.getsize(capture.name) - size_before
        main = None if main_before is None or main_after is None else 100.0 * (main_after - main_before) / elapsed
        return Measurement(name, 100.0 * cpu / elapsed, _peak_rss_mib(pid), written / elapsed, main)
    finally:
        tmux("kill-session", "-t", session)
        os.unlink(capture.name)


def ratio(a: float, b: float | None) -> str:
    return "N/A" if not b else f"{a / b:.2f}x"
