"""A recording that fails mid-run (disk full): the app stops recording, says why, and quits cleanly after."""

from __future__ import annotations

from hwtop.model.frame import Frame
from hwtop.recording.store import RecordingError
from hwtop.tui.app import HwtopApp
from tests.factories import ScriptedSource, host_snapshot


class FullDisk:
    """A recorder whose file can take no more."""

    def __init__(self) -> None:
        self.writes = 0
        self.closed = False

    def write(self, frame: Frame) -> None:
        self.writes += 1
        raise RecordingError("cannot write to trainbox.jsonl: No space left on device")

    def close(self, quiet: bool = False) -> None:
        self.closed = True


async def test_a_failing_recording_is_dropped_with_a_notification_and_the_app_quits() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]), interval=0.05)
    recorder = FullDisk()
    app.recorder = recorder  # type: ignore[assignment]  # a stand-in with the Recorder's two methods
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.recorder is None and app._notifications:
                break
        said = [str(n.message) for n in app._notifications]
        assert app.recorder is None and recorder.writes == 1
        assert any("No space left on device" in m for m in said), said
        await pilot.press("q")
    assert app.return_code in (0, None)
