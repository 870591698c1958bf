"""The window's look-ups that rules repeat: recent() from the newest back, answers kept per immutable subject."""

from __future__ import annotations

import msgspec
import pytest

from hwtop.advice.last_answer import KeptAnswers
from hwtop.advice.window import Window, compute_pids
from hwtop.model.snapshot import GpuProcess, GpuSnapshot, Snapshot
from tests.factories import host_snapshot


def _snapshot(t: float) -> Snapshot:
    return msgspec.structs.replace(host_snapshot(), time=t)


def test_recent_is_what_a_filter_of_the_window_gives() -> None:
    times = [0.0, 0.5, 1.0, 1.0, 3.0, 7.5, 8.0, 8.0]
    window = Window(tuple(_snapshot(t) for t in times))
    for seconds in (0.0, 0.4, 0.5, 1.0, 4.5, 5.0, 7.9, 8.0, 100.0):
        cutoff = times[-1] - seconds
        expected = tuple(s for s in window.snapshots if s.time >= cutoff)
        got = window.recent(seconds)
        assert got == expected and all(a is b for a, b in zip(got, expected, strict=True))
    alone = Window((_snapshot(5.0),))
    assert alone.recent(0.0) == alone.snapshots


def test_kept_answers_are_per_subject_and_bounded() -> None:
    asked: list[object] = []
    kept: KeptAnswers[tuple[int, ...], int] = KeptAnswers(size=2)

    def work(subject: tuple[int, ...]) -> int:
        asked.append(subject)
        return sum(subject)

    a, b, c = (1, 2), (3, 4), (5, 6)
    assert [kept.ask(a, work), kept.ask(a, work), kept.ask(b, work), kept.ask(a, work)] == [3, 3, 7, 3]
    assert asked == [a, b]
    assert kept.ask(c, work) == 11 and kept.ask(b, work) == 7  # past the bound it let the oldest go (a)
    assert kept.ask(a, work) == 3
    assert asked == [a, b, c, a]


def test_compute_pids_of_a_gpu_and_of_an_equal_new_one() -> None:
    processes = (GpuProcess(7, "compute", None), GpuProcess(8, "graphics", None),
                 GpuProcess(9, "compute", None, visible=False))
    gpu = GpuSnapshot(0, None, None, None, processes=processes)
    assert compute_pids(gpu) == (7,) and compute_pids(gpu) == (7,)
    changed = msgspec.structs.replace(gpu, processes=(*processes, GpuProcess(10, "compute", None)))
    assert compute_pids(changed) == (7, 10)


def test_gpu_numa_node_reads_each_topology_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from hwtop.advice.window import gpu_numa_node
    from hwtop.model.snapshot import Topology
    from tests.factories import with_demo_topology

    made: list[object] = []
    real = Topology.gpu_numa_nodes

    def counted(self: Topology) -> dict[int, int]:
        made.append(self)
        return real(self)

    monkeypatch.setattr(Topology, "gpu_numa_nodes", counted)
    snapshot = with_demo_topology([host_snapshot()], "dgx-a100")[0]
    assert snapshot.topology is not None
    nodes = [gpu_numa_node(snapshot, index) for index in range(8)] + [gpu_numa_node(snapshot, 99)]
    assert nodes == [*[real(snapshot.topology).get(i) for i in range(8)], None] and None not in nodes[:8]
    assert made == [snapshot.topology]
    assert gpu_numa_node(msgspec.structs.replace(snapshot, topology=None), 0) is None
