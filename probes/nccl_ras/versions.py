"""Which NCCL releases hwtop may send STATUS to, and in which format: one table, each row with its source. First,
do no harm: a release whose only format is text, or whose STATUS path has a known crash, is never asked while the
job is healthy (asked only when the job's own measures of progress say it stopped, twice a stop, or when the user asks:
RasWatch(polls=True)), and a release the table does not know gets the same care.

The crashes, read from NVIDIA/nccl at each tag and its tracker:
- nccl#1669 (2.26.2): a query while a communicator initialises read peer info not yet gathered; fixed in 2.27 by
  skipping such communicators (collectives.cc `peerInfoValid`), whose `continue` leaves a zeroed entry ...
- nccl#2346 (open, still at v2.30.7-1): ... that the *text* formatter passes to __builtin_clz (undefined for 0):
  segfaults on 256 GPUs. The JSON dump never calls it.
- nccl#1762 (2.27.3, fixed in 2.29.2): the *text* formatter steps over communicators without their missing-rank
  arrays (2.26-2.29.1): memory read past the answer's data as soon as a rank is missing (the fixtures show it).
- nccl#1718 (2.26.5): polling in a tight loop while communicators come and go crashed jobs.
So from 2.28.7 the JSON path has none of them (2.28.7/2.28.9 write one comma short: repaired by parse_json)."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

Version = tuple[int, int, int]
JSON_SINCE: Version = (2, 28, 7)
ISSUES = "https://github.com/NVIDIA/nccl/issues/"


@dataclass(frozen=True, slots=True)
class Release:
    first: Version
    last: Version  # the newest tag of the range read
    json: bool  # SET FORMAT json (rasDumpCommsToJSON)
    monitor: bool  # MONITOR events
    crashes: tuple[str, ...]  # NCCL issues of a crash in the STATUS path of the format hwtop would use
    source: str


TABLE: tuple[Release, ...] = (
    Release((2, 24, 0), (2, 25, 99), False, False, ("#1669",),
            "v2.24.3-1, v2.25.1-1 src/ras/client_support.cc: text only; collectives.cc reads a communicator's peer "
            "info during init (nccl#1669)"),
    Release((2, 26, 0), (2, 26, 99), False, False, ("#1669", "#1718", "#1762"),
            "v2.26.2-1..v2.26.6-1: text only; nccl#1669 (query during init), #1718 (polling), #1762 (text walk "
            "past missing-rank arrays)"),
    Release((2, 27, 0), (2, 28, 6), False, False, ("#2346", "#1762"),
            "v2.27.3-1..v2.28.3-1: text only; collectives.cc's `continue` leaves zeroed entries the text formatter "
            "passes to __builtin_clz (nccl#2346), text walk past missing-rank arrays (nccl#1762)"),
    Release((2, 28, 7), (2, 29, 1), True, False, (),
            "v2.28.7-1, v2.28.9-1: SET FORMAT json; rasDumpCommsToJSON walks the data right and calls no CLZ; "
            "jsonWriteMissingRank's missing comma repaired"),
    Release((2, 29, 2), (2, 30, 7), True, True, (),
            "v2.29.2-1..v2.30.7-1: JSON fixed, MONITOR [lifecycle] events (PEER_NEW, PEER_DEAD)"),
)


def parse_version(text: str) -> Version | None:
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def release(version: Version | None) -> Release | None:
    if version is None:
        return None
    return next((r for r in TABLE if r.first <= version <= r.last), None)


def _issues(crashes: tuple[str, ...]) -> str:
    return "NVIDIA/nccl" + ", ".join(crashes)


@dataclass(frozen=True, slots=True)
class Policy:
    """`poll`: STATUS may go to the healthy job every interval; otherwise once each time it stops, or with
    the user's say-so. `json`: ask in JSON. `words`: the policy as the job view and doctor say it, in clauses
    joined by "; " (the job view wraps between them)."""

    poll: bool
    json: bool
    monitor: bool
    words: str


def policy(version: Version | None, json_answered: bool | None, user_polls: bool) -> Policy:
    """`json_answered`: whether `SET FORMAT json` was answered OK (None: not asked yet)."""
    row = release(version)
    named = f"NCCL {'.'.join(map(str, version))}" if version else "NCCL (version unknown)"
    json = bool(row.json) if row is not None else bool(json_answered)
    if row is not None and row.json:
        return Policy(True, True, row.monitor, f"{named}: asked in JSON")
    if row is not None:
        why = f"text answers only; STATUS can crash it ({_issues(row.crashes)})"
    elif version is not None:
        why = "a release hwtop's table does not know"
    else:
        why = "its release not learned yet" + (" (it answers JSON: 2.28.7 or later)" if json_answered else "")
    if user_polls:
        return Policy(True, json, json, f"{named}: {why}; asked every interval (--nccl-ras-poll)")
    return Policy(False, json, json, f"{named}: {why}; asked only when the job stops, never while it makes "
                  "progress (--nccl-ras-poll: every interval)")


# ---- learning the version before any STATUS ----
_SONAME = re.compile(r"libnccl\.so\.(\d+\.\d+\.\d+)")
_DIST = re.compile(r"nvidia_nccl_cu\d+-(\d+\.\d+\.\d+)[^/]*\.dist-info$")


def version_of_library(path: str, root: str = "/") -> tuple[Version, str] | None:
    """The release of the libnccl a rank maps: its file name (`libnccl.so.2.27.5`, what the kernel shows for a
    symlinked libnccl.so.2), or the `nvidia_nccl_cu*-X.Y.Z.dist-info` beside a wheel's nvidia/nccl/lib/ (PyTorch's
    wheels), looked up under the process's root (`/proc/PID/root`, its container's files)."""
    name = os.path.basename(path)
    m = _SONAME.search(name)
    if m:
        return parse_version(m[1]) or (0, 0, 0), name
    site, found, _ = path.partition("/nvidia/nccl/lib/")
    if not found:
        return None
    for base in (root.rstrip("/") + site, site):
        for dist in sorted(glob.glob(os.path.join(glob.escape(base), "nvidia_nccl_cu*.dist-info"))):
            d = _DIST.search(dist)
            if d:
                return parse_version(d[1]) or (0, 0, 0), os.path.basename(dist)
    return None
