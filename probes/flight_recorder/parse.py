"""A dump's plain containers → `FlightDump`, as torch's own analyser reads them
(torch/distributed/flight_recorder/components: `version`, `pg_config`, `pg_status`, `entries`, each entry's
`process_group` (name, desc), `collective_seq_id`, `profiling_name` (`nccl:all_reduce`), `state` (scheduled, started,
completed), `retired`, `time_created_ns`, `frames` innermost first, `is_p2p`). gloo (torch 2.13) leaves every entry
`scheduled` and marks a finished one `retired`; NCCL marks it `completed`. Anything of another shape is a ValueError
with one line; fields of the wrong type are skipped, never trusted. What is read is bounded: the newest MAX_ENTRIES
entries (the ring is dumped oldest first), MAX_GROUPS groups, 256 frames an entry, integers of 64 bits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import islice
from typing import Any

from hwtop.model.flight import FlightCollective, FlightDump, FlightGroup
from hwtop.probes.stack_classify import Frame, site_of

MAX_TEXT = 200  # an operation's name or a group's description: bounded, untrusted
MAX_GROUPS = 64
MAX_ENTRIES = 20_000  # torch keeps 2,000 unless TORCH_FR_BUFFER_SIZE says more


def parse_dump(value: object, path: str, dumped_at: float) -> FlightDump:
    if not isinstance(value, dict):
        raise ValueError("not a Flight Recorder dump (not a dict)")
    entries = value.get("entries", [])
    if not isinstance(entries, list):
        raise ValueError("not a Flight Recorder dump (its entries are not a list)")
    status = value.get("pg_status")
    config = value.get("pg_config")
    by_group: dict[str, list[Mapping[str, Any]]] = {}
    descs: dict[str, str] = {}
    for entry in entries[-MAX_ENTRIES:]:
        if not isinstance(entry, dict) or entry.get("is_p2p") is True or not _int(entry.get("collective_seq_id")):
            continue
        group = entry.get("process_group")
        name = _text(group[0]) if isinstance(group, (list, tuple)) and group else "?"
        if name not in by_group and len(by_group) >= MAX_GROUPS:
            continue
        by_group.setdefault(name, []).append(entry)
        if isinstance(group, (list, tuple)) and len(group) > 1:
            descs.setdefault(name, _text(group[1]))
    names = list(by_group) + list(islice((k for k in (status if isinstance(status, dict) else {})
                                          if _text(k) not in by_group), MAX_GROUPS))
    groups = tuple(_group(_text(name), by_group.get(name, []), status, descs.get(name, ""), config)
                   for name in names[:MAX_GROUPS])
    return FlightDump(path[:4096], dumped_at, _text(value.get("version", "")), groups)


def _group(name: str, entries: list[Mapping[str, Any]], status: object, desc: str, config: object) -> FlightGroup:
    counts = status.get(name) if isinstance(status, dict) else None
    counts = counts if isinstance(counts, dict) else {}
    launched = max([_int(counts.get("last_enqueued_collective")) or 0,
                    *(_int(e.get("collective_seq_id")) or 0 for e in entries)])
    completed = max([_int(counts.get("last_completed_collective")) or 0,
                     *(_int(e.get("collective_seq_id")) or 0 for e in entries if _done(e))])
    ordered = sorted(entries, key=lambda e: _int(e.get("collective_seq_id")) or 0)
    pending = next((e for e in ordered if (_int(e.get("collective_seq_id")) or 0) > completed), None)
    return FlightGroup(name, desc, launched, completed, _collective(pending, completed),
                       _collective(ordered[-1], completed) if ordered else None, _size(config, name, desc))


def _done(entry: Mapping[str, Any]) -> bool:
    return entry.get("state") == "completed" or entry.get("retired") is True


def _collective(entry: Mapping[str, Any] | None, completed: int) -> FlightCollective | None:
    if entry is None:
        return None
    seq = _int(entry.get("collective_seq_id")) or 0
    op = _text(entry.get("profiling_name", "")).rpartition(":")[2] or "?"
    created = _int(entry.get("time_created_ns"))
    frames = entry.get("frames")
    stack = [Frame(_text(f.get("name", "")), _text(f.get("filename", ""), 4096), _int(f.get("line")))
             for f in frames[:256] if isinstance(f, dict)] if isinstance(frames, list) else []
    return FlightCollective(seq, op, seq <= completed or _done(entry), created / 1e9 if created else None,
                            site_of(stack[::-1]))  # site_of reads outermost first, as py-spy writes stacks


def _size(config: object, name: str, desc: str) -> int | None:
    """How many ranks the group has, from its pg_config (`ranks` is a string, "[0, 1, 2]": counted, never
    evaluated). gloo's default group is listed under the name ""."""
    if not isinstance(config, dict):
        return None
    found = config.get(name)
    if not isinstance(found, dict):
        found = next((c for c in config.values() if isinstance(c, dict) and desc and c.get("desc") == desc), None)
    if not isinstance(found, dict) and len(config) == 1:
        found = next(iter(config.values()))
    ranks = found.get("ranks") if isinstance(found, dict) else None
    return len(re.findall(r"\d+", ranks[:1 << 20])) if isinstance(ranks, str) else None


def _int(value: object) -> int | None:
    """An integer of 64 bits (signed or not), as torch writes them: a larger one is no figure of a dump."""
    return value if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 64 else None


def _text(value: object, limit: int = MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""
