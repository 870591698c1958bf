"""Recordings: one snapshot per tick as JSON lines (gzip when the name ends in .gz), after a header line naming
the format, the snapshot schema, the host and the hwtop version. Each line is written and flushed as one piece,
so a recorder killed at any moment loses at most its last tick, and a half-written last line is skipped on
replay. The topology (static, and the largest part of a snapshot) is written only when it changes. Each line also
carries the findings the live run showed, so a replay shows exactly what was seen; the first also carries the
timeline of what was raised and cleared before recording started, and the replay tells the rest of it from the
findings of each line (advice/timeline.py), as the live run did.

A recording may come from someone else: reading it is bounded (a line over MAX_LINE is refused, NaN and
Infinity literals, absurd numbers and deep nesting are errors naming the line), and never raises anything but
RecordingError."""

from __future__ import annotations

import gzip
import json
import math
import os
import socket
import stat
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import msgspec.structs

from hwtop import __version__
from hwtop.advice.timeline import KEEP_S, MAX_CHANGES, Timeline
from hwtop.model.finding import Change, Finding
from hwtop.model.frame import Frame
from hwtop.model.serial import decode_record, snapshot_from_dict
from hwtop.model.snapshot import SCHEMA, Snapshot, Topology

FORMAT = "hwtop.recording/1"
GZIP_MAGIC = b"\x1f\x8b"
MAX_LINE = 16 * 1024 * 1024  # a snapshot of 5,000 processes and 16 GPUs is ~2 MB; more is not a recording


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_line(line: str) -> Any:
    """json.loads for untrusted lines: NaN/Infinity, integers past Python's digit limit and nesting deeper
    than the interpreter's stack all become ValueError."""
    try:
        return json.loads(line, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


class RecordingError(Exception):
    """A recording that cannot be written or read; the message says what and where (path, line)."""


def hwtop_version() -> str:
    return __version__


class Recorder:
    def __init__(self, path: str, interval_s: float | None = None, host: str | None = None) -> None:
        self.path = path
        self.count = 0
        self._last_topology: Topology | None = None
        # Created new, 0600, never through a symlink nor into a FIFO or an existing file (O_EXCL refuses all three):
        # a recording holds every user's command lines.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise RecordingError(f"cannot record to {path}: it exists (hwtop never overwrites or appends to a "
                                 "file it did not create; choose a new name)") from None
        except OSError as error:
            raise RecordingError(f"cannot record to {path}: {error.strerror}") from None
        raw: BinaryIO = os.fdopen(fd, "ab", buffering=0)
        self._raw = raw
        self._gzip = gzip.GzipFile(fileobj=raw, mode="ab") if path.endswith(".gz") else None
        self._out: BinaryIO | gzip.GzipFile = self._gzip or raw
        self._header: dict[str, Any] | None = {
            "format": FORMAT, "schema": SCHEMA, "host": host or socket.gethostname(), "hwtop_version": hwtop_version(),
            "started": time.time(), "interval_s": interval_s}
        self._write_header()  # at once: a recorder stopped before its first tick leaves a recording of nothing

    def _write_line(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n").encode()
        try:
            self._out.write(data)
            if self._gzip is not None:
                self._gzip.flush(zlib.Z_SYNC_FLUSH)  # a complete deflate block per line: readable if killed
        except OSError as error:
            self.close(quiet=True)
            raise RecordingError(f"recording to {self.path} stopped: {error.strerror}") from None

    def _write_header(self) -> None:
        if self._header is not None:
            header, self._header = self._header, None
            self._write_line(header)

    def write(self, frame: Frame) -> None:
        self._write_header()
        snapshot = frame.snapshot
        record = snapshot.to_dict()
        record["findings"] = [finding.to_dict() for finding in frame.findings]
        if self.count == 0 and frame.timeline:  # what changed before this recording began: the rest it can tell
            record["timeline"] = [change.to_dict() for change in frame.timeline]
        if snapshot.topology is not None and snapshot.topology == self._last_topology:
            del record["topology"]  # as before: the reader carries the last one forward
        self._last_topology = snapshot.topology
        self._write_line(record)
        self.count += 1

    def close(self, quiet: bool = False) -> None:
        for stream in (self._out, self._raw):
            try:
                stream.close()
            except OSError:
                if not quiet:
                    raise


@dataclass(slots=True)
class Recording:
    path: str
    header: dict[str, Any]
    lines: list[str] = field(default_factory=list)  # the snapshot lines, raw
    line_numbers: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    topology_of: list[int | None] = field(default_factory=list)  # entry whose line carries this one's topology
    truncated: str | None = None  # why the end was cut short, if it was
    advice: Timeline = field(default_factory=lambda: Timeline(keep_s=math.inf, max_changes=None))
    has_findings: bool = False  # some line carries the findings the live run showed
    _topologies: dict[int, Topology | None] = field(default_factory=dict)

    def changes_until(self, when: float) -> tuple[Change, ...]:
        """What was raised and cleared up to `when`, as the live pane's timeline would hold it then."""
        import bisect

        changes = self.advice.changes
        end = bisect.bisect_right([c.time for c in changes], when)
        start = bisect.bisect_left([c.time for c in changes], when - KEEP_S, 0, end)
        return changes[max(start, end - MAX_CHANGES):end]

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def start(self) -> float:
        return self.times[0]

    @property
    def end(self) -> float:
        return self.times[-1]

    def index_at(self, when: float) -> int:
        """The last entry at or before `when` (the first if `when` is before the start)."""
        import bisect

        return max(0, bisect.bisect_right(self.times, when) - 1)

    def snapshot(self, index: int) -> Snapshot:
        return self.frame(index).snapshot

    def frame(self, index: int) -> Frame:
        """The snapshot at `index` with the findings recorded beside it (none recorded: `recorded` is False)."""
        try:
            data = parse_line(self.lines[index])
            topology = None
            carrier = self.topology_of[index]
            if carrier is not None:
                if carrier not in self._topologies:
                    raw = parse_line(self.lines[carrier]).get("topology")
                    self._topologies[carrier] = None if raw is None else decode_record(Topology, raw)
                topology = self._topologies[carrier]
            data.pop("topology", None)
            raw_findings = data.pop("findings", None)
            snapshot = snapshot_from_dict(data)
            findings = () if raw_findings is None else _findings(raw_findings)
        except (ValueError, TypeError, AttributeError, RecursionError) as error:
            raise RecordingError(f"{self.path} line {self.line_numbers[index]}: {error}") from None
        if topology is not None:
            snapshot = _with_topology(snapshot, topology)
        return Frame(snapshot, findings, recorded=raw_findings is not None)


def _findings(raw: Any) -> tuple[Finding, ...]:
    if not isinstance(raw, list):
        raise ValueError("findings: expected a list")
    return tuple(decode_record(Finding, item) for item in raw)


def _with_topology(snapshot: Snapshot, topology: Topology) -> Snapshot:
    return msgspec.structs.replace(snapshot, topology=topology)


def _open(path: str) -> BinaryIO:
    """The file, opened without blocking on a FIFO and refused unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise RecordingError(f"cannot read {path}: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RecordingError(f"cannot read {path}: not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _tell(recording: Recording, record: dict[str, Any], when: float, first: bool) -> None:
    """The line's part in the timeline: on the first line, what had changed before recording began; on each, its
    findings. A line whose findings do not decode tells nothing (its frame will say why when played)."""
    try:
        if first and isinstance(record.get("timeline"), list):
            recording.advice.seed(decode_record(Change, c) for c in record["timeline"] if c.get("time", when) <= when)
        raw = record.get("findings")
        if raw is not None:
            recording.advice.update(when, _findings(raw))
            recording.has_findings = True
    except (ValueError, TypeError, AttributeError, RecursionError):
        return


def _check_header(path: str, number: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise RecordingError(f"{path} line {number}: not an hwtop recording (no {FORMAT} header)")
    if record.get("schema") != SCHEMA:
        raise RecordingError(f"{path} line {number}: snapshot schema {record.get('schema')!r} is not supported "
                             f"(this hwtop reads {SCHEMA})")
    return record


class _Stream:
    """The file's bytes, decompressed member by member when gzip, in bounded chunks. A compressed stream cut
    short (a killed recorder: its lines were sync-flushed) yields everything before the cut, and says so."""

    CHUNK = 1 << 20

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.truncated: str | None = None

    def chunks(self) -> Iterator[bytes]:
        head = self.raw.read(2)
        if head != GZIP_MAGIC:
            yield head
            while chunk := self.raw.read(self.CHUNK):
                yield chunk
            return
        pending = head
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            data = pending or self.raw.read(self.CHUNK)
            pending = b""
            if not data:
                if not inflater.eof:
                    self.truncated = "the compressed stream was cut short"
                return
            try:
                yield inflater.decompress(data, self.CHUNK)
                while inflater.unconsumed_tail:
                    yield inflater.decompress(inflater.unconsumed_tail, self.CHUNK)
            except zlib.error as error:
                self.truncated = f"corrupt compressed data ({error})"
                return
            if inflater.eof:  # the next gzip member (a second recorder session, or `cat a.gz b.gz`)
                pending = inflater.unused_data
                inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                if not pending:
                    pending = self.raw.read(self.CHUNK)
                    if not pending:
                        return

    def lines(self, path: str) -> Iterator[tuple[int, bytes]]:
        """(line number, line with its newline if it had one); a line over MAX_LINE is refused as it grows."""
        buffer, number = b"", 0
        for chunk in self.chunks():
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                number += 1
                line, buffer = buffer[: end + 1], buffer[end + 1:]
                if len(line) > MAX_LINE:
                    raise RecordingError(f"{path} line {number}: longer than {MAX_LINE >> 20} MiB, "
                                         "not a recording line")
                yield number, line
            if len(buffer) > MAX_LINE:
                raise RecordingError(f"{path} line {number + 1}: longer than {MAX_LINE >> 20} MiB, "
                                     "not a recording line")
        if buffer:
            yield number + 1, buffer


def load(path: str) -> Recording:
    """Reads and checks a recording's structure a chunk at a time; the snapshots themselves are decoded when
    played. A stream or last line cut short keeps what came before it, with the reason in `truncated`."""
    recording: Recording | None = None
    carrier: int | None = None
    truncated: str | None = None
    with _open(path) as raw:
        stream = _Stream(raw)
        for number, data in stream.lines(path):
            complete = data.endswith(b"\n")
            if not data.strip():
                continue
            try:
                recording, carrier = _take(path, number, data.decode("utf-8"), recording, carrier)
            except (RecordingError, UnicodeDecodeError) as error:
                if complete or recording is None:
                    if isinstance(error, UnicodeDecodeError):
                        raise RecordingError(f"{path} line {number}: not text (a binary file?)") from None
                    raise
                # a half-written last line is what a recorder killed mid-write leaves
                truncated = f"line {number} was cut short (the recorder stopped mid-write)"
        truncated = truncated or stream.truncated
    if recording is None:
        if truncated:
            raise RecordingError(f"{path}: {truncated} before the first line")
        raise RecordingError(f"{path}: empty file, not an hwtop recording")
    recording.truncated = truncated
    if not recording.lines:
        raise RecordingError(f"{path}: the recording holds no snapshots")
    return recording


def _take(path: str, number: int, line: str, recording: Recording | None,
          carrier: int | None) -> tuple[Recording, int | None]:
    try:
        record = parse_line(line)
    except ValueError as error:
        raise RecordingError(f"{path} line {number}: not JSON ({error})") from None
    if recording is None:
        return Recording(path, _check_header(path, number, record)), None
    if isinstance(record, dict) and "format" in record:
        _check_header(path, number, record)  # a recorder appended a new segment
        return recording, None
    when = record.get("time") if isinstance(record, dict) else None
    if not isinstance(when, int | float) or isinstance(when, bool):
        raise RecordingError(f"{path} line {number}: not a snapshot (no time)")
    if recording.times and when < recording.times[-1]:
        raise RecordingError(f"{path} line {number}: time goes backwards")
    if record.get("schema") != SCHEMA:
        raise RecordingError(f"{path} line {number}: snapshot schema {record.get('schema')!r} is not supported")
    index = len(recording.lines)
    _tell(recording, record, float(when), first=index == 0)
    if "topology" in record:
        carrier = index if record["topology"] is not None else None
    recording.lines.append(line)
    recording.line_numbers.append(number)
    recording.times.append(float(when))
    recording.topology_of.append(carrier)
    return recording, carrier
