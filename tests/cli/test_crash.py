"""A crash anywhere ends with one line, a private traceback file and exit status 1, never 0: the monitor, replay,
fleet, record and doctor, each made to fail by monkeypatching (the product has no test hook); under tmux, the
terminal is restored too."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from textual.app import App

from hwtop.cli import crash
from hwtop.cli.main import main
from tests.factories import ScriptedSource, demo_snapshots, host_snapshot

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_MESSAGE = "boom \x1b]0;pwn\x07 [/x] \x9b2J"


class Boom(RuntimeError):
    pass


def boom(*_args: object, **_kwargs: object) -> None:
    raise Boom(HOSTILE_MESSAGE)


@pytest.fixture
def state(tmp_path, monkeypatch) -> Path:
    """Where tracebacks go ($XDG_STATE_HOME/hwtop); Textual apps run headless, as they would in a terminal."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no config file: the defaults
    run = App.run
    monkeypatch.setattr(App, "run", lambda self, **kwargs: run(self, headless=True, size=(120, 40)))
    return tmp_path / "state" / "hwtop"


def assert_reported(err: str, state: Path) -> Path:
    """The last stderr line names the error and a 0600 file in a 0700 directory holding its traceback."""
    lines = err.splitlines()
    assert lines and sum("crashed" in line for line in lines) == 1, err
    assert lines[-1].startswith("hwtop: crashed: Boom: boom ␛]0;pwn␇ [/x] �2J; the traceback is in "), err
    assert "\x1b" not in err and "\x9b" not in err
    path = Path(lines[-1].rsplit(" ", 1)[1])
    assert path.parent == state
    assert stat.S_IMODE(state.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "Traceback (most recent call last)" in text and "Boom: boom ␛]0;pwn␇ [/x] �2J" in text
    assert "\x1b" not in text  # the file is read in a terminal too
    return path


def test_a_crash_in_the_monitor_exits_1_with_a_line_and_a_saved_traceback(state, monkeypatch, capsys):
    from hwtop.cli import monitor
    from hwtop.widgets.processes import ProcessTable

    source = ScriptedSource([host_snapshot()])
    monkeypatch.setattr(monitor, "open_sampler", lambda config: source)
    monkeypatch.setattr(ProcessTable, "show", boom)  # deep in a tick, on the sampling worker's path
    assert main([]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # the line and nothing else: Textual prints no traceback of its own
    path = assert_reported(err, state)
    assert "in show" in path.read_text() and source.closed


def test_a_crash_in_replay_exits_1(state, tmp_path, monkeypatch, capsys):
    from hwtop.model.frame import Frame
    from hwtop.recording.replay import ReplaySource
    from hwtop.recording.store import Recorder

    recording = tmp_path / "run.jsonl"
    recorder = Recorder(str(recording), 1.0, "trainbox")
    for snapshot in demo_snapshots("dgx-a100", 3):
        recorder.write(Frame(snapshot))
    recorder.close()
    monkeypatch.setattr(ReplaySource, "sample", boom)
    assert main(["replay", str(recording)]) == 1
    assert_reported(capsys.readouterr().err, state)


def test_a_crash_in_fleet_exits_1(state, monkeypatch, capsys):
    from hwtop.fleet import session

    monkeypatch.setattr(session, "worst_first", boom)  # on the session's worker (a failed request is a row)
    assert main(["fleet", "127.0.0.1:9"]) == 1
    assert_reported(capsys.readouterr().err, state)


def test_a_crash_in_record_exits_1(state, tmp_path, monkeypatch, capsys):
    from hwtop.cli import record
    from hwtop.recording.store import Recorder

    monkeypatch.setattr(record, "make_sampler", lambda demo, no_gpu: ScriptedSource([host_snapshot()]))
    monkeypatch.setattr(Recorder, "write", boom)
    assert main(["record", str(tmp_path / "r.jsonl"), "--seconds", "5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("recording to ") and err.count("\n") == 2  # record's own line, then the crash
    assert_reported(err, state)


def test_a_crash_in_doctor_exits_1_and_stops_sampling(state, monkeypatch, capsys):
    from hwtop.advice.engine import AdviceEngine
    from hwtop.cli import doctor

    source = ScriptedSource([host_snapshot()])
    source.workload = None
    monkeypatch.setattr(doctor, "open_sampler", lambda config: source)
    monkeypatch.setattr(AdviceEngine, "update", boom)
    assert main(["doctor", "--seconds", "1"]) == 1
    out, err = capsys.readouterr()
    assert out == ""  # no verdict printed: a crash is not "something found"
    assert_reported(err, state)
    assert source.closed


def test_a_crash_in_a_headless_command_exits_1(state, monkeypatch, capsys):
    from hwtop.report import facts

    monkeypatch.setattr(facts, "gather", boom)
    assert main(["report", "--demo", "dgx-a100"]) == 1
    assert_reported(capsys.readouterr().err, state)


def test_ctrl_c_is_not_a_crash(monkeypatch, capsys):
    from hwtop.report import facts

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(facts, "gather", interrupted)
    assert main(["report", "--demo", "dgx-a100"]) == 130
    assert capsys.readouterr().err == ""


async def test_a_crash_under_the_pilot_ends_the_app_with_status_1():
    from hwtop.tui.app import HwtopApp
    from hwtop.tui.guarded_app import Crashed

    class Failing(ScriptedSource):
        def sample(self):
            raise Boom(HOSTILE_MESSAGE)

    app = HwtopApp(Failing([host_snapshot()]))
    with pytest.raises(Crashed) as raised:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.1)
    assert isinstance(raised.value.__cause__, Boom) and isinstance(app.crash, Boom)  # the sampler's own error
    assert app.return_code == 1


def test_the_traceback_file_is_private_and_never_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    (tmp_path / "hwtop").mkdir(mode=0o777)
    os.chmod(tmp_path / "hwtop", 0o777)  # someone else could read or plant files there
    try:
        raise Boom("x")
    except Boom as error:
        first, second = crash.save_traceback(error), crash.save_traceback(error)
    assert first != second  # each crash its own new file
    for path in (first, second):
        assert Path(path).parent != tmp_path / "hwtop" and Path(path).name.startswith("hwtop-crash-")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        os.unlink(path)
    os.chmod(tmp_path / "hwtop", 0o700)
    assert crash.state_dir() == str(tmp_path / "hwtop")
    (tmp_path / "hwtop").rmdir()
    (tmp_path / "hwtop").symlink_to(tmp_path)  # a link is not a private directory
    assert crash.state_dir() is None


def test_a_traceback_that_cannot_be_saved_still_gives_one_line(monkeypatch, capsys):
    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(crash.tempfile, "mkstemp", full)
    assert crash.report_crash(Boom("x" * 5000)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400
    assert err.endswith("its traceback could not be saved (No space left on device)\n")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_crash_in_a_terminal_restores_it_and_exits_1(tmp_path):
    """The real monitor in tmux, made to fail on its first tick: the alternate screen is left, the cursor is back,
    one line says where the traceback is, and the status is 1."""
    session = f"hwtop-crash-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "crashing.py"
    script.write_text(
        "import sys\n"
        "from hwtop.widgets.processes import ProcessTable\n"
        "def boom(*args, **kwargs):\n"
        "    raise RuntimeError('deliberate')\n"
        "ProcessTable.show = boom\n"
        "from hwtop.cli.main import main\n"
        "sys.exit(main(['--no-gpu', '--interval', '0.5']))\n")
    marker = tmp_path / "status"
    command = (f"env PYTHONPATH={ROOT} XDG_STATE_HOME={tmp_path} {sys.executable} {script}; "
               f"echo $? > {marker}; sleep 30")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", command], check=True)

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout

    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        pane = tmux("capture-pane", "-p", "-J", "-t", session)  # -J: a wrapped line as one
        assert marker.exists() and marker.read_text().strip() == "1", pane
        assert tmux("display", "-p", "-t", session, "#{alternate_on}").strip() == "0"
        assert tmux("display", "-p", "-t", session, "#{cursor_flag}").strip() == "1"
        assert tmux("display", "-p", "-t", session, "#{mouse_any_flag}").strip() == "0"
        lines = [line for line in pane.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("hwtop: crashed: RuntimeError: deliberate; the traceback is in "), pane
        assert "Processes" not in pane and "Traceback" not in pane  # no frame left, no traceback dumped
        saved = list((tmp_path / "hwtop").glob("crash-*.txt"))
        assert len(saved) == 1 and "RuntimeError: deliberate" in saved[0].read_text()
    finally:
        tmux("kill-session", "-t", session)
