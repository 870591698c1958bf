"""Asking a focused job's ranks for their Flight Recorder dumps, when the user asks (`F` in the job view, `doctor
--fr-dump`), never by itself: each rank of this host through its dump pipe (pipe.request_dump, as its own user:
files.process_uid), one plain line per rank saying it was asked or why not, and one line for the ranks whose
environment sets no pipe, with how to set one.

A rank's pipe is its FlightRank's (`flight.pipe`) where the recorder's settings were read; else its environment is
read here, from /proc/PID/environ, for that one variable. Ranks known from NCCL's RAS alone (`nccl_only`: another
host's) are not this host's to ask."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hwtop.model.job import RankFigures
from hwtop.probes.flight_recorder.files import process_uid
from hwtop.probes.flight_recorder.pipe import pipe_path, request_dump
from hwtop.probes.flight_recorder.settings import PIPE_VARIABLE, settings_of
from hwtop.probes.proctree import parse_environ
from hwtop.probes.sysfs import read_bytes

ENVIRON_LIMIT = 1 << 20  # as the job probe reads a process's environment
SET_A_PIPE = (f"start the job with {PIPE_VARIABLE}=/tmp/fr_pipe_ and TORCH_FR_BUFFER_SIZE>0 (2000, say) for its "
              "ranks to take the request")
DUMPED_WHERE = ("an asked rank's watchdog reads its pipe about once a second, then writes its dump to <prefix><rank> "
                "(TORCH_FR_DUMP_TEMP_FILE, else torch's default: ~/.cache/torch/comm_lib_trace_rank_ since 2.6)")


def ask_dumps(ranks: Iterable[RankFigures], proc: str = "/proc") -> tuple[str, ...]:
    """Asks every rank of this host (a pid, not `nccl_only`) for a dump; the lines that say what became of each."""
    every = list(ranks)
    local = sorted(((r.rank, r.pid, r) for r in every if not r.nccl_only and r.pid is not None), key=lambda t: t[0])
    lines: list[str] = []
    unset: list[int] = []
    asked = False
    for rank, pid, figures in local:
        who = f"rank {rank} (pid {pid})"
        try:
            stem = figures.flight.pipe if figures.flight is not None else _pipe_of(proc, pid)
        except OSError:
            lines.append(f"{who}: its environment cannot be read (another user's process, or gone), so its dump "
                         "pipe is unknown: not asked")
            continue
        if stem is None:
            unset.append(rank)
        elif (uid := process_uid(proc, pid)) is None:
            lines.append(f"{who}: its user cannot be read from {proc}/{pid}/status (gone, or hidden): not asked")
        else:
            why = request_dump(stem, rank, uid, pid=pid, proc=proc)
            asked = asked or why is None
            lines.append(f"{who}: asked through {pipe_path(stem, rank)}" if why is None else f"{who}: {why}")
    if unset:
        said = f"the job does not set {PIPE_VARIABLE}" if len(unset) == len(local) else \
            f"{PIPE_VARIABLE} is not set in {'its' if len(unset) == 1 else 'their'} environment"
        lines.append(f"{_ranks(unset)}: {said}, so there is no dump pipe to ask through; {SET_A_PIPE}")
    if not local:
        lines.append("no rank of the job is known on this host (a rank is a process with RANK in its environment): "
                     "nothing was asked")
    elsewhere = sum(1 for r in every if r.nccl_only)
    if elsewhere:
        lines.append(f"{elsewhere} rank(s) on other hosts (known from NCCL's RAS) are not asked from here: hwtop "
                     "doctor --fr-dump on their hosts asks them")
    if asked:
        lines.append(DUMPED_WHERE)
    return tuple(lines)


def _pipe_of(proc: str, pid: int) -> str | None:
    """The rank's TORCH_NCCL_DEBUG_INFO_PIPE_FILE as its environment sets it (None: not set); OSError where its
    environment cannot be read."""
    return settings_of(parse_environ(read_bytes(f"{proc}/{pid}/environ", ENVIRON_LIMIT), (PIPE_VARIABLE,), ())).pipe


def _ranks(numbers: Sequence[int]) -> str:
    listed = [str(n) for n in sorted(numbers)[:6]] + ([f"{len(numbers) - 6} more"] if len(numbers) > 6 else [])
    word = "rank" if len(numbers) == 1 else "ranks"
    return f"{word} {listed[0]}" if len(listed) == 1 else f"{word} {', '.join(listed[:-1])} and {listed[-1]}"
