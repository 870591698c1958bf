"""The JSON answer to STATUS (NCCL >= 2.28.7; ras.rst "JSON Output", written by rasDumpCommsToJSON in
src/ras/client_support.cc): communicators, each with its ranks (status, per-operation collective counts) and its
missing ranks (unresponsive, considered dead). Decoded by msgspec into typed records in one pass, so a
4,096-rank answer of a few MB costs milliseconds; fields NCCL adds later are ignored, fields it drops default.

NCCL prints host names into the JSON without escaping them (jsonWriteRankData's "%s"): a host string with a quote
or a control character breaks the document. That is a RasError of one line, never a guess at what was meant.

One break is NCCL's own and is repaired: 2.28.7 and 2.28.9 write no comma after a missing rank's "nvml_dev"
(jsonWriteMissingRank; fixed in 2.29.2), so every answer naming a missing rank, the one that matters, is invalid
JSON. The comma is put back where that line and the missing rank's "status" meet, and the answer says so (asking
again in text would be worse: before 2.29.2 the text formatter misreads communicators with missing ranks,
nccl#1762). A communicator of 0 ranks is NCCL's zeroed entry (nccl#2346): said and left out.

MONITOR's events (2.29+) are JSON documents one after another on the connection: `parse_events` reads them, and
says each it cannot read (lost) rather than ending the stream. Whatever arrives, both raise nothing but RasError."""

from __future__ import annotations

import re

import msgspec

from hwtop.model.ras import RasComm, RasEvent, RasRank, RasReply
from hwtop.probes.nccl_ras.client import PARSE_ERRORS, RasError, one_line, unreadable


class _Status(msgspec.Struct):
    init_state: int = 0
    async_error: int = 0
    finalize_called: bool = False
    destroy_flag: bool = False
    abort_flag: bool = False
    unresponsive: bool = False
    considered_dead: bool = False


class _Rank(msgspec.Struct):
    rank: int
    host: str = "unknown"
    pid: int = -1
    cuda_dev: int = -1
    nvml_dev: int = -1
    status: _Status = msgspec.field(default_factory=_Status)
    collective_counts: dict[str, int] = msgspec.field(default_factory=dict)


class _Comm(msgspec.Struct):
    hash: str = ""
    secondary_hash: str = ""
    size: int = 0
    ranks: list[_Rank] = msgspec.field(default_factory=list)
    missing_ranks: list[_Rank] = msgspec.field(default_factory=list)


class _Ras(msgspec.Struct):
    collection_time_sec: float | None = None
    timeouts_count: int = 0


class _Reply(msgspec.Struct):
    communicators: list[_Comm]
    nccl_version: str | None = None
    ras: _Ras = msgspec.field(default_factory=_Ras)


_DECODER = msgspec.json.Decoder(_Reply)
_MISSING_COMMA = re.compile(rb'("nvml_dev": -?\d+)(\s*\n\s*"status")')
NOTE_COMMA = ("NCCL 2.28.7/2.28.9 wrote no comma after a missing rank's nvml_dev (jsonWriteMissingRank, fixed in "
              "2.29.2): repaired")
NOTE_ZEROED = "a communicator of 0 ranks in the answer: NCCL's zeroed entry (nccl#2346), left out"


def _opt(value: int) -> int | None:
    return None if value < 0 else value


def _rank(raw: _Rank, missing: bool) -> RasRank:
    s = raw.status
    return RasRank(raw.rank, raw.host, _opt(raw.pid), _opt(raw.cuda_dev), _opt(raw.nvml_dev), s.init_state,
                   s.async_error, s.finalize_called, s.destroy_flag, s.abort_flag,
                   tuple(raw.collective_counts.items()), missing, s.unresponsive, s.considered_dead)


