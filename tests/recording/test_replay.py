"""Record → replay: round trips, truncation, corrupt and foreign files, a killed recorder, a full disk, symlinks,
the replay TUI's controls, and `hwtop snapshot --replay --at`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hwtop.model.frame import Frame
from hwtop.recording.replay import ReplaySource
from hwtop.recording.store import Recorder, RecordingError, load
from hwtop.session.session import Session
from tests.advice_timeline import Timeline, rank, workload
from tests.factories import ScriptedSource, demo_snapshots, with_demo_topology
from tests.finalizer_signal import SignalsInItsFinalizer
from tests.umask import umask

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]


def dgx_frames(count: int = 6):
    return with_demo_topology(demo_snapshots("dgx-a100", count), "dgx-a100")


def wait_for_snapshots(path, count: int, timeout: float = 60.0) -> None:
    """Until a recorder running elsewhere has written `count` whole snapshots (or the timeout passes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.3)
        try:
            if len(load(str(path))) >= count:
                return
        except RecordingError:
            pass


def live_frames(snapshots):
    """The frames a live session makes of these snapshots: each with the findings shown at that tick."""
    session = Session(ScriptedSource(snapshots[:1]))
    return [session.advance(lambda s=snapshot: s) for snapshot in snapshots]


def write(path, snapshots) -> list[Frame]:
    frames = live_frames(snapshots)
    recorder = Recorder(str(path), 1.0, "trainbox")
    for frame in frames:
        recorder.write(frame)
    recorder.close()
    return frames


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_round_trip_equals_the_recorded_snapshots(tmp_path, name):
    frames = dgx_frames()
    path = tmp_path / name
    write(path, frames)
    recording = load(str(path))
    assert recording.header["format"] == "hwtop.recording/1" and recording.header["host"] == "trainbox"
    assert [recording.snapshot(i) for i in range(len(recording))] == frames
    assert recording.truncated is None
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    lines = recording.lines
    assert "topology" in json.loads(lines[0]) and "topology" not in json.loads(lines[1])  # written once


def test_two_recordings_concatenated_read_as_one(tmp_path):
    """`cat a.jsonl.gz b.jsonl.gz > c.jsonl.gz`: gzip members and a second header line are both fine."""
    frames = dgx_frames(6)
    write(tmp_path / "a.jsonl.gz", frames[:3])
    write(tmp_path / "b.jsonl.gz", frames[3:])
    both = tmp_path / "c.jsonl.gz"
    both.write_bytes((tmp_path / "a.jsonl.gz").read_bytes() + (tmp_path / "b.jsonl.gz").read_bytes())
    assert [load(str(both)).snapshot(i) for i in range(6)] == frames


def test_a_recording_replays_the_findings_the_live_run_showed(tmp_path):
    t = Timeline()
    snapshots = [t.tick(workload=workload(rank(0, wait=0.85))) for _ in range(20)]
    live = write(tmp_path / "starved.jsonl.gz", snapshots)
    assert any(f.id == "gpu-starved" for f in live[-1].findings)  # the live session raised it
    source = ReplaySource(load(str(tmp_path / "starved.jsonl.gz")))
    session = Session(source)
    replayed = [session.tick() for _ in range(len(live))]
    assert [f.findings for f in replayed] == [f.findings for f in live]
    assert all(f.recorded for f in replayed)


@pytest.mark.parametrize(("line", "message"), [
    ('{"time": NaN, "schema": "hwtop.snapshot/1"}', "NaN is not a number JSON allows"),
    ('{"time": 1, "x": Infinity}', "Infinity is not a number JSON allows"),
    ('{"time": 1, "x": 1' + "0" * 5000 + "}", "not JSON"),
    ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ('"just a string"', "not a snapshot"),
    ('{"time": true}', "not a snapshot"),
])
def test_hostile_lines_give_one_line_errors(tmp_path, line, message):
    good = tmp_path / "good.jsonl"
    write(good, dgx_frames(2))
    path = tmp_path / "bad.jsonl"
    path.write_text(good.read_text().splitlines()[0] + "\n" + line + "\n")
    with pytest.raises(RecordingError, match=f"line 2: .*{message}"):
        load(str(path))


def test_wrong_types_inside_a_snapshot_skip_that_frame_and_count_it(tmp_path):
    path = tmp_path / "run.jsonl"
    write(path, dgx_frames(3))
    lines = path.read_text().splitlines()
    record = json.loads(lines[2])
    record["cpu"] = {"cores": "not a list"}
    lines[2] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    source = ReplaySource(load(str(path)))
    source.sample()
    source.step(2)
    assert source.skipped == 1 and "line 3" in (source.error or "")
    assert (source.error or "").endswith("line 3: Expected `array`, got `str` - at `$.cpu.cores`")  # where, in one line


