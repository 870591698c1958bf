"""Security: nothing listens unless asked, and then on 127.0.0.1; the exporter serves only /metrics; no shell
anywhere; the workload is an argument list; signalling asks first, names the target and refuses what this user
may not signal; a config others could write is refused; recordings honour the umask and never follow a symlink."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from msgspec.structs import replace

ROOT = Path(__file__).resolve().parents[2]
HWTOP = [sys.executable, "-m", "hwtop.cli.main"]
PACKAGES = ("probes", "widgets", "tui", "model", "demo", "recording", "session", "cli", "advice", "report", "exporter",
            "fleet", "workload", "benchmarks",
            "screenshots", "tests")


def source_files():
    for package in PACKAGES:
        yield from (ROOT / package).rglob("*.py")


def test_no_shell_anywhere():
    offenders = []
    for path in source_files():
        text = path.read_text()
        for pattern in (r"shell\s*=\s*True", r"\bos\.system\(", r"\bos\.popen\("):
            if re.search(pattern, text) and path.name != "test_security.py":
                offenders.append(f"{path.relative_to(ROOT)}: {pattern}")
    assert offenders == []


def test_no_listener_bound_to_every_interface_by_default():
    from hwtop.cli.export import DEFAULT_LISTEN, listen_address

    assert listen_address(DEFAULT_LISTEN) == ("127.0.0.1", 9400)
    assert listen_address(":9500") == ("127.0.0.1", 9500)  # an empty host never means 0.0.0.0
    for path in source_files():
        if path.name != "test_security.py":
            assert '"0.0.0.0"' not in path.read_text().replace("0.0.0.0:PORT", ""), path


def _listening_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        inodes |= {line.split()[9] for line in lines if line.split()[3] == "0A"}  # 0A: LISTEN
    return inodes


def _sockets_of(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_monitor_opens_no_listening_socket():
    session = f"hwtop-sec-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
                    f"{sys.executable} -m hwtop --demo dgx-a100 --interval 0.5"], check=True)
    try:
        time.sleep(4)
        pid = int(subprocess.run(["tmux", "display", "-p", "-t", session, "#{pane_pid}"], capture_output=True,
                                 text=True).stdout.strip())
        assert Path(f"/proc/{pid}").exists()
        assert _sockets_of(pid) & _listening_inodes() == set()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


def test_the_exporter_answers_only_get_metrics():
    from prometheus_client.registry import CollectorRegistry

    from hwtop.exporter.server import metrics_app

    app = metrics_app(CollectorRegistry())
    statuses = []

    def start_response(status, headers):
        statuses.append(status)

    for method, path in (("GET", "/metrics"), ("GET", "/"), ("POST", "/metrics"), ("GET", "/metrics/../x")):
        app({"REQUEST_METHOD": method, "PATH_INFO": path}, start_response)
    assert statuses == ["200 OK", "404 Not Found", "404 Not Found", "404 Not Found"]


def test_the_workload_is_started_with_an_argument_list(monkeypatch):
    import subprocess as sp

    from hwtop.workload import launcher

    seen = {}

    class FakePopen:
        def __init__(self, args, **kwargs):
            seen["args"], seen["kwargs"] = args, kwargs
            self.pid = 12345

    monkeypatch.setattr(sp, "Popen", FakePopen)
    launcher.WorkloadProcess(["--scenario", "balanced; rm -rf /"])
    assert isinstance(seen["args"], list) and seen["args"][-1] == "balanced; rm -rf /"  # one argument, inert
    assert not seen["kwargs"].get("shell") and seen["kwargs"]["start_new_session"] is True


# ----- signalling -----

def test_signalling_refuses_init_hwtop_and_other_users(monkeypatch):
    from hwtop.probes.signals import Target, describe, may_signal

    assert "init" in may_signal(describe(1))
    assert "hwtop itself" in may_signal(describe(os.getpid()))
    other = Target(424242, 1, "bob", 1001, "python train.py")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert may_signal(other) == "pid 424242 belongs to bob: only bob or root may signal it"
    monkeypatch.setattr(os, "geteuid", lambda: 1001)
    assert may_signal(other) is None


def test_a_confirmed_signal_reaches_the_same_process_only():
    from hwtop.probes.signals import Target, describe, send

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.3)
        target = describe(child.pid)
        assert target is not None and target.command.endswith("time.sleep(60)")
        stale = Target(child.pid, target.start_ticks + 1, target.user, target.uid, target.command)
        assert "already exited" in send(stale)  # a reused pid is not the process the user confirmed
        assert child.poll() is None
        assert send(target).startswith(f"sent SIGTERM to pid {child.pid}")
        assert child.wait(10) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()


@pytest.mark.slow  # a long Pilot session (several screens, live ticks): the slow step runs it
async def test_k_asks_first_and_shows_user_and_command():
    from hwtop.model.snapshot import ProcessInfo
    from hwtop.tui.app import HwtopApp
    from hwtop.tui.signal_dialog import SignalDialog
    from tests.factories import ScriptedSource, host_snapshot

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.3)
        base = host_snapshot()
        row = ProcessInfo(child.pid, os.getpid(), "root", "python", "python -c sleep", "S", 99.9, 1 << 20, 1)

        app = HwtopApp(ScriptedSource([replace(base, processes=(row,) + base.processes)]))
        async with app.run_test(size=(140, 40)) as pilot:
            await app.first_frame.wait()
            await pilot.pause()
            app.main.process_table.move_cursor(row=0)
            await pilot.press("k")
            await pilot.pause()
            assert isinstance(app.screen, SignalDialog)
            assert app.screen.target.pid == child.pid and "time.sleep(60)" in app.screen.target.command
            await pilot.press("n")
            await pilot.pause()
            assert child.poll() is None  # cancelled: nothing sent
            await pilot.press("k")
            await pilot.pause()
            await pilot.press("y")
            await pilot.pause()
        assert child.wait(10) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()


# ----- files -----

def test_a_writable_config_is_refused(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[advice.thresholds]\ndata_wait_fraction = 0.99\n")
    config.chmod(0o666)
    result = subprocess.run([*HWTOP, "--config", str(config), "report", "--json"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"hwtop: error: refusing config file {config}: writable by group and others "
                             "(chmod go-w to use it)\n")
    config.chmod(0o600)
    from hwtop.session.config import load

    assert load(str(config)).thresholds["data_wait_fraction"] == 0.99


def test_recordings_are_0600_and_refuse_symlinks(tmp_path):
    from hwtop.recording.store import Recorder, RecordingError
    from tests.umask import umask

    with umask(0o022):
        Recorder(str(tmp_path / "a.jsonl")).close()
    assert (tmp_path / "a.jsonl").stat().st_mode & 0o777 == 0o600
    (tmp_path / "victim").write_text("x")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "victim")
    with pytest.raises(RecordingError):
        Recorder(str(tmp_path / "b.jsonl"))
    assert (tmp_path / "victim").read_text() == "x"