def _decode(data: bytes) -> tuple[_Reply, tuple[str, ...]]:
    try:
        return _DECODER.decode(data), ()
    except msgspec.DecodeError as error:
        repaired = _MISSING_COMMA.sub(rb"\1,\2", data)
        if repaired != data:
            try:
                return _DECODER.decode(repaired), (NOTE_COMMA,)
            except msgspec.DecodeError:
                pass
        where = str(error).split("\n")[0][:100]
        raise RasError(f"broken JSON answer ({where})") from None


@unreadable("JSON answer")
def parse_json(text: str) -> RasReply:
    try:
        data = text.encode("utf-8", "surrogatepass")
    except UnicodeEncodeError:
        raise RasError("broken JSON answer (not UTF-8)") from None
    reply, notes = _decode(data)
    comms = tuple(
        RasComm(c.hash, c.size or len(c.ranks) + len(c.missing_ranks),
                tuple(_rank(r, False) for r in c.ranks) + tuple(_rank(r, True) for r in c.missing_ranks),
                secondary=c.secondary_hash, missing_count=len(c.missing_ranks))
        for c in reply.communicators if c.size or c.ranks or c.missing_ranks)
    if len(comms) < len(reply.communicators):
        notes += (NOTE_ZEROED,)
    return RasReply("json", comms, reply.nccl_version, (), reply.ras.timeouts_count, reply.ras.collection_time_sec,
                    len(text), notes=notes)


class _Peer(msgspec.Struct):
    host: str = "unknown"
    pid: int = -1
    addr: str = ""
    cuda_devs: list[int] = msgspec.field(default_factory=list)
    nvml_devs: list[int] = msgspec.field(default_factory=list)


class _Event(msgspec.Struct):
    event: str
    timestamp: str = ""
    group: str = ""
    peer: _Peer | None = None
    details: str = ""


_EVENT = msgspec.json.Decoder(_Event)
_TEXT_EVENT = re.compile(r"^\[(?P<at>[^]]*)\] (?P<event>\w+): (?:Process (?P<pid>\d+) on node (?P<host>\S+) "
                         r"managing GPUs? (?P<gpus>[\d,]+))?")


def _event(peer: _Peer | None, event: str, at: str) -> RasEvent:
    if peer is None:
        return RasEvent(event, "unknown", None, (), at)
    host = peer.host if peer.host != "unknown" or not peer.addr else peer.addr.partition("<")[0]
    return RasEvent(event, host, _opt(peer.pid), tuple(peer.nvml_devs or peer.cuda_devs), at)


def _json_event(chunk: bytes) -> RasEvent:
    raw = _EVENT.decode(chunk)
    return _event(raw.peer, raw.event, raw.timestamp)


def _text_event(line: str) -> RasEvent | None:
    m = _TEXT_EVENT.match(line)
    if m is None:
        return None
    gpus = tuple(int(g) for g in m["gpus"].split(",")) if m["gpus"] else ()
    return RasEvent(m["event"], m["host"] or "unknown", int(m["pid"]) if m["pid"] else None, gpus, m["at"])


@unreadable("MONITOR events")
def parse_events(data: bytes) -> tuple[list[RasEvent], bytes, list[str]]:
    """The complete events in what a MONITOR connection sent so far, the bytes of an event not yet whole, and a
    line for each event that could not be read (lost; the stream goes on: a host name NCCL printed unescaped, a
    field out of form). JSON events are documents ending in a line "}" (rasClientsNotifyEvent); text ones are one
    line each."""
    events: list[RasEvent] = []
    lost: list[str] = []
    json = data.lstrip().startswith(b"{")
    while (end := data.find(b"\n}\n" if json else b"\n")) >= 0:
        size = end + 3 if json else end + 1
        chunk, data = data[:size], data[size:]
        try:
            event = _json_event(chunk) if json else _text_event(chunk[:-1].decode("utf-8", "replace"))
        except PARSE_ERRORS as error:  # msgspec.DecodeError is a ValueError
            lost.append(f"an event lost, unreadable ({type(error).__name__}: {one_line(error, 80)})")
            continue
        if event is not None:
            events.append(event)
    return events, data, lost
