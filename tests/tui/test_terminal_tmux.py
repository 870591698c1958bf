"""The real `hwtop` command in a real terminal (tmux): it draws, quits on q, and restores the terminal."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_for(predicate, timeout: float = 20.0) -> bool:
    return wait_until(predicate, timeout, poll=0.2)


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
def test_hwtop_draws_quits_and_restores_terminal(size: tuple[int, int], tmp_path: Path) -> None:
    session = f"hwtop-e2e-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "exit"
    hwtop = shutil.which("hwtop") or f"{sys.executable} -m hwtop"
    command = f"{hwtop} --interval 0.5; echo $? > {marker}; echo HWTOP-EXITED; sleep 30"
    tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]), command)
    try:
        pane = lambda: tmux("capture-pane", "-p", "-t", session)  # noqa: E731
        assert wait_for(lambda: "Processes" in pane() and "%" in pane() and "No GPU shown" in pane()), pane()
        screen = pane()
        assert "CPU" in screen and "Memory" in screen and "Disks" in screen
        assert tmux("display", "-p", "-t", session, "#{alternate_on}").strip() == "1"
        tmux("send-keys", "-t", session, "q")
        assert wait_for(lambda: marker.exists() and "HWTOP-EXITED" in pane()), pane()
        assert marker.read_text().strip() == "0"
        # Restored: back on the main screen, cursor visible, no leftover of the app's frame.
        assert tmux("display", "-p", "-t", session, "#{alternate_on}").strip() == "0"
        assert tmux("display", "-p", "-t", session, "#{cursor_flag}").strip() == "1"
        assert "Processes" not in pane()
    finally:
        tmux("kill-session", "-t", session)


def test_keys_reach_hwtop_and_a_lone_escape_closes_help(tmp_path: Path) -> None:
    """Through the real terminal driver (tui.quiet_driver, whose input thread sleeps while nothing is typed): a
    key opens help, a lone Escape (which might start a sequence, so it arrives after the parser's wait) closes
    it, and q still quits at once."""
    session = f"hwtop-e2e-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "exit"
    hwtop = shutil.which("hwtop") or f"{sys.executable} -m hwtop"
    command = f"{hwtop}; echo $? > {marker}; echo HWTOP-EXITED; sleep 30"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", command)
    try:
        pane = lambda: tmux("capture-pane", "-p", "-t", session)  # noqa: E731
        assert wait_for(lambda: "Processes" in pane() and "%" in pane()), pane()
        time.sleep(1.5)  # idle: the input thread is asleep, not polling
        tmux("send-keys", "-t", session, "?")
        assert wait_for(lambda: "hwtop keys" in pane(), timeout=5), pane()
        tmux("send-keys", "-t", session, "Escape")
        assert wait_for(lambda: "hwtop keys" not in pane(), timeout=5), pane()
        time.sleep(1.5)
        started = time.monotonic()
        tmux("send-keys", "-t", session, "q")
        assert wait_for(lambda: marker.exists() and "HWTOP-EXITED" in pane(), timeout=10), pane()
        assert time.monotonic() - started < 3.0  # the input thread is woken to exit, not waited for
        assert marker.read_text().strip() == "0"
    finally:
        tmux("kill-session", "-t", session)


@pytest.mark.parametrize("sig", ["TERM", "HUP", "INT"])
def test_signal_to_hwtop_with_a_workload_restores_and_leaves_no_child(sig: str, tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the workload needs torch")
    import os
    import signal

    from hwtop.workload.launcher import group_alive

    session = f"hwtop-sig-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "exit"
    hwtop = shutil.which("hwtop") or f"{sys.executable} -m hwtop"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", str(tmp_path),
         f"{hwtop} --workload balanced --interval 0.5; echo $? > {marker}; sleep 30")
    try:
        pane = lambda: tmux("capture-pane", "-p", "-t", session)  # noqa: E731
        assert wait_for(lambda: "RUNNING" in pane() and "rank 0 step" in pane(), timeout=60), pane()
        tmux("send-keys", "-t", session, "R")  # recording while the signal arrives
        assert wait_for(lambda: "● REC" in pane(), timeout=10), pane()
        time.sleep(1.5)
        pids = [p for p in subprocess.run(["pgrep", "-f", "hwtop --workload|-m hwtop --workload"], capture_output=True,
                                          text=True).stdout.split()
                if Path(f"/proc/{p}/comm").read_text().strip() in ("hwtop", "python", "python3")]  # not the shell
        jobs = subprocess.run(["pgrep", "-f", "-x", ".*-m hwtop.workload.job.*"], capture_output=True,
                              text=True).stdout.split()
        assert pids and jobs
        groups = {os.getpgid(int(j)) for j in jobs}
        os.kill(int(pids[0]), getattr(signal, f"SIG{sig}"))
        assert wait_for(marker.exists, timeout=20), pane()
        assert tmux("display", "-p", "-t", session, "#{alternate_on}").strip() == "0"
        assert wait_for(lambda: not any(group_alive(g) for g in groups), timeout=15)
        from hwtop.recording.store import load

        recordings = list(tmp_path.glob("hwtop-*.jsonl.gz"))
        assert len(recordings) == 1
        recording = load(str(recordings[0]))
        assert recording.truncated is None and len(recording) >= 2  # closed cleanly: whole lines, whole stream
        assert recording.snapshot(len(recording) - 1).workload is not None
    finally:
        tmux("kill-session", "-t", session)


def test_hwtop_pid_opens_the_job_view_in_a_terminal(tmp_path: Path) -> None:
    session = f"hwtop-e2e-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "exit"
    job = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.2)"])
    hwtop = shutil.which("hwtop") or f"{sys.executable} -m hwtop"
    command = f"{hwtop} --interval 0.5 --pid {job.pid}; echo $? > {marker}; echo HWTOP-EXITED; sleep 30"
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "30", command)
    try:
        pane = lambda: tmux("capture-pane", "-p", "-t", session)  # noqa: E731
        assert wait_for(lambda: f"Job · pid {job.pid}" in pane() and "RUNNING 1 process(es)" in pane()), pane()
        job.kill()
        job.wait()
        assert wait_for(lambda: "ENDED" in pane() and "the job ended" in pane()), pane()  # the view survives
        tmux("send-keys", "-t", session, "q")
        assert wait_for(lambda: marker.exists() and "HWTOP-EXITED" in pane()), pane()
        assert marker.read_text().strip() == "0"
        assert tmux("display", "-p", "-t", session, "#{alternate_on}").strip() == "0"
    finally:
        tmux("kill-session", "-t", session)
        if job.poll() is None:
            job.kill()


def test_a_hangup_exit_that_hangs_is_ended_by_the_watchdog(monkeypatch) -> None:
    """The watchdog armed by SIGTERM/SIGHUP stops the job's group and ends the process (os._exit)."""
    from hwtop.tui import app as app_module

    stopped, exited = [], []

    class Workload:
        def stop(self) -> bool:
            stopped.append(True)
            return True

    class Session:
        workload = Workload()

    import os

    monkeypatch.setattr(os, "_exit", lambda code: exited.append(code))
    hwtop = app_module.HwtopApp.__new__(app_module.HwtopApp)
    hwtop.session = Session()
    hwtop._force_exit()
    assert stopped == [True] and exited == [129]


def test_a_terminal_that_hangs_up_ends_hwtop_at_once() -> None:
    """tmux kill-server, as an SSH drop: the pane's process gets SIGHUP and, from the kernel, SIGCONT. hwtop ends
    within seconds; before, a second input thread (started on that SIGCONT) kept it until the watchdog, ~12 s."""
    socket = f"hwtop-hup-{uuid.uuid4().hex[:8]}"
    hwtop = shutil.which("hwtop") or f"{sys.executable} -m hwtop"
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-x", "120", "-y", "40", f"exec {hwtop}"], check=True)
    try:
        pane = lambda: tmux("-L", socket, "capture-pane", "-p")  # noqa: E731
        assert wait_for(lambda: "Processes" in pane()), pane()
        pid = int(tmux("-L", socket, "list-panes", "-F", "#{pane_pid}").strip())
    finally:
        tmux("-L", socket, "kill-server")
    started = time.monotonic()

    def ended() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # exited, not reaped
        except FileNotFoundError:
            return True

    assert wait_for(ended, timeout=8), f"hwtop still running {time.monotonic() - started:.1f} s after the hangup"
    assert time.monotonic() - started < 5
