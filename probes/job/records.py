"""One process's /proc/PID/stat parsed, and what the job probe keeps of each live process between ticks."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field

from hwtop.probes.threads import ThreadProbe


def exit_code_of(stat_text: str) -> int | None:
    """Field 52 of /proc/PID/stat: a zombie's wait status (Linux ≥ 3.5)."""
    rest = stat_text[stat_text.rindex(")") + 2:].split()
    if len(rest) < 50:
        return None
    status = int(rest[49])
    return (status >> 8) & 0xFF if status & 0x7F == 0 else 128 + (status & 0x7F)


@dataclass(frozen=True, slots=True)
class _Stat:
    pid: int
    ppid: int
    name: str
    state: str
    ticks: int
    threads: int
    start: int
    rss_pages: int
    major_faults: int
    text: str


def parse_job_stat(text: str) -> _Stat:
    close = text.rindex(")")
    rest = text[close + 2:].split()
    return _Stat(int(text[:text.index("(")]), int(rest[1]), text[text.index("(") + 1:close], rest[0],
                 int(rest[11]) + int(rest[12]), int(rest[17]), int(rest[19]), int(rest[21]), int(rest[9]), text)


@dataclass(slots=True)
class _Static:
    argv: tuple[str, ...]
    environ: dict[str, str] | None
    python: bool
    launcher: str | None

    @property
    def cmdline(self) -> str | None:
        return " ".join(self.argv) or None


@dataclass(slots=True)
class _Tracked:
    """What hwtop keeps of one live process between ticks (keyed by pid and start time)."""

    static: _Static
    threads: ThreadProbe = field(default_factory=ThreadProbe)
    cpu: tuple[float, int] | None = None
    io: tuple[float, int, int] | None = None
    faults: tuple[float, int] | None = None
    affinity: tuple[int, ...] | None = None
    affinity_at: float = -1e9
    numa: tuple[tuple[int, int], ...] | None = None
    numa_at: float = -1e9
    pss: int | None = None
    pss_at: float = -1e9
    devices: tuple[tuple[str, int], ...] = ()
    fds_at: float = -1e9


class ExitCodes:
    """The exit codes of the job's processes seen as zombies (their parent had not reaped them yet), kept while
    the process or its row is: the figures write them, the rows of ended processes read them."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        self._codes: dict[int, int] = {}

    def seen(self, pid: int, code: int) -> None:
        self._codes[pid] = code

    def get(self, pid: int, default: int | None = None) -> int | None:
        return self._codes.get(pid, default)

    def forget(self, live: set[int], rows: Container[int]) -> None:
        """Keep the codes of processes still there (`live`) or still shown (`rows`, by pid)."""
        self._codes = {pid: code for pid, code in self._codes.items() if pid in live or pid in rows}
