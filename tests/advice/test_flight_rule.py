"""flight-recorder-off: one info finding for a GPU job whose ranks run with PyTorch's Flight Recorder off, with the
variables that turn it on and what it costs; nothing for a CPU job or one whose recorder is on or unknown."""

from __future__ import annotations

from msgspec.structs import replace

from hwtop.model.flight import FlightRank
from hwtop.model.job import RankFigures
from tests.advice.test_job_rules import job, proc
from tests.advice_timeline import Timeline, find, ids, run


def gpu_job(*flights: FlightRank | None, gpus: bool = True):
    processes = [replace(proc(4100 + r, f"rank {r}"), gpus=((r, 1 << 30),) if gpus else ())
                 for r in range(len(flights))]
    ranks = tuple(RankFigures(r, "node-0", pid=4100 + r, flight=f) for r, f in enumerate(flights))
    return job(*processes, ranks=ranks)


def test_a_gpu_job_with_the_recorder_off_is_told_once_how_to_turn_it_on():
    off = gpu_job(FlightRank(buffer=0), FlightRank(torch_version="2.4.1"), FlightRank(buffer=2000))
    findings = run([Timeline().tick(job=off) for _ in range(3)])[-1]
    finding = find(findings, "flight-recorder-off")
    assert [f.id for f in findings].count("flight-recorder-off") == 1 and finding.severity == "info"
    assert finding.evidence == ("rank 0 (pid 4100): its buffer set to 0",
                                "rank 1 (pid 4101): torch 2.4.1, which records nothing unless its buffer is set")
    assert finding.fix[0].startswith("export TORCH_FR_BUFFER_SIZE=2000") and "#142260" in finding.fix[0]
    assert finding.pids == (4100, 4101)


def test_on_unknown_or_on_a_cpu_job_nothing_is_said():
    for quiet in (gpu_job(FlightRank(), FlightRank(torch_version="2.13.0")),
                  gpu_job(FlightRank(buffer=0), FlightRank(buffer=0), gpus=False), gpu_job(None, None)):
        assert "flight-recorder-off" not in ids(run([Timeline().tick(job=quiet) for _ in range(3)])[-1])
