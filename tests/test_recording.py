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

from hwtop.recording.replay import ReplaySource
from hwtop.recording.store import Recorder, RecordingError, load
from tests.advice_timeline import Timeline, rank, workload
from tests.factories import demo_snapshots, with_demo_topology

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


def write(path, frames) -> None:
    recorder = Recorder(str(path), 1.0, "trainbox")
    for frame in frames:
        recorder.write(frame)
    recorder.close()


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


def test_appending_a_second_session_continues_the_recording(tmp_path):
    frames = dgx_frames(6)
    path = tmp_path / "run.jsonl.gz"
    write(path, frames[:3])
    write(path, frames[3:])
    assert [load(str(path)).snapshot(i) for i in range(6)] == frames


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
    (b"\x1f\x8b\x08garbage", "empty file"),
])
def test_foreign_and_wrong_files_are_refused_with_where(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        load(str(path))
    result = subprocess.run([*HWTOP, "replay", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message.split("'")[0] in lines[0]


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


def test_a_full_disk_stops_recording_with_a_message():
    recorder = Recorder("/dev/full")  # every write: ENOSPC
    with pytest.raises(RecordingError, match="stopped: No space left on device"):
        recorder.write(dgx_frames(1)[0])


def test_the_record_command_on_a_full_disk_and_an_unwritable_path(tmp_path):
    full = subprocess.run([*HWTOP, "--no-gpu", "record", "/dev/full", "--seconds", "2"], capture_output=True,
                          text=True, timeout=60)
    assert full.returncode == 1 and "No space left on device" in full.stderr
    missing = subprocess.run([*HWTOP, "record", str(tmp_path / "no" / "such" / "dir.jsonl")], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"hwtop: error: cannot record to {tmp_path / 'no' / 'such' / 'dir.jsonl'}: No such file or directory"]


def test_a_symlink_is_never_followed_over_an_existing_file(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    link = tmp_path / "run.jsonl"
    link.symlink_to(precious)
    with pytest.raises(RecordingError, match="cannot record to"):
        Recorder(str(link))
    assert precious.read_text() == "keep me"


def test_recordings_take_the_users_umask(tmp_path):
    old = os.umask(0o027)
    try:
        Recorder(str(tmp_path / "run.jsonl")).close()
    finally:
        os.umask(old)
    assert (tmp_path / "run.jsonl").stat().st_mode & 0o777 == 0o640


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
        assert "REPLAY 20x" in str(app.header.render())
        assert any(f.id == "gpu-starved" for f in app.advice.findings)  # the rules ran over the replay
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
        assert not any(f.id == "gpu-starved" for f in app.advice.findings)
        await pilot.press("minus")
        assert source.speed == 10.0
        await pilot.press("w")  # no workload from a recording
        await pilot.pause()
        assert app.source.history is source.history


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
        assert "● REC" in str(app.header.render())
        await pilot.press("R")
        assert app.recorder is None
    files = list(tmp_path.glob("hwtop-trainbox-*.jsonl.gz"))
    assert len(files) == 1 and len(load(str(files[0]))) >= 4


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
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
