"""A snapshot source driven by a recording: the App polls it like the live sampler, and it answers with the
recording's snapshot for its playback clock. Pause, step, seek and speed are its controls."""

from __future__ import annotations

from hwtop.model.finding import Change, Finding
from hwtop.model.frame import Frame
from hwtop.model.history import History
from hwtop.model.snapshot import Snapshot
from hwtop.recording.store import Recording, RecordingError

HISTORY_WARM = 60  # snapshots pushed into the history after a seek, so sparklines show the past there


class ReplaySource:
    def __init__(self, recording: Recording, interval_s: float = 1.0, speed: float = 1.0) -> None:
        self.recording = recording
        self.interval_s = interval_s
        self.speed = speed
        self.history = History()
        self.index = 0
        self.cursor = recording.start
        self.error: str | None = None  # the last snapshot that could not be decoded
        self._current: Snapshot | None = None
        self._findings: tuple[Finding, ...] | None = None  # recorded beside the current snapshot, if any
        self.skipped = 0  # snapshots that could not be decoded and were passed over
        self._started = False

    @property
    def position_s(self) -> float:
        return self.recording.times[self.index] - self.recording.start

    @property
    def length_s(self) -> float:
        return self.recording.end - self.recording.start

    @property
    def at_end(self) -> bool:
        return self.index == len(self.recording) - 1

    def _decode(self, index: int) -> Frame | None:
        try:
            return self.recording.frame(index)
        except RecordingError as error:
            self.error = str(error)
            self.skipped += 1
            return None

    def _move_to(self, index: int) -> Snapshot:
        index = max(0, min(len(self.recording) - 1, index))
        if self._started and index == self.index and self._current is not None:
            return self._current
        forward = self._started and index > self.index and index - self.index <= HISTORY_WARM
        first = self.index + 1 if forward else max(0, index - HISTORY_WARM)
        if not forward:
            self.history = History()
        for i in range(first, index + 1):
            frame = self._decode(i)
            if frame is not None:
                self.history.push(frame.snapshot)
                self._current = frame.snapshot
                self._findings = frame.findings if frame.recorded else None
        self.index, self._started = index, True
        self.cursor = max(self.cursor, self.recording.times[index]) if forward else self.recording.times[index]
        if self._current is None:
            raise RecordingError(self.error or "no snapshot could be decoded")
        return self._current

    def sample(self) -> Snapshot:
        """The App's tick: the playback clock moves on by one refresh interval times the speed."""
        if not self._started:
            return self._move_to(0)
        self.cursor += self.interval_s * self.speed
        return self._move_to(self.recording.index_at(self.cursor))

    def recorded_timeline(self) -> tuple[Change, ...] | None:
        """What the live run raised and cleared up to the current snapshot (None for a recording made without its
        findings: the session tells it from the findings it recomputes)."""
        if not self.recording.has_findings or self._current is None:
            return None
        return self.recording.changes_until(self._current.time)

    def recorded_findings(self) -> tuple[Finding, ...] | None:
        """What the live run showed beside the current snapshot (None for a recording made without them)."""
        return self._findings

    def current(self) -> Snapshot:
        return self._current if self._current is not None else self._move_to(0)

    def step(self, ticks: int) -> Snapshot:
        return self._move_to(self.index + ticks)

    def seek(self, seconds: float) -> Snapshot:
        target = self.recording.times[self.index] + seconds
        return self._move_to(self.recording.index_at(max(self.recording.start, target)))

    def seek_to(self, offset_s: float) -> Snapshot:
        return self._move_to(self.recording.index_at(self.recording.start + max(0.0, offset_s)))

    def set_speed(self, speed: float) -> None:
        self.speed = max(0.125, min(64.0, speed))

    def close(self) -> None:
        pass
