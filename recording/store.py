"""Recordings: one snapshot per tick as JSON lines (gzip when the name ends in .gz), after a header line naming
the format, the snapshot schema, the host and the hwtop version. Each line is written and flushed as one piece,
so a recorder killed at any moment loses at most its last tick, and a half-written last line is skipped on
replay. The topology (static, and the largest part of a snapshot) is written only when it changes."""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from hwtop.model.serial import decode_dataclass
from hwtop.model.snapshot import SCHEMA, Snapshot, Topology

from hwtop import __version__

FORMAT = "hwtop.recording/1"
GZIP_MAGIC = b"\x1f\x8b"


class RecordingError(Exception):
    """A recording that cannot be written or read; the message says what and where (path, line)."""


def hwtop_version() -> str:
    return __version__


class Recorder:
    def __init__(self, path: str, interval_s: float | None = None, host: str | None = None) -> None:
        self.path = path
        self.count = 0
        self._last_topology: Topology | None = None
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags, 0o666)  # the user's umask decides; a symlink is refused, not followed
        except OSError as error:
            raise RecordingError(f"cannot record to {path}: {error.strerror}") from None
        raw: BinaryIO = os.fdopen(fd, "ab", buffering=0)
        self._raw = raw
        self._out: BinaryIO = gzip.GzipFile(fileobj=raw, mode="ab") if path.endswith(".gz") else raw  # type: ignore[assignment]
        self._header: dict[str, Any] | None = {
            "format": FORMAT, "schema": SCHEMA, "host": host or socket.gethostname(), "hwtop_version": hwtop_version(),
            "started": time.time(), "interval_s": interval_s}  # written with the first snapshot

    def _write_line(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n").encode()
        try:
            self._out.write(data)
            if isinstance(self._out, gzip.GzipFile):
                self._out.flush(zlib.Z_SYNC_FLUSH)  # a complete deflate block per line: readable if killed
        except OSError as error:
            self.close(quiet=True)
            raise RecordingError(f"recording to {self.path} stopped: {error.strerror}") from None

    def write(self, snapshot: Snapshot) -> None:
        if self._header is not None:
            header, self._header = self._header, None
            self._write_line(header)
        record = snapshot.to_dict()
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
    _topologies: dict[int, Topology | None] = field(default_factory=dict)

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
        data = json.loads(self.lines[index])
        topology = None
        carrier = self.topology_of[index]
        if carrier is not None:
            if carrier not in self._topologies:
                raw = json.loads(self.lines[carrier]).get("topology")
                self._topologies[carrier] = None if raw is None else decode_dataclass(Topology, raw)
            topology = self._topologies[carrier]
        data.pop("topology", None)
        try:
            snapshot = Snapshot.from_dict(data)
        except ValueError as error:
            raise RecordingError(f"{self.path} line {self.line_numbers[index]}: {error}") from None
        return snapshot if topology is None else _with_topology(snapshot, topology)


def _with_topology(snapshot: Snapshot, topology: Topology) -> Snapshot:
    import dataclasses

    return dataclasses.replace(snapshot, topology=topology)


def _read(path: str) -> tuple[bytes, str | None]:
    """The file's bytes, decompressed member by member when gzip (each recorder session appends one); a stream
    cut short yields what it holds, with the reason."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise RecordingError(f"cannot read {path}: {error.strerror}") from None
    if raw[:2] != GZIP_MAGIC:
        return raw, None
    out, truncated = [], None
    while raw:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(inflater.decompress(raw))
        except zlib.error as error:
            truncated = f"corrupt compressed data ({error})"
            break
        if not inflater.eof:
            truncated = "the compressed stream was cut short"
            break
        raw = inflater.unused_data
    return b"".join(out), truncated


def _check_header(path: str, number: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise RecordingError(f"{path} line {number}: not an hwtop recording (no {FORMAT} header)")
    if record.get("schema") != SCHEMA:
        raise RecordingError(f"{path} line {number}: snapshot schema {record.get('schema')!r} is not supported "
                             f"(this hwtop reads {SCHEMA})")
    return record


def load(path: str) -> Recording:
    """Reads and checks a recording's structure; the snapshots themselves are decoded when played."""
    data, truncated = _read(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise RecordingError(f"{path} line {line}: not text (a binary file?)") from None
    lines = text.split("\n")
    last_complete = text.endswith("\n")
    recording: Recording | None = None
    carrier: int | None = None
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        final = number == len(lines) and not last_complete
        try:
            recording, carrier = _take(path, number, line, recording, carrier)
        except RecordingError:
            if not final or recording is None:
                raise
            # a half-written last line is what a recorder killed mid-write leaves
            recording.truncated = f"line {number} was cut short (the recorder stopped mid-write)"
    if recording is None:
        raise RecordingError(f"{path}: empty file, not an hwtop recording")
    if truncated and recording.truncated is None:
        recording.truncated = truncated
    if not recording.lines:
        raise RecordingError(f"{path}: the recording holds no snapshots")
    return recording


def _take(path: str, number: int, line: str, recording: Recording | None,
          carrier: int | None) -> tuple[Recording, int | None]:
    try:
        record = json.loads(line)
    except ValueError:
        raise RecordingError(f"{path} line {number}: not JSON") from None
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
    if "topology" in record:
        carrier = index if record["topology"] is not None else None
    recording.lines.append(line)
    recording.line_numbers.append(number)
    recording.times.append(float(when))
    recording.topology_of.append(carrier)
    return recording, carrier
