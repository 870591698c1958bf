"""What PyTorch's Flight Recorder says of one rank: the collectives it recorded, per process group, as its dump
holds them (torch/csrc/distributed/c10d/FlightRecorder.cpp; `TORCH_FR_BUFFER_SIZE` entries, written per rank to
`<TORCH_FR_DUMP_TEMP_FILE><rank>` on a watchdog timeout or when asked through the dump pipe). NCCL's RAS counts
collectives *launched*; the recorder also says which *completed*, and from which line of the job's code each was
called. Read by probes/flight_recorder/, judged by advice/ranks.py; a rank's figures (model/job.py RankFigures)
hold its FlightRank.

Frames, descriptions and operation names are text from the job's own dump: untrusted, shown through safe_text."""

from __future__ import annotations

from hwtop.model.record import Record


class FlightCollective(Record, frozen=True):
    """One recorded collective: its sequence id in its process group, the operation (`all_reduce`, from the entry's
    `profiling_name` `gloo:all_reduce`), whether it completed, when it was launched (wall clock, the rank's host)
    and the innermost frame of the job's own code that called it (`train.py:63 main`)."""

    seq: int
    op: str
    completed: bool
    created_at: float | None = None
    site: str | None = None


class FlightGroup(Record, frozen=True):
    """One process group of a rank's dump: the highest sequence id it launched and the highest it completed (its
    `pg_status`, joined with its entries: gloo leaves each entry `scheduled` and marks a finished one `retired`),
    the oldest collective launched and not completed, and the newest recorded."""

    pg: str  # the group's name in the dump ("0" for the default group)
    desc: str  # its description ("default_pg")
    launched: int
    completed: int
    pending: FlightCollective | None = None
    newest: FlightCollective | None = None
    size: int | None = None  # ranks in the group, where its pg_config lists them


class FlightDump(Record, frozen=True):
    """One rank's dump as read: where, when it was written (its mtime), the format's version and its groups."""

    path: str
    dumped_at: float
    version: str
    groups: tuple[FlightGroup, ...] = ()

    def group(self, pg: str) -> FlightGroup | None:
        return next((g for g in self.groups if g.pg == pg), None)


DEFAULT_ON_SINCE = (2, 6)  # pytorch/pytorch#142260: 2,000 entries unless set; 0 (off) before


class FlightRank(Record, frozen=True):
    """The recorder as one rank has it: `buffer` entries as its environment sets them (None: not set, torch's
    default), the torch it runs (from the libtorch it maps), where it dumps (`prefix`), the dump pipe that asks it
    for one (`pipe`: `TORCH_NCCL_DEBUG_INFO_PIPE_FILE`, a FIFO at `<pipe><rank>.pipe`), its latest dump, and why a
    dump found at its prefix was not read (`refused`: owner, link, size, content)."""

    buffer: int | None = None
    torch_version: str | None = None
    prefix: str | None = None
    pipe: str | None = None
    dump: FlightDump | None = None
    refused: str | None = None

    @property
    def enabled(self) -> bool | None:
        """On, off, or None where neither its environment nor its torch's version says."""
        if self.buffer is not None:
            return self.buffer > 0
        version = _version(self.torch_version)
        return None if version is None else version >= DEFAULT_ON_SINCE


def _version(text: str | None) -> tuple[int, int] | None:
    parts = (text or "").split(".")
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None
