"""A reader of one more part of the job plugs into JobProbe's `parts`: it is handed each tick what the probe found
(the processes in tree order, the rows, last tick's rows, the Python pids), reads what the readers before it filled
(the ranks), may join its own facts to them, and is closed with the probe."""

from __future__ import annotations

import msgspec.structs

from hwtop.probes.job import JobProbe
from hwtop.probes.job.parts import JobParts, JobTick
from tests.fakeproc import FakeProc, Proc
from tests.manual_clock import ManualClock

PY = "/usr/bin/python3"


class StepsReader:
    """Stands for a reader such as a Flight Recorder's: its own count per rank, joined to the ranks by pid."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, list[int], list[int], list[int], list[str | None]]] = []
        self.reads: dict[int, int] = {}
        self.closed = False

    def read(self, tick: JobTick, parts: JobParts) -> None:
        self.seen.append((tick.number, [p.pid for p in tick.processes], sorted(tick.last), sorted(tick.python),
                          [p.state for p in tick.rows]))
        for figures in parts.ranks:
            if figures.pid is not None:
                self.reads[figures.pid] = self.reads.get(figures.pid, 0) + 1
        parts.ranks = tuple(msgspec.structs.replace(r, steps=self.reads.get(r.pid or 0)) for r in parts.ranks)

    def close(self) -> None:
        self.closed = True


def test_a_new_part_is_handed_the_tick_and_joins_its_facts_to_the_ranks(tmp_path) -> None:  # noqa: ANN001
    proc = FakeProc(tmp_path)
    proc.add(Proc(500, 1, "python3", (PY, "-m", "torch.distributed.run", "train.py")))
    for rank, pid in ((0, 510), (1, 511)):
        proc.add(Proc(pid, 500, "python3", (PY, "train.py"), env={"RANK": str(rank), "LOCAL_RANK": str(rank)}))
    proc.add(Proc(520, 510, "sh", ("/bin/sh", "-c", "true")))
    proc.write()
    clock = ManualClock(100.0)
    probe = JobProbe(roots=(500,), root=str(tmp_path), clock=clock, host="node-a", exclude=frozenset())
    reader = StepsReader()
    probe.parts = (*probe.parts, reader)
    probe.read(now=1.0)
    proc.procs[511].state = "Z"
    proc.write()
    clock.now += 1
    job = probe.read(now=2.0)
    assert [(r.rank, r.pid, r.steps) for r in job.ranks] == [(0, 510, 2), (1, 511, 2)]
    assert reader.seen[0] == (1, [500, 510, 520, 511], [], [500, 510, 511], ["S", "S", "S", "S"])
    assert reader.seen[1] == (2, [500, 510, 520, 511], [500, 510, 511, 520], [500, 510, 511], ["S", "S", "S", "Z"])
    probe.close()
    assert reader.closed