def test_an_overlong_line_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from hwtop.recording import store

    monkeypatch.setattr(store, "MAX_LINE", 4096)
    path = tmp_path / "huge.jsonl"
    write(path, dgx_frames(1))
    with open(path, "a") as handle:
        handle.write('{"time": 2, "pad": "' + "x" * 100_000 + '"}\n')
    with pytest.raises(RecordingError, match="line 2: longer than"):
        load(str(path))


def test_a_fifo_is_refused_rather_than_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(RecordingError, match="not a regular file"):
        load(str(tmp_path / "pipe"))


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_a_truncated_last_line_is_tolerated(tmp_path, name):
    path = tmp_path / name
    write(path, dgx_frames(5))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 120])
    recording = load(str(path))
    assert len(recording) == 4 and recording.truncated


def test_a_corrupt_line_in_the_middle_names_its_line(tmp_path):
    path = tmp_path / "run.jsonl"
    write(path, dgx_frames(4))
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:40] + "\n"
    path.write_text("".join(lines))
    with pytest.raises(RecordingError, match=r"line 3: not JSON"):
        load(str(path))


@pytest.mark.parametrize(("content", "message"), [
    (b"root:x:0:0:root:/root:/bin/bash\n", "line 1: not JSON"),
    (b'{"hello": "world"}\n{"time": 1}\n', "line 1: not an hwtop recording"),
    (b'{"format": "hwtop.recording/1", "schema": "hwtop.snapshot/9"}\n', "line 1: snapshot schema 'hwtop.snapshot/9'"),
    (b'{"format": "hwtop.recording/1", "schema": "hwtop.snapshot/1"}\n{"no": "time"}\n', "line 2: not a snapshot"),
    (b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "not text"),
    (b"", "empty file"),
    (b"\x1f\x8b\x08garbage", "corrupt compressed data"),
])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_foreign_and_wrong_files_are_refused_with_where(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        load(str(path))
    result = subprocess.run([*HWTOP, "replay", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message.split("'")[0] in lines[0]


@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_a_recorder_killed_with_sigkill_leaves_a_replayable_file(tmp_path):
    path = tmp_path / "killed.jsonl.gz"
    process = subprocess.Popen([*HWTOP, "--demo", "dgx-a100", "record", str(path), "--interval", "0.1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_snapshots(path, 8)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    recording = load(str(path))
    assert len(recording) >= 8
    assert len(recording.snapshot(len(recording) - 1).gpus) == 8


def no_room_past(limit: int):
    """A preexec_fn: the child may write no file past `limit` bytes (the kernel answers EFBIG, as a full disk
    answers ENOSPC: a write that fails midway)."""
    import resource

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_a_full_disk_stops_the_record_command_with_a_message_and_keeps_what_it_wrote(tmp_path):
    path = tmp_path / "run.jsonl"
    full = subprocess.run([*HWTOP, "--no-gpu", "record", str(path), "--interval", "0.2", "--seconds", "20"],
                          capture_output=True, text=True, timeout=60, preexec_fn=no_room_past(60_000))
    assert full.returncode == 1 and f"recording to {path} stopped: File too large" in full.stderr
    recording = load(str(path))  # what was written before the failure stays readable
    assert len(recording) >= 1 and recording.snapshot(0).cpu is not None


def test_an_unwritable_path_or_an_existing_file_exits_2(tmp_path):
    missing = subprocess.run([*HWTOP, "record", str(tmp_path / "no" / "such" / "dir.jsonl")], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"hwtop: error: cannot record to {tmp_path / 'no' / 'such' / 'dir.jsonl'}: No such file or directory"]
    (tmp_path / "old.jsonl").write_text("someone's data")
    existing = subprocess.run([*HWTOP, "record", str(tmp_path / "old.jsonl")], capture_output=True, text=True,
                              timeout=60)
    assert existing.returncode == 2 and "it exists" in existing.stderr
    assert (tmp_path / "old.jsonl").read_text() == "someone's data"


def test_a_symlink_is_never_followed_over_an_existing_file(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    link = tmp_path / "run.jsonl"
    link.symlink_to(precious)
    with pytest.raises(RecordingError, match="cannot record to"):
        Recorder(str(link))
    assert precious.read_text() == "keep me"


def test_recordings_are_private_and_never_overwrite(tmp_path):
    """A recording holds every user's command lines: 0600 whatever the umask, and never an existing file
    (nor a FIFO, which would block a reader-less recorder)."""
    with umask(0o000):
        Recorder(str(tmp_path / "run.jsonl")).close()
    assert (tmp_path / "run.jsonl").stat().st_mode & 0o777 == 0o600
    with pytest.raises(RecordingError, match="it exists"):
        Recorder(str(tmp_path / "run.jsonl"))
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(RecordingError, match="it exists"):
        Recorder(str(tmp_path / "pipe"))


def test_snapshot_at_a_time(tmp_path):
    frames = dgx_frames(6)
    path = tmp_path / "run.jsonl.gz"
    write(path, frames)
    result = subprocess.run([*HWTOP, "snapshot", "--json", "--replay", str(path), "--at", "2.5"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert json.loads(result.stdout) == json.loads(frames[2].to_json())  # the last one at or before 2.5 s


# ----- the replay TUI -----

def starved_recording(tmp_path):
    t = Timeline()
    frames = [t.tick(workload=workload(rank(0, wait=0.85))) for _ in range(30)]
    path = tmp_path / "starved.jsonl"
    write(path, frames)
    return load(str(path)), frames


@pytest.mark.slow  # a long Pilot session (several screens, live ticks): the slow step runs it
async def test_replay_controls_and_advice_as_it_plays(tmp_path):
    from hwtop.tui.app import HwtopApp

    recording, frames = starved_recording(tmp_path)
    source = ReplaySource(recording, interval_s=0.05, speed=20.0)  # 1 s of recording per 0.05 s tick
    app = HwtopApp(source, interval=0.05)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.first_frame.wait()
        for _ in range(200):
            await pilot.pause(0.05)
            if source.index >= 12:
                break
        assert "REPLAY 20x" in str(app.main.header.render())
        assert any(f.id == "gpu-starved" for f in app.frame.findings)  # the rules ran over the replay
        await pilot.press("p")
        before = source.index
        await pilot.press("full_stop")
        await pilot.pause()
        assert source.index == before + 1 and app.snapshot == frames[before + 1]
        await pilot.press("comma", "comma")
        await pilot.pause()
        assert source.index == before - 1
        await pilot.press("left_square_bracket")  # -10 s: back near the start, the advice starts over
        await pilot.pause()
        assert source.index == max(0, before - 11)
        assert not any(f.id == "gpu-starved" for f in app.frame.findings)
        await pilot.press("minus")
        assert source.speed == 10.0
        await pilot.press("w")  # no workload from a recording
        await pilot.pause()
        assert app.session.history is source.history


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_r_records_from_the_tui(tmp_path, monkeypatch):
    from hwtop.tui.app import HwtopApp
    from tests.factories import ScriptedSource

    monkeypatch.chdir(tmp_path)
    app = HwtopApp(ScriptedSource(dgx_frames(3)), interval=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.press("R")
        assert app.recorder is not None
        start = app.ticks
        while app.ticks < start + 5:
            await pilot.pause(0.05)
        assert "● REC" in str(app.main.header.render())
        await pilot.press("R")
        assert app.recorder is None
    files = list(tmp_path.glob("hwtop-trainbox-*.jsonl.gz"))
    assert len(files) == 1 and len(load(str(files[0]))) >= 4


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_a_signalled_recorder_closes_the_file_cleanly(tmp_path, sig):
    path = tmp_path / "signalled.jsonl.gz"
    process = subprocess.Popen([*HWTOP, "--demo", "rtx3090", "record", str(path), "--interval", "0.1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_snapshots(path, 5)
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    recording = load(str(path))
    assert recording.truncated is None and len(recording) >= 5  # every line whole, the gzip stream complete
    assert f"{len(recording)} snapshots in {path}" in stderr


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 0.6, 1.0])  # past the interpreter's own start-up
def test_ctrl_c_in_the_first_second_of_record_stops_cleanly(tmp_path, delay):
    """Whenever ctrl-c lands in start-up, no traceback; the file, once it exists, is a readable recording."""
    path = tmp_path / "early.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "hwtop", "--no-gpu", "record", str(path)],
                               stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode in (0, 130) and "Traceback" not in err, err
    if path.exists():
        try:
            assert load(str(path)).header["format"] == "hwtop.recording/1"
        except RecordingError as error:
            assert "holds no snapshots" in str(error)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_landing_in_a_finalizer_still_stops_the_recorder(tmp_path, monkeypatch, capsys, sig):
    from hwtop.cli import record
    from hwtop.cli.main import main

    ticks = 0
    real_tick = Session.tick

    def tick(self):
        nonlocal ticks
        ticks += 1
        frame = real_tick(self)
        if ticks == 2:
            SignalsInItsFinalizer(sig)  # dropped at once
        return frame

    monkeypatch.setattr(Session, "tick", tick)
    monkeypatch.setattr(record, "make_sampler", lambda demo, no_gpu: ScriptedSource(dgx_frames(3)))
    path = tmp_path / "run.jsonl"
    previous = signal.getsignal(sig)
    assert main(["record", str(path), "--interval", "0.01", "--seconds", "10"]) == 0
    assert ticks == 2 and len(load(str(path))) == 2  # it stopped at the signal, not at --seconds
    assert "KeyboardInterrupt" not in capsys.readouterr().err
    assert signal.getsignal(sig) is previous  # the caller's handler is back
