"""The JSON answer to STATUS (NCCL >= 2.28.7; ras.rst "JSON Output", written by rasDumpCommsToJSON in
src/ras/client_support.cc): communicators, each with its ranks (status, per-operation collective counts) and its
missing ranks (unresponsive, considered dead). Decoded by msgspec into typed records in one pass, so a
4,096-rank answer of a few MB costs milliseconds; fields NCCL adds later are ignored, fields it drops default.

NCCL prints host names into the JSON without escaping them (jsonWriteRankData's "%s"): a host string with a quote
or a control character breaks the document. That is a RasError of one line, never a guess at what was meant."""

from __future__ import annotations

import msgspec

from hwtop.model.ras import RasComm, RasRank, RasReply
from hwtop.probes.nccl_ras.client import RasError


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


def _opt(value: int) -> int | None:
    return None if value < 0 else value


def _rank(raw: _Rank, missing: bool) -> RasRank:
    s = raw.status
    return RasRank(raw.rank, raw.host, _opt(raw.pid), _opt(raw.cuda_dev), _opt(raw.nvml_dev), s.init_state,
                   s.async_error, s.finalize_called, s.destroy_flag, s.abort_flag,
                   tuple(raw.collective_counts.items()), missing, s.unresponsive, s.considered_dead)


def parse_json(text: str) -> RasReply:
    try:
        reply = _DECODER.decode(text.encode("utf-8", "surrogatepass"))
    except (msgspec.DecodeError, UnicodeEncodeError) as error:
        where = str(error).split("\n")[0][:100]
        raise RasError(f"broken JSON answer ({where})") from None
    comms = tuple(
        RasComm(c.hash, c.size or len(c.ranks) + len(c.missing_ranks),
                tuple(_rank(r, False) for r in c.ranks) + tuple(_rank(r, True) for r in c.missing_ranks))
        for c in reply.communicators)
    return RasReply("json", comms, reply.nccl_version, (), reply.ras.timeouts_count, reply.ras.collection_time_sec,
                    len(text))
