"""The job probe reads each rank's Flight Recorder (probes/job/flight.py): from the rank's environment as the table
read it, its dump at its own prefix lands on its RankFigures by pid; a rank without a dump gets its settings alone;
the dumps are looked at every READ_EVERY_S, not every tick, and a rank that ended keeps its last reading."""

from __future__ import annotations

import os
from pathlib import Path

from hwtop.probes.job import JobProbe
from hwtop.probes.job.flight import READ_EVERY_S, JobFlight
from tests.fakeproc import FakeProc, Proc
from tests.manual_clock import ManualClock
from tests.probes.flight_recorder.conftest import lay_out

PY = "/usr/bin/python3"


def _job(tmp_path: Path) -> tuple[FakeProc, JobProbe, ManualClock]:
    """A 2-rank torchrun job: rank 0 dumps to `a/fr_rank_` (the 'hang' dumps laid out there), rank 1 has its
    recorder off and its prefix at `b/fr_rank_`, empty so far."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    lay_out("hang", tmp_path / "a")
    proc = FakeProc(tmp_path)
    proc.add(Proc(500, 1, "python3", (PY, "-m", "torch.distributed.run", "train.py")))
    for rank, pid, folder, buffer in ((0, 510, "a", "64"), (1, 511, "b", "0")):
        env = {"RANK": str(rank), "LOCAL_RANK": str(rank), "TORCH_FR_BUFFER_SIZE": buffer,
               "TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/{folder}/fr_rank_", "HOME": f"{tmp_path}/home"}
        proc.add(Proc(pid, 500, "python3", (PY, "train.py"), env=env, uid=os.getuid()))
    proc.write()
    clock = ManualClock(100.0)
    return proc, JobProbe(roots=(500,), root=str(tmp_path), clock=clock, host="node-a", exclude=frozenset()), clock


def test_a_rank_s_dump_lands_on_its_figures_and_a_rank_without_one_gets_its_settings(tmp_path: Path) -> None:
    _, probe, _ = _job(tmp_path)
    assert isinstance(probe.parts[-1], JobFlight)
    zero, one = probe.read(now=1.0).ranks
    assert (zero.rank, zero.pid, one.rank, one.pid) == (0, 510, 1, 511)
    assert zero.flight is not None and zero.flight.enabled and zero.flight.refused is None
    assert zero.flight.prefix == f"{tmp_path}/a/fr_rank_" and zero.flight.dump is not None
    (group,) = zero.flight.dump.groups
    assert (group.pg, group.size, group.launched, group.completed) == ("0", 3, 26, 25)
    assert one.flight is not None and one.flight.enabled is False and one.flight.buffer == 0
    assert one.flight.dump is None and one.flight.refused is None and one.flight.prefix == f"{tmp_path}/b/fr_rank_"
    probe.close()


def test_dumps_are_looked_at_every_few_seconds_and_an_ended_rank_keeps_its_reading(tmp_path: Path) -> None:
    proc, probe, clock = _job(tmp_path)
    probe.read(now=1.0)
    lay_out("hang", tmp_path / "b")  # rank 1 dumps now
    clock.now += READ_EVERY_S / 2
    assert probe.read(now=2.0).ranks[1].flight.dump is None  # type: ignore[union-attr]
    clock.now += READ_EVERY_S / 2
    one = probe.read(now=3.0).ranks[1].flight
    assert one is not None and one.dump is not None and one.dump.groups[0].launched == 25  # it never launched #26
    proc.procs[510].state = "Z"  # rank 0 ended: /proc no longer leads to its files, its last reading stays
    proc.write()
    clock.now += READ_EVERY_S
    zero = probe.read(now=4.0).ranks[0]
    assert zero.flight is not None and zero.flight.dump is not None and zero.flight.dump.groups[0].launched == 26
    probe.close()
